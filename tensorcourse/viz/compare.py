"""Put a learner's layout next to the expected one, and say where they differ.

Exercises that ask for a *view* (sliding windows with ``as_strided``, a diagonal,
every other column...) are graded on the layout, not only on the values: which
storage element each logical element reads. :func:`layout_diff` decides that
from the real tensors' metadata; :func:`compare_layouts` draws both side by side
(same drawing language as :func:`~tensorcourse.viz.draw_layout`: a cell's colour
is the storage element it reads) under a verdict line, outlines in red the cells
that read the wrong element, and shows which storage elements each one reads.

A test cell uses it so that a wrong answer is *seen*, not only reported::

    fig = tc.viz.compare_layouts(sliding_windows(x, 3), x.unfold(0, 3, 1), title="windows")
    if not fig.matches:
        display(fig)
    assert fig.matches, fig.verdict
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from ._inputs import require_tensor, storage_numel
from .describe import Doc, cells_tables
from .draw import (
    FS_SMALL,
    FS_TEXT,
    FS_TITLE,
    GREY_SPARE,
    INK,
    MARGIN_IN,
    MAX_WIDTH_IN,
    MUTED,
    RED,
    VizFigure,
    _cell_size,
    _check_cap,
    _colours,
    _dims_line,
    _flow,
    _grid,
    _label_fontsize,
    _Panel,
    _Scene,
    _strip_slots,
)
from .layout import describe_layout, shares_storage, storage_index_map

__all__ = ["LayoutComparison", "LayoutDiff", "compare_layouts", "layout_diff"]

GREEN = "#1b5e20"
MAX_LISTED = 200_000  # above this many elements, mismatching cells are found among drawn ones only


@dataclass(frozen=True)
class LayoutDiff:
    """How a tensor's layout (``yours``) compares with the expected one.

    ``matches`` is True when both have the same dtype and shape, read the same
    storage (unless that was not required) and every logical element reads the
    same storage element: the same storage-index map. Strides of size-1 dims
    do not count (nothing ever steps along them); such differences are listed
    in ``notes``. ``problems`` says in words why they differ; ``n_mismatched``
    counts the logical elements that read a different storage element (when
    the shapes agree and both read one storage; not counted, so 0, above
    200 000 elements) and ``first_mismatch`` is the first of them.
    """

    matches: bool
    problems: tuple[str, ...]
    notes: tuple[str, ...]
    n_mismatched: int
    first_mismatch: tuple[int, ...] | None

    @property
    def verdict(self) -> str:
        """One line: ``"same layout"`` or ``"layouts differ: <first problem>"``."""
        if self.matches:
            return "same layout: every element reads the same storage element"
        return "layouts differ: " + self.problems[0]

    def __str__(self) -> str:
        return "\n".join([self.verdict, *(f"  - {p}" for p in self.problems[1:]),
                          *(f"  note: {n}" for n in self.notes)])


def _facts_line(t: torch.Tensor) -> str:
    return (f"shape {tuple(t.shape)}, stride {tuple(t.stride())}, "
            f"offset {t.storage_offset()}, {str(t.dtype).replace('torch.', '')}")


def layout_diff(yours: Any, expected: torch.Tensor, *, same_storage: bool = True) -> LayoutDiff:
    """Compare the layout of ``yours`` with ``expected`` (metadata only: cheap for any size).

    ``same_storage``: also require that both read the same storage (what an
    exercise asking for a *view* of some tensor wants; a copy with the right
    values is then wrong). Raises ``TypeError`` if either is not a
    ``torch.Tensor`` and ``ValueError`` if either is not strided (sparse, nested).
    """
    yours = require_tensor(yours, "layout_diff", allow_empty=True)
    expected = require_tensor(expected, "layout_diff (expected)", allow_empty=True)
    problems: list[str] = []
    notes: list[str] = []
    if yours.dtype != expected.dtype:
        problems.append(f"dtype {yours.dtype} (expected {expected.dtype})")
    copied = same_storage and not shares_storage(yours, expected)
    if copied:
        # Storage indices into two different memories cannot be compared: this is the problem.
        problems.append("yours reads a different storage than expected: it is a copy (or was "
                        "built from another tensor), not a view of the same memory")
    n_bad, first = 0, None
    if tuple(yours.shape) != tuple(expected.shape):
        problems.insert(0, f"shape {tuple(yours.shape)} (expected {tuple(expected.shape)})")
    elif yours.numel() and not copied:
        # Two layouts of one shape read the same elements iff element [0, ...] is at the
        # same offset and one step along every dim of size > 1 moves as far.
        bad_dims = [k for k, n in enumerate(yours.shape)
                    if n > 1 and yours.stride(k) != expected.stride(k)]
        if bad_dims:
            problems.append("stride " + ", ".join(
                f"of dim {k} is {yours.stride(k)} (expected {expected.stride(k)})" for k in bad_dims))
        if yours.storage_offset() != expected.storage_offset():
            problems.append(f"storage offset {yours.storage_offset()} (expected "
                            f"{expected.storage_offset()}): element {(0,) * yours.dim()} reads "
                            "a different storage element")
        if bad_dims or yours.storage_offset() != expected.storage_offset():
            if yours.numel() <= MAX_LISTED:
                wrong = (storage_index_map(yours) != storage_index_map(expected)).nonzero()
                n_bad = len(wrong)
                first = tuple(int(i) for i in wrong[0].tolist()) if n_bad else None
            else:  # too big to list: say how many at least differ through the first bad dim
                n_bad = -1
        if yours.stride() != expected.stride() and not bad_dims:
            notes.append(f"strides {tuple(yours.stride())} vs {tuple(expected.stride())} differ "
                         "only on size-1 dims, which are never stepped along: same layout")
    if n_bad > 0:
        problems.append(f"{n_bad} of {yours.numel()} elements read a different storage "
                        f"element; the first is {first}")
    return LayoutDiff(matches=not problems, problems=tuple(problems), notes=tuple(notes),
                      n_mismatched=max(n_bad, 0), first_mismatch=first)


class LayoutComparison(VizFigure):
    """The figure :func:`compare_layouts` returns, with the :class:`LayoutDiff` it shows.

    ``matches`` and ``verdict`` come from ``diff``, so a test cell can decide
    whether to display the figure and what to assert from the same object.
    """

    diff: LayoutDiff

    @property
    def matches(self) -> bool:
        return self.diff.matches

    @property
    def verdict(self) -> str:
        return str(self.diff)


def _panel(t: torch.Tensor, head: str, cap: int, lo: int, hi: int) -> tuple[_Panel, np.ndarray]:
    """The logical view of ``t`` as a panel, and the storage index of each drawn cell."""
    facts = describe_layout(t)
    header = [(head, {"fontsize": FS_TEXT, "weight": "bold"}),
              (facts.headline(), {"fontsize": FS_SMALL, "family": "monospace"}),
              (_dims_line(facts.shape, facts.stride), {"fontsize": FS_SMALL, "color": MUTED})]
    if t.numel() == 0:
        return _Panel(header, None, np.zeros((0, 4)), np.zeros(0, bool), [],
                      empty="(0 elements)"), np.zeros(0, dtype=np.int64)
    grid = _grid(facts.shape, cap)
    sidx = facts.offset + grid.index @ np.asarray(facts.stride, dtype=np.int64)
    return _Panel(header, grid, _colours(sidx, lo, hi), np.zeros(len(sidx), dtype=bool),
                  [str(int(s)) for s in sidx]), sidx


def _read_counts(t: torch.Tensor, drawn: np.ndarray) -> dict[int, int]:
    if t.numel() == 0:
        return {}
    source = storage_index_map(t).reshape(-1).numpy() if t.numel() <= MAX_LISTED else drawn
    pos, counts = np.unique(source, return_counts=True)
    return dict(zip(pos.tolist(), counts.tolist()))


def _strip(scene: _Scene, x: float, y: float, head: str, slots: list[int | None],
           reads: dict[int, int], colour_of: dict[int, np.ndarray], cell: float) -> float:
    """One storage strip: the elements ``reads`` counts are coloured, the rest grey."""
    y = scene.lines(x, y, [(head, {"fontsize": FS_SMALL, "weight": "bold"})]) + 0.04
    row_len = max(8, int(MAX_WIDTH_IN / cell) - 1)
    fs = _label_fontsize([str(s) for s in slots if s is not None] or ["0"], cell)
    for pos, s in enumerate(slots):
        r, c = divmod(pos, row_len)
        cx, cy = x + c * cell, y + r * (cell + 0.08)
        if s is None:
            scene.label(cx + cell / 2, cy + cell / 2, "…", FS_TEXT + 2, MUTED)
            continue
        hit = s in reads
        scene.rects.append((cx + cell * 0.04, cy + cell * 0.04, cell * 0.92, cell * 0.92))
        scene.faces.append(np.asarray(colour_of[s] if hit else GREY_SPARE))
        if not hit:
            scene.dashed.append(scene.rects[-1])
        scene.label(cx + cell / 2, cy + cell / 2, str(s), fs, INK if hit else "#9a9a9a")
        if reads.get(s, 0) > 1:
            scene.label(cx + cell * 0.93, cy + cell * 0.8, f"×{reads[s]}", 5.5, "#4a148c",
                        "right", bold=True)
    n_rows = max(1, math.ceil(len(slots) / row_len))
    scene.width = max(scene.width, x + min(len(slots), row_len) * cell)
    return y + n_rows * (cell + 0.08) + 0.1


def compare_layouts(
    yours: Any,
    expected: torch.Tensor,
    *,
    title: str | None = None,
    same_storage: bool = True,
    max_elements: int = 10,
) -> LayoutComparison:
    """Draw ``yours`` next to ``expected`` under a verdict line; return the figure.

    Each panel is the logical view, every cell labelled and coloured by the
    storage element it reads (one palette for both, so equal colours mean equal
    elements); cells of ``yours`` that read a different element than the same
    cell of ``expected`` are outlined in red. Under the panels, one storage strip
    per tensor shows which storage elements it reads (``×k``: read k times).
    The verdict and the reasons come from :func:`layout_diff` (same
    ``same_storage`` meaning) and are also on the figure as ``.diff``,
    ``.matches`` and ``.verdict``. The figure shows itself inline in Jupyter.

    Raises ``TypeError`` if ``yours`` or ``expected`` is not a ``torch.Tensor``
    (so a learner's ``None`` fails with a clear message), ``ValueError`` for a
    non-strided tensor or a ``max_elements`` below 3. Tensors with 0 elements
    are allowed (drawn as "(0 elements)").
    """
    diff = layout_diff(yours, expected, same_storage=same_storage)
    cap = _check_cap(max_elements, "compare_layouts")
    shared = shares_storage(yours, expected)

    # One palette over everything either tensor reads, so a colour names a storage element.
    spans = [s for s in (describe_layout(yours).span, describe_layout(expected).span) if s]
    lo = min((s[0] for s in spans), default=0)
    hi = max((s[1] for s in spans), default=0)
    p_yours, s_yours = _panel(yours, "yours", cap, lo, hi)
    p_expected, s_expected = _panel(expected, "expected", cap, lo, hi)
    wrong = np.zeros(len(s_yours), dtype=bool)
    comparable = shared or not same_storage  # indices into two memories do not compare
    if comparable and tuple(yours.shape) == tuple(expected.shape) \
            and len(s_yours) == len(s_expected):
        wrong = s_yours != s_expected  # both grids list the same cells in the same order

    scene = _Scene()
    heading: list[tuple[str, dict[str, Any]]] = []
    if title:
        heading.append((title, {"fontsize": FS_TITLE + 1, "weight": "bold"}))
    mark = "✓ " if diff.matches else "✗ "
    heading.append((mark + diff.verdict, {"fontsize": FS_TITLE, "weight": "bold",
                                          "color": GREEN if diff.matches else RED}))
    heading += [("• " + p, {"fontsize": FS_TEXT, "color": RED}) for p in diff.problems[1:]]
    heading += [("note: " + n, {"fontsize": FS_SMALL, "color": MUTED}) for n in diff.notes]
    y = scene.lines(MARGIN_IN, MARGIN_IN, heading) + 0.12

    widths = sum(p.grid.w for p in (p_yours, p_expected) if p.grid is not None) + 3.0
    cell = _cell_size(widths)
    x_expected = MARGIN_IN + max(p_yours.size(cell)[0], 2.0) + 0.6
    top = y
    corners = p_yours.draw(scene, MARGIN_IN, y, cell)
    for (cx, cy), bad in zip(corners, wrong):
        if bad:  # an outline and a mark: not told by the red alone
            scene.outlines.append((cx, cy, cell, cell))
            scene.label(cx + cell * 0.9, cy + cell * 0.22, "✗", 6.0, RED, "right", bold=True)
    if x_expected + p_expected.size(cell)[0] > MARGIN_IN + MAX_WIDTH_IN:
        y = top + p_yours.size(cell)[1] + 0.3  # no room side by side: stack them
        y = _flow(scene, [p_expected], MARGIN_IN, y, cell) + 0.3
    else:
        p_expected.draw(scene, x_expected, top, cell)
        scene.width = max(scene.width, x_expected + p_expected.size(cell)[0])
        y = top + max(p_yours.size(cell)[1], p_expected.size(cell)[1]) + 0.3

    # Storage strips: one shared list of slots when both read one storage.
    r_yours, r_expected = _read_counts(yours, s_yours), _read_counts(expected, s_expected)
    wanted = np.asarray(sorted(set(r_yours) | set(r_expected)) or [0], dtype=np.int64)
    if shared:
        slots = _strip_slots(storage_numel(expected), wanted)
        real = [s for s in slots if s is not None]
        colour_of = dict(zip(real, _colours(np.asarray(real, dtype=np.int64), lo, hi)))
        n = storage_numel(expected)
        y = scene.lines(MARGIN_IN, y, [(f"their shared storage: {n} elements; coloured = read",
                                        {"fontsize": FS_TEXT, "weight": "bold"})]) + 0.04
        y = _strip(scene, MARGIN_IN, y, "read by yours", slots, r_yours, colour_of, cell)
        y = _strip(scene, MARGIN_IN, y, "read by expected", slots, r_expected, colour_of, cell)
    else:
        y = scene.lines(MARGIN_IN, y, [("two different storages (one of them is a copy)",
                                        {"fontsize": FS_TEXT, "weight": "bold", "color": RED})])
        for t, reads, who in ((yours, r_yours, "yours"), (expected, r_expected, "expected")):
            n = storage_numel(t)
            slots = _strip_slots(n, np.asarray(sorted(reads) or [0], dtype=np.int64))
            real = [s for s in slots if s is not None]
            colour_of = dict(zip(real, _colours(np.asarray(real, dtype=np.int64), lo, hi)))
            y = _strip(scene, MARGIN_IN, y + 0.04, f"{who}: its own storage ({n} elements)", slots,
                       reads, colour_of, cell)

    legend = ["A cell shows (and is coloured by) the storage element it reads; grey with a "
              "dashed border: not read"
              + (": same colour, same element." if shared else
                 " in its own storage (two storages: equal numbers are different memory).")]
    if wrong.any():
        legend.append("Red outline and ✗: this cell of yours reads a different storage element "
                      "than the same cell of expected.")
    if any(c > 1 for c in list(r_yours.values()) + list(r_expected.values())):
        legend.append("×k: this storage element is read by k logical cells (overlap).")
    y = scene.lines(MARGIN_IN, y + 0.05, [("\n".join(legend), {"fontsize": FS_SMALL,
                                                               "color": MUTED})])
    scene.height = y
    fig = scene.render()
    fig.__class__ = LayoutComparison
    fig.diff = diff  # type: ignore[attr-defined]
    fig.stats["mismatched_cells_drawn"] = int(wrong.sum())
    fig.alt, fig.description = _comparison_text(yours, expected, diff, title, shared,
                                                p_yours, p_expected, wrong, s_expected)
    return fig  # type: ignore[return-value]


def _comparison_text(yours: torch.Tensor, expected: torch.Tensor, diff: LayoutDiff,
                     title: str | None, shared: bool, p_yours: _Panel, p_expected: _Panel,
                     wrong: np.ndarray, s_expected: np.ndarray) -> tuple[str, Doc]:
    """The alt text and the full description of a :func:`compare_layouts` figure."""
    verdict = ("Same layout: every element reads the same storage element" if diff.matches
               else "Layouts differ: " + "; ".join(diff.problems))
    alt = (f"{title + ': ' if title else ''}{verdict}. Yours: {_facts_line(yours)}. "
           f"Expected: {_facts_line(expected)}.")
    doc = Doc().heading("Verdict: " + ("✓ same layout" if diff.matches else "✗ layouts differ"))
    doc.items(list(diff.problems) + [f"note: {n}" for n in diff.notes])
    doc.items([f"yours: {_facts_line(yours)}", f"expected: {_facts_line(expected)}",
               "both read one storage" if shared else "two different storages (one is a copy)"])
    for who, panel, mark in (("yours", p_yours, True), ("expected", p_expected, False)):
        if panel.grid is None:
            doc.para(f"{who}: 0 elements")
            continue
        texts = list(panel.labels)
        if mark:
            texts = [f"{t} (wrong: expected reads {int(e)})" if bad else t
                     for t, bad, e in zip(texts, wrong, s_expected if len(s_expected) ==
                                          len(texts) else np.zeros(len(texts), np.int64))]
        shape = tuple(yours.shape if who == "yours" else expected.shape)
        for caption, header, rows in cells_tables(panel.grid.index, texts, shape,
                                                  f"{who}: the storage element each cell reads"):
            doc.table(caption, header, rows)
    return alt, doc
