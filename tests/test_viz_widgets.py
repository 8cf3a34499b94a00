"""The explorers, driven from Python: set a control's value, check state and output."""

from __future__ import annotations

import ipywidgets as widgets
import pytest
import torch
from matplotlib.figure import Figure

from tensorcourse import viz


@pytest.fixture
def ex() -> viz.LayoutExplorer:
    return viz.layout_explorer()


def test_starts_on_arange_transpose(ex: viz.LayoutExplorer) -> None:
    assert isinstance(ex, widgets.VBox)
    assert torch.equal(ex.current, torch.arange(24).reshape(4, 6))
    assert ex.op.value == "transpose" and ex.error is None
    assert ex.state["shape"] == (6, 4) and ex.state["stride"] == (1, 6)
    assert ex.state["shares_storage_with_input"] is True
    assert isinstance(ex.last_figure, Figure)
    assert "t.transpose(0, 1)" in ex.summary.value
    # Only the chosen operation's controls are shown.
    assert list(ex.params_box.children) == list(ex.controls["transpose"].values())


def test_changing_a_control_recomputes_and_redraws(ex: viz.LayoutExplorer) -> None:
    renders, fig = ex.renders, ex.last_figure
    ex.op.value = "slice"
    assert ex.params_box.children == tuple(ex.controls["slice"].values())
    assert ex.renders == renders + 1 and ex.last_figure is not fig
    ex.controls["slice"]["dim"].value = 0
    ex.controls["slice"]["dim"].value = 1
    ex.controls["slice"]["start"].value = 1
    ex.controls["slice"]["step"].value = 3
    assert ex.state["ok"] and ex.state["shape"] == (4, 2)
    assert ex.state["stride"] == (6, 3) and ex.state["offset"] == 1
    assert "t[:, 1:6:3]" in ex.summary.value
    assert "t[:, 1:6:3]" in ex.last_figure.text_content
    assert ex.renders == renders + 5  # one redraw per change


def test_picking_an_element_shows_the_address_arithmetic(ex: viz.LayoutExplorer) -> None:
    ex.op.value = "narrow"
    ex.controls["narrow"]["dim"].value = 1
    ex.controls["narrow"]["start"].value = 2
    ex.controls["narrow"]["length"].value = 4
    ex.index.value = "1, 3"
    assert ex.formula == "2 + 1·6 + 3·1 = 11"
    assert "2 + 1·6 + 3·1 = 11" in ex.summary.value
    assert "2 + 1·6 + 3·1 = 11" in ex.last_figure.text_content
    assert ex.last_result.result[1, 3].item() == 11
    ex.index.value = "9, 9"
    assert "out of range" in ex.formula and "out of range" in ex.summary.value
    ex.index.value = "a"
    assert "whole numbers" in ex.formula


def test_index_follows_rank_changes(ex: viz.LayoutExplorer) -> None:
    ex.index.value = "3, 5"
    ex.op.value = "select"
    assert ex.state["shape"] == (6,) and ex.index.value == "0"
    ex.op.value = "unfold"
    assert ex.index.value == "0, 0, 0"


def test_view_failure_shows_reason_and_reshape_copy(ex: viz.LayoutExplorer) -> None:
    ex.apply()  # t := t.transpose(0, 1)
    assert ex.expr == "t.transpose(0, 1)" and ex.current.shape == (6, 4)
    ex.op.value = "view"
    ex.controls["view"]["shape"].value = "24"
    assert not ex.state["ok"]
    assert "view size is not compatible" in ex.summary.value
    assert "back to back" in ex.summary.value
    assert ex.last_result.reshape_shares_storage is False
    assert "does NOT share storage" in ex.last_figure.text_content
    ex.apply_button.click()  # a failed result cannot become the input
    assert ex.expr == "t.transpose(0, 1)"


def test_chain_apply_and_reset(ex: viz.LayoutExplorer) -> None:
    ex.apply_button.click()
    ex.op.value = "contiguous"
    assert ex.state["shares_storage_with_input"] is False
    ex.apply_button.click()
    assert ex.expr == "t.transpose(0, 1).contiguous()" and ex.current.is_contiguous()
    ex.op.value = "view"
    assert ex.state["ok"] and ex.state["shape"] == (24,)
    ex.reset_button.click()
    assert ex.expr == "t" and ex.history == [] and ex.current.shape == (4, 6)


def test_as_strided_out_of_bounds_is_explained(ex: viz.LayoutExplorer) -> None:
    ex.op.value = "as_strided"
    ctrls = ex.controls["as_strided"]
    assert ctrls["size"].value == "4, 6" and ctrls["stride"].value == "6, 1"
    ctrls["storage_offset"].value = 5
    assert not ex.state["ok"]
    assert "out of bounds for storage" in ex.summary.value
    assert "5 + 3·6 + 5·1 = 28" in ex.summary.value
    assert ex.error is None and isinstance(ex.last_figure, Figure)  # still shows the input


def test_expand_and_copy_ops(ex: viz.LayoutExplorer) -> None:
    ex.op.value = "expand"
    assert ex.state["stride"] == (0, 6, 1)
    ex.op.value = "index_select"
    assert ex.state["shares_storage_with_input"] is False
    assert "shares storage with the input: no" in ex.summary.value


def test_custom_start_and_bad_start() -> None:
    ex = viz.layout_explorer(torch.randn(2, 3, 4), max_elements=4)
    assert ex.state["input_shape"] == (2, 3, 4) and ex.state["ok"]
    with pytest.raises(TypeError, match="torch.tensor"):
        viz.layout_explorer([[1, 2]])  # type: ignore[arg-type]


def test_broadcast_explorer() -> None:
    bx = viz.broadcast_explorer()
    assert isinstance(bx, widgets.VBox)
    assert bx.state["ok"] and bx.state["result_shape"] == (3, 4)
    assert isinstance(bx.last_figure, Figure)
    renders = bx.renders
    bx.shape_b.value = "2, 4"
    with pytest.raises(RuntimeError) as info:
        torch.broadcast_shapes((3, 1), (2, 4))
    assert not bx.state["ok"] and bx.state["error"] == str(info.value)
    assert "incompatible" in bx.summary.value and bx.renders == renders + 1
    bx.shape_c.value = "5, 1, 1"
    bx.shape_b.value = "4"
    assert bx.state["result_shape"] == (5, 3, 4)
    bx.dtype.value = "int8"
    assert bx.last_report.result_bytes == 60
    assert "60 B" in bx.summary.value
    bx.shape_a.value = "3, x"
    assert not bx.state["ok"] and "whole numbers" in bx.summary.value
    assert bx.last_figure is None
    bx.shape_a.value = ""
    assert "type a shape" in bx.summary.value
