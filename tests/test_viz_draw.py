"""Figures: produced for every rank, expanded and elided tensors; nothing leaks."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import matplotlib
import numpy as np
import pytest
import torch
from matplotlib.figure import Figure

from tensorcourse import viz

matplotlib.use("Agg")


def texts_of(fig: Figure) -> str:
    """All text drawn in a figure (it is drawn as outlines, so read the record of it)."""
    assert isinstance(fig, viz.VizFigure)
    return fig.text_content


@pytest.fixture(autouse=True)
def no_pyplot_figures() -> Iterator[None]:
    import matplotlib.pyplot as plt

    yield
    assert plt.get_fignums() == [], "a visualizer registered a pyplot figure"


def check_and_close(fig: Figure) -> None:
    """The figure renders headless; then close it (clear its artists)."""
    assert isinstance(fig, Figure)
    fig.canvas.draw()
    fig.clear()


def test_figures_are_freed_once_dropped() -> None:
    """Nothing global (no pyplot registry, no cache) keeps a figure alive."""
    def make() -> tuple[weakref.ref, weakref.ref]:
        fig = viz.draw_layout(torch.arange(6).reshape(2, 3), base=torch.arange(6))
        fig.canvas.draw()
        fig._repr_png_()
        other = viz.draw_broadcast((3, 1), (4,))
        other.canvas.draw()
        return weakref.ref(fig), weakref.ref(other)

    refs = make()
    gc.collect()
    assert all(ref() is None for ref in refs)


@pytest.mark.parametrize("t", [
    torch.tensor(3.5),
    torch.arange(10)[2::3],
    torch.arange(24).reshape(4, 6).t(),
    torch.arange(60.0).reshape(3, 4, 5).transpose(0, 2),
    torch.arange(120).reshape(2, 3, 4, 5)[:, 1:, ::2],
    torch.arange(720).reshape(2, 3, 4, 5, 6),
], ids=["0d", "1d", "2d", "3d", "4d", "5d"])
def test_every_rank_draws(t: torch.Tensor) -> None:
    fig = viz.draw_layout(t)
    text = texts_of(fig)
    assert f"shape {tuple(t.shape)}" in text and f"stride {tuple(t.stride())}" in text
    assert f"offset {t.storage_offset()}" in text
    assert f"contiguous: {'yes' if t.is_contiguous() else 'no'}" in text
    check_and_close(fig)


def test_expanded_is_marked_never_allocated() -> None:
    fig = viz.draw_layout(torch.arange(3).expand(4, 3))
    text = texts_of(fig)
    assert "stride 0" in text and "never allocated" in text and "×4" in text
    check_and_close(fig)


def test_large_tensor_is_summarised_not_refused() -> None:
    big = torch.arange(1_000_000.0).reshape(1000, 1000)[::3, 5:]
    fig = viz.draw_layout(big, max_elements=6)
    text = texts_of(fig)
    assert "⋯" in text and "⋮" in text and "…" in text
    # At most 6 drawn cells per dim: 36 cell labels, plus the storage strip.
    assert fig.stats["logical_cells"] == 36  # type: ignore[attr-defined]
    check_and_close(fig)


def test_base_shared_and_not_shared() -> None:
    x = torch.arange(24).reshape(4, 6)
    shared = viz.draw_layout(x[1:, ::2], base=x)
    assert "shares storage with base" in texts_of(shared)
    assert "reads 9 of its 24 elements" in texts_of(shared)
    check_and_close(shared)
    for copy in (x[[0, 2]], x.t().contiguous(), x.t().reshape(24)):
        fig = viz.draw_layout(copy, base=x)
        assert "does NOT share storage" in texts_of(fig)
        check_and_close(fig)


def test_labels_highlight_and_title() -> None:
    x = torch.arange(24.0).reshape(4, 6)
    fig = viz.draw_layout(x[:, 2:], title="x[:, 2:]", label="both", highlight=(1, 3))
    text = texts_of(fig)
    assert "x[:, 2:]" in text and "2 + 1·6 + 3·1 = 11" in text and "@11" in text
    check_and_close(fig)
    fig = viz.draw_layout(torch.tensor([True, False]), label="value")
    assert "T" in texts_of(fig)
    check_and_close(fig)
    meta = viz.draw_layout(torch.empty(2, 3, device="meta"), label="value")  # falls back to index
    check_and_close(meta)


def test_png_repr_without_any_backend_setup() -> None:
    fig = viz.draw_layout(torch.arange(6).reshape(2, 3))
    png = fig._repr_png_()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    check_and_close(fig)


def test_draw_broadcast_kinds() -> None:
    fig = viz.draw_broadcast((3, 1), (4,))
    text = texts_of(fig)
    assert "(3, 4)" in text and "stretched from 1" in text and "not allocated" in text
    assert fig.stats["hatched"] == 9 + 8  # type: ignore[attr-defined]  # a: 3 of 4 cols, b: 2 of 3 rows
    check_and_close(fig)
    fig = viz.draw_broadcast((2, 1, 4), (3, 1), (4,), dtype="int8")
    check_and_close(fig)
    bad = viz.draw_broadcast((2, 3), (4, 3))
    with pytest.raises(RuntimeError) as info:
        torch.broadcast_shapes((2, 3), (4, 3))
    assert "cannot broadcast" in texts_of(bad)
    assert " ".join(str(info.value).split()) in " ".join(texts_of(bad).split())
    check_and_close(bad)
    empty = viz.draw_broadcast((0, 3), (1, 3))
    assert "0 elements" in texts_of(empty)
    check_and_close(empty)


@pytest.mark.parametrize("bad", [[[1, 2], [3, 4]], np.ones((2, 2)), None])
def test_draw_layout_wrong_type(bad: object) -> None:
    with pytest.raises(TypeError, match="pass a torch.Tensor, e.g. torch.tensor"):
        viz.draw_layout(bad)  # type: ignore[arg-type]


@pytest.mark.filterwarnings("ignore:Sparse CSR tensor support is in beta")
def test_draw_layout_bad_values() -> None:
    with pytest.raises(ValueError, match="0 elements"):
        viz.draw_layout(torch.empty(0, 3))
    with pytest.raises(ValueError, match="to_dense"):
        viz.draw_layout(torch.eye(3).to_sparse())
    with pytest.raises(ValueError, match="to_dense"):
        viz.draw_layout(torch.eye(3).to_sparse_csr())
    with pytest.raises(ValueError, match="label"):
        viz.draw_layout(torch.ones(2), label="colour")
    with pytest.raises(ValueError, match="max_elements"):
        viz.draw_layout(torch.ones(2), max_elements=2)
    with pytest.raises(IndexError, match="out of range"):
        viz.draw_layout(torch.ones(2, 2), highlight=(2, 0))
    with pytest.raises(TypeError, match="base"):
        viz.draw_layout(torch.ones(2), base=[1, 2])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="2 or 3 shapes"):
        viz.draw_broadcast((2,))
