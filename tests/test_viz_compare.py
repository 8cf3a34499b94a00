"""compare_layouts / layout_diff: the verdict agrees with torch, the figure shows both layouts."""

from __future__ import annotations

import random
from collections.abc import Iterator

import matplotlib
import numpy as np
import pytest
import torch

from tensorcourse import viz

matplotlib.use("Agg")


@pytest.fixture(autouse=True)
def no_pyplot_figures() -> Iterator[None]:
    import matplotlib.pyplot as plt

    yield
    assert plt.get_fignums() == [], "compare_layouts registered a pyplot figure"


BASE = torch.arange(16.0)
X = BASE[3:13]  # a view with a storage offset: the case learners get wrong


def test_same_layout_matches() -> None:
    mine = X.as_strided((4, 3), (2, 1), 3)
    fig = viz.compare_layouts(mine, X.unfold(0, 3, 2), title="windows")
    assert isinstance(fig, viz.LayoutComparison) and isinstance(fig, viz.VizFigure)
    assert fig.matches and fig.diff.problems == () and fig.diff.n_mismatched == 0
    assert fig.verdict.startswith("same layout")
    text = fig.text_content
    assert "windows" in text and "✓ same layout" in text
    assert "yours" in text and "expected" in text and "read by yours" in text
    assert fig.stats["mismatched_cells_drawn"] == 0
    assert fig._repr_png_()[:8] == b"\x89PNG\r\n\x1a\n"


def test_wrong_offset_is_explained_and_outlined() -> None:
    mine = X.as_strided((4, 3), (2, 1), 0)  # forgot X.storage_offset()
    fig = viz.compare_layouts(mine, X.unfold(0, 3, 2))
    assert not fig.matches
    assert "storage offset 0 (expected 3)" in fig.verdict
    assert fig.diff.n_mismatched == 12 and fig.diff.first_mismatch == (0, 0)
    assert fig.stats["mismatched_cells_drawn"] == 12
    assert fig.stats["rects"] > 24  # both grids and the storage strips
    assert "✗ layouts differ" in fig.text_content and "Red outline" in fig.text_content


def test_wrong_stride_counts_the_cells_that_differ() -> None:
    x = BASE[::2]  # stride 2
    mine = x.as_strided((6, 3), (1, 1), 0)  # assumed stride 1
    expected = x.unfold(0, 3, 1)
    diff = viz.layout_diff(mine, expected)
    assert not diff.matches and "stride of dim 0 is 1 (expected 2)" in str(diff)
    wrong = (viz.storage_index_map(mine) != viz.storage_index_map(expected)).sum().item()
    assert diff.n_mismatched == wrong == 17  # only element (0, 0) is right


def test_copy_is_not_the_same_layout_unless_storage_is_not_required() -> None:
    expected = X.unfold(0, 3, 1)
    copy = torch.stack([X[i:i + 3] for i in range(8)])
    assert torch.equal(copy, expected)  # right values...
    diff = viz.layout_diff(copy, expected)
    assert not diff.matches and "copy" in diff.verdict  # ...but not a view
    assert len(diff.problems) == 1  # storage indices of two memories are not compared
    fig = viz.compare_layouts(copy, expected)
    assert "two different storages" in fig.text_content and "its own storage" in fig.text_content
    assert fig.stats["mismatched_cells_drawn"] == 0
    # Without the storage requirement the pattern is compared: offsets differ (0 vs 3).
    loose = viz.layout_diff(copy, expected, same_storage=False)
    assert not loose.matches and "storage offset 0 (expected 3)" in str(loose)
    same_pattern = torch.arange(10.0).unfold(0, 3, 1)
    assert viz.layout_diff(same_pattern, BASE[:10].unfold(0, 3, 1), same_storage=False).matches


def test_shape_and_dtype_problems() -> None:
    diff = viz.layout_diff(X.unfold(0, 3, 2), X.unfold(0, 3, 1))
    assert not diff.matches and diff.verdict == "layouts differ: shape (4, 3) (expected (8, 3))"
    fig = viz.compare_layouts(X.unfold(0, 3, 2), X.unfold(0, 3, 1))
    assert fig.stats["mismatched_cells_drawn"] == 0  # no cell-by-cell outline across shapes
    ints = torch.arange(16, dtype=torch.int32)
    diff = viz.layout_diff(ints[3:13], X, same_storage=False)
    assert not diff.matches and diff.verdict == \
        "layouts differ: dtype torch.int32 (expected torch.float32)"
    # The same bytes read as float32 through the same storage: same layout.
    assert viz.layout_diff(ints.view(torch.float32)[3:13], ints.view(torch.float32)[3:13]).matches


def test_size_one_dims_strides_do_not_count() -> None:
    a = BASE.view(16, 1)
    b = BASE.as_strided((16, 1), (1, 7))
    diff = viz.layout_diff(b, a)
    assert diff.matches and "size-1 dims" in diff.notes[0]
    assert "note:" in str(diff)


def test_overlap_and_empty_and_0d() -> None:
    overlap = BASE.as_strided((3, 2), (1, 1))
    fig = viz.compare_layouts(overlap, BASE.unfold(0, 2, 1)[:3])
    assert fig.matches and "×2" in fig.text_content and "overlap" in fig.text_content
    empty = BASE[:0]
    fig = viz.compare_layouts(empty, BASE[5:5])
    assert fig.matches and "(0 elements)" in fig.text_content
    fig = viz.compare_layouts(BASE[4], BASE[5])
    assert not fig.matches and "storage offset 4 (expected 5)" in fig.verdict
    fig.canvas.draw()


def test_big_tensors_are_summarised() -> None:
    big = torch.arange(300_000.0)
    fig = viz.compare_layouts(big.unfold(0, 3, 1), big.unfold(0, 3, 2), max_elements=6)
    assert not fig.matches and "…" in fig.text_content
    fig = viz.compare_layouts(big.as_strided((299_996, 3), (1, 2)), big.unfold(0, 3, 1)[:-2])
    assert not fig.matches and fig.diff.n_mismatched == 0  # too many to list, still wrong
    assert "stride of dim 1 is 2 (expected 1)" in fig.verdict


def test_verdict_agrees_with_torch_on_random_views() -> None:
    """matches <=> same shape and dtype, one storage, and torch reads the same elements."""
    rng = random.Random(0)
    base = torch.arange(60.0)
    for _ in range(300):
        def pick() -> torch.Tensor:
            size = tuple(rng.randint(1, 3) for _ in range(rng.randint(0, 2)))
            stride = tuple(rng.randint(0, 4) for _ in size)
            return base.as_strided(size, stride, rng.randint(0, 5))

        a, b = pick(), pick()
        flat = base.detach()
        same = a.shape == b.shape and torch.equal(
            viz.storage_index_map(a), viz.storage_index_map(b))
        diff = viz.layout_diff(a, b)
        assert diff.matches == same, (a.shape, a.stride(), a.storage_offset(), b.stride(),
                                      b.storage_offset())
        if same:
            assert torch.equal(a, b) and torch.equal(flat[viz.storage_index_map(a)], a)


@pytest.mark.parametrize("bad", [None, [1, 2], np.arange(3)])
def test_not_a_tensor_says_what_to_pass(bad: object) -> None:
    with pytest.raises(TypeError, match="needs a torch.Tensor"):
        viz.compare_layouts(bad, BASE)
    with pytest.raises(TypeError, match="needs a torch.Tensor"):
        viz.layout_diff(BASE, bad)  # type: ignore[arg-type]


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="max_elements"):
        viz.compare_layouts(BASE, BASE, max_elements=2)
    with pytest.raises(ValueError, match="to_dense"):
        viz.layout_diff(torch.eye(3).to_sparse(), torch.eye(3))


def test_lazy_export() -> None:
    assert "compare_layouts" in dir(viz) and "layout_diff" in viz.__all__
