"""Text alternatives: every figure states, in words, the facts it draws (alt and describe())."""

from __future__ import annotations

import base64
import html
import re

import pytest
import torch

from tensorcourse import viz


def test_a_transposed_layout_states_its_strides_and_what_each_cell_reads() -> None:
    x = torch.arange(6).reshape(2, 3)
    fig = viz.draw_layout(x.t(), base=x, title="x.t()")
    assert fig.alt.startswith("x.t(): Layout of a tensor of shape (3, 2), stride (1, 3), "
                              "storage offset 0, not contiguous, int64")
    assert "shares storage with base, shape (2, 3)" in fig.alt
    md = fig.describe()
    assert "dim 0: size 3, stride 1" in md and "dim 1: size 2, stride 3" in md
    # The transposed view reads down the columns of x: row 1 of x.t() reads 1 and 4.
    assert "| row 0 | 0 | 3 |" in md and "| row 1 | 1 | 4 |" in md and "| row 2 | 2 | 5 |" in md
    assert "base: shape (2, 3), stride (3, 1)" in md and "| row 1 | 3 | 4 | 5 |" in md
    assert "read by the tensor: storage elements 0..5" in md


def test_a_slice_says_which_storage_elements_it_skips_and_the_picked_address() -> None:
    x = torch.arange(24).reshape(4, 6)
    fig = viz.draw_layout(x[1:, ::2], base=x, highlight=(1, 2))
    assert "stride (6, 2), storage offset 6" in fig.alt
    assert "Element (1, 2) reads storage element 6 + 1·6 + 2·2 = 16" in fig.alt
    md = fig.describe()
    assert "| row 0 | 6 | 8 | 10 |" in md
    assert "not read: 0..6" not in md and "not read: 0..5, 7, 9, 11, 13, 15, 17, 19, 21, 23" in md


def test_expanded_dims_are_named_and_repeats_counted() -> None:
    x = torch.arange(24).reshape(4, 6)
    fig = viz.draw_layout(x[0].expand(3, 6), base=x)
    assert "Dim 0 has stride 0" in fig.alt
    md = fig.describe()
    assert "(expanded: every index along it re-reads the same elements)" in md
    assert "| row 1 | 0 (re-read through stride 0) |" in md
    assert "read by more than one cell: 0 (×3), 1 (×3)" in md


def test_a_copy_is_said_to_be_one_and_values_are_listed_when_drawn() -> None:
    x = torch.arange(6.0).reshape(2, 3)
    fig = viz.draw_layout(x[[0, 1]], base=x, label="both")
    assert "does not share storage with base: it is a copy" in fig.alt
    assert "Each cell shows its value and @ the storage element it reads" in fig.describe()


def test_long_dims_are_elided_in_the_text_as_in_the_drawing() -> None:
    fig = viz.draw_layout(torch.arange(400).reshape(20, 20), max_elements=4)
    md = fig.describe()
    assert "| … |" in md and "| row 19 |" in md and "| row 5 |" not in md


def test_high_rank_and_zero_d_tensors_are_described() -> None:
    fig = viz.draw_layout(torch.arange(24).reshape(2, 3, 4).transpose(0, 2))
    md = fig.describe()
    assert "in slice [0, :, :]" in md and "in slice [3, :, :]" in md
    zero = viz.draw_layout(torch.tensor(3.5))
    assert "shape ()" in zero.alt and "the only element ()" in zero.describe()


def test_broadcasting_says_what_it_stretched_what_repeats_and_what_it_allocates() -> None:
    fig = viz.draw_broadcast((4, 1), (3,))
    assert fig.alt == ("Broadcasting a (4, 1) with b (3,) gives shape (4, 3) (float32): a is "
                       "stretched along dim 1 (stride 0, no new memory); b is stretched along "
                       "dim 0 (stride 0, no new memory). Only the result allocates new "
                       "memory: 48 B.")
    md = fig.describe()
    # a's column 0 is real, its columns 1 and 2 repeat it; b's row 0 is real, rows 1..3 repeat.
    assert "| row 2 | 2 | 2 (repeat) | 2 (repeat) |" in md
    assert "| row 0 | 0 | 1 | 2 |" in md and "| row 3 | 0 (repeat) | 1 (repeat) | 2 (repeat) |" in md
    assert "stride after expand (1, 0)" in md and "allocated 16 B, looks like 48 B" in md
    assert "dim -1: a=1 stretched to 3 (stride 0); b=3 kept" in md


def test_incompatible_shapes_quote_torch() -> None:
    fig = viz.draw_broadcast((2, 3), (4,))
    assert fig.alt.startswith("Cannot broadcast a (2, 3) with b (4,): torch says ")
    assert "incompatible" in fig.describe()


def _graph():
    x = torch.randn(2, 3)
    w = torch.randn(3, 2, requires_grad=True)
    b = torch.zeros(2, requires_grad=True)
    return (x @ w + b).sum(), {"w": w, "b": b}


def test_a_graph_lists_its_nodes_in_backward_order() -> None:
    loss, names = _graph()
    fig = viz.draw_graph(loss, names)
    assert ("backward() runs them in this order: SumBackward0 (makes result); AddBackward0; "
            "AccumulateGrad into b.grad; MmBackward0; AccumulateGrad into w.grad.") in fig.alt
    assert "Leaves: w (3, 2), b (2,)" in fig.alt
    md = fig.describe()
    assert re.search(r"^2\. AddBackward0; receives a gradient of shape \(2, 2\); sends "
                     r"gradients to: MmBackward0, AccumulateGrad into b\.grad$", md, re.M)
    assert "saved self: (2, 3) float32" in md and "```text\nresult ()" in md


def test_a_stepped_graph_says_what_is_done_and_what_runs() -> None:
    loss, names = _graph()
    fig = viz.draw_graph(loss, names, step=2)
    assert fig.alt.startswith("Step 2 of 5: AccumulateGrad into b.grad runs now; 2 done before it.")
    md = fig.describe()
    assert "1. [done] SumBackward0" in md and "3. [running now] AccumulateGrad" in md
    assert "4. [waiting] MmBackward0" in md
    assert "backward() is done" in viz.draw_graph(loss, names, step=5).alt
    no_graph = viz.draw_graph(torch.ones(2))
    assert "no graph" in no_graph.alt and "does not require grad" in no_graph.alt


def test_a_comparison_states_the_verdict_and_marks_the_wrong_cells() -> None:
    x = torch.arange(12)
    fig = viz.compare_layouts(x.as_strided((4, 3), (3, 1)), x.unfold(0, 3, 1)[:4])
    assert fig.alt.startswith("Layouts differ: stride of dim 0 is 3 (expected 1)")
    md = fig.describe()
    assert "✗ layouts differ" in md
    assert "| row 1 | 3 (wrong: expected reads 1) |" in md
    same = viz.compare_layouts(x.unfold(0, 3, 1), x.unfold(0, 3, 1))
    assert same.alt.startswith("Same layout") and "✓ same layout" in same.describe()


def test_jupyter_gets_the_image_with_its_alt_and_the_description_under_it() -> None:
    fig = viz.draw_layout(torch.arange(6).reshape(2, 3).t())
    data, meta = fig._repr_mimebundle_()
    png = base64.b64decode(data["image/png"])
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and png == fig._repr_png_()
    page = data["text/html"]
    assert f'alt="{html.escape(fig.alt)}"' in page and "data:image/png;base64," in page
    assert "<details" in page and "<summary>Text description of the figure</summary>" in page
    assert '<th scope="col">' in page  # the cells as a real table
    assert data["text/markdown"] == fig.describe() and data["text/plain"].startswith(fig.alt)
    assert meta["tensorcourse"]["alt"] == fig.alt
    assert fig.describe("html") == meta["tensorcourse"]["description_html"]
    with pytest.raises(ValueError, match="format must be"):
        fig.describe("pdf")


def test_explorers_update_the_text_with_the_figure() -> None:
    loss, names = _graph()
    g = viz.graph_explorer(loss, names)
    before = g.state["alt"]
    g.step.value = 1
    assert g.state["alt"] != before and g.state["alt"].startswith("Step 1 of 5")
    assert g.state["alt"] == g.last_figure.alt

    ex = viz.layout_explorer()
    assert ex.state["alt"].startswith("t.transpose(0, 1): Layout of a tensor of shape (6, 4), "
                                      "stride (1, 6)")
    ex.op.value = "contiguous"
    assert ex.state["alt"].startswith("t.contiguous(): Layout of a tensor of shape (4, 6), "
                                      "stride (6, 1)")

    b = viz.broadcast_explorer("3, 1", "4")
    assert "gives shape (3, 4)" in b.state["alt"]
    b.shape_b.value = "2, 1, 4"
    assert "gives shape (2, 3, 4)" in b.state["alt"]
