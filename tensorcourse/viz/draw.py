"""Static drawings of tensor layouts and of broadcasting, as matplotlib figures.

Figures are built with ``matplotlib.figure.Figure`` and an Agg canvas, never with
pyplot: nothing is registered in pyplot's global figure list (so nothing leaks
and nothing pops up), and no GUI backend is needed. :class:`VizFigure` renders
itself as PNG in IPython, so a figure returned as the last expression of a cell
shows inline (and lands in exported HTML) with or without ``%matplotlib inline``.

The explorer redraws on every control change, so a redraw must take a few tens of
milliseconds (``benchmarks/bench_viz.py``). Text dominated that cost (about 1 ms per
``Text`` object, and a figure has ~100 labels), so a figure holds no ``Text`` and no
``Axes`` at all: every rectangle goes into one ``PolyCollection`` (plus one for the
hatched cells), and every string into one ``PathCollection`` of glyph outlines that
are cached per string. What the figure says stays readable from Python as
``VizFigure.text_content``.
"""

from __future__ import annotations

import base64
import html
import io
import math
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import product
from typing import Any

import matplotlib
import numpy as np
import torch
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import PathCollection, PolyCollection
from matplotlib.figure import Figure
from matplotlib.font_manager import FontProperties
from matplotlib.path import Path
from matplotlib.textpath import TextPath
from matplotlib.transforms import Affine2D

from ._inputs import require_tensor, storage_numel
from .broadcast import explain_broadcast
from .describe import Doc, cells_tables, int_ranges
from .layout import (
    _normalize_index,
    describe_layout,
    expanded_dims,
    shares_storage,
    storage_index_map,
)

__all__ = ["VizFigure", "draw_broadcast", "draw_layout"]

# Sizes are in inches (the scene's coordinates) and points (fonts).
CELL_IN = 0.42  # a cell's side when there is room
MIN_CELL_IN = 0.24
MAX_WIDTH_IN = 13.0  # wider than this and the figure is scaled down in notebooks anyway
MARGIN_IN = 0.2
FS_TITLE, FS_TEXT, FS_SMALL = 11.0, 9.0, 7.5
MAX_READ_SET = 200_000  # above this many elements, "which cells are read" uses drawn cells only

GREY_UNREAD = (0.86, 0.86, 0.86, 1.0)  # storage this view does not read
GREY_SPARE = (0.95, 0.95, 0.95, 1.0)  # storage nobody drawn reads
RESULT_BLUE = (0.80, 0.88, 0.97, 1.0)
RED = "#c62828"
INK = "#222222"
MUTED = "#666666"
UNREAD_EDGE = "#555555"  # the dashed border of a storage element nobody drawn reads
# The storage palette: cividis (designed to look the same under red-green colour-vision
# deficiencies), its darkest 30 % left out and mixed with 30 % white so the dark
# labels keep a contrast of at least 4.5:1 (WCAG AA). tests/test_viz_colours.py simulates
# deuteranopia, protanopia and tritanopia and checks the colours stay apart. The numbers
# in the cells say the same as the colours: colour is never the only carrier.
_CMAP = matplotlib.colormaps["cividis"]
PALETTE_LO, PALETTE_FADE = 0.3, 0.3


class VizFigure(Figure):
    """A ``Figure`` with an Agg canvas that shows itself as PNG in IPython/Jupyter.

    ``text_content`` holds every string drawn in it, in drawing order (the text is
    drawn as outlines, so this is the way to read it back: tests), and ``stats`` a
    few counts (``logical_cells`` drawn, ``hatched`` cells...).

    Text alternatives, written from the same facts the figure draws
    (:mod:`tensorcourse.viz.describe`): ``alt`` is a one or two sentence summary and
    :meth:`describe` the complete description (Markdown, or ``describe("html")``).
    In Jupyter the figure shows as the image with ``alt`` set and the description in a
    collapsed "Text description" under it; ``text/plain`` (a terminal) is the
    description itself.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        FigureCanvasAgg(self)  # attaches itself as self.canvas: draw()/savefig work headless
        self.text_content = ""
        self.stats: dict[str, int] = {}
        self.alt = ""
        self.description = Doc()

    def describe(self, format: str = "markdown") -> str:  # noqa: A002 - the natural name
        """The full text description: ``"markdown"`` (default), ``"html"`` or ``"text"``."""
        if format not in ("markdown", "html", "text"):
            raise ValueError(f"describe(): format must be 'markdown', 'html' or 'text', "
                             f"got {format!r}")
        doc = Doc().para(self.alt).extend(self.description)
        return getattr(doc, format)()

    def _repr_png_(self) -> bytes:
        buf = io.BytesIO()
        self.savefig(buf, format="png", bbox_inches="tight", facecolor="white")
        return buf.getvalue()

    def _repr_html_(self) -> str:
        return self._html(base64.b64encode(self._repr_png_()).decode("ascii"))

    def _html(self, png_b64: str) -> str:
        return (f'<figure class="tio-figure" style="margin:0">'
                f'<img src="data:image/png;base64,{png_b64}" alt="{html.escape(self.alt)}" '
                f'style="max-width:100%"/>' + self._details_html() + "</figure>")

    def _details_html(self) -> str:
        return ('<details class="tio-figure-text"><summary>Text description of the figure'
                f"</summary>{self.describe('html')}</details>")

    def _repr_markdown_(self) -> str:
        return self.describe("markdown")

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None,
                          ) -> tuple[dict[str, Any], dict[str, Any]]:
        """The image, its alt and its description, in one display output.

        Front ends show ``text/html`` (the image with ``alt``, the description under it);
        ``image/png`` is kept for those that prefer it (the website builds its pages
        from it, ``website/build.py``), and ``metadata["tensorcourse"]`` carries the
        alt and the description for them.
        """
        png = base64.b64encode(self._repr_png_()).decode("ascii")
        data = {"image/png": png, "text/html": self._html(png),
                "text/markdown": self.describe("markdown"), "text/plain": self.describe("text")}
        meta = {"tensorcourse": {"alt": self.alt, "description_html": self.describe("html")}}
        return data, meta


# --------------------------------------------------------------------------- geometry


def _elide(n: int, cap: int) -> list[int | None]:
    """Indices ``0..n-1``, or ``cap`` of them: the first and last around a ``None`` (the ellipsis)."""
    if n <= cap:
        return list(range(n))
    head = (cap + 1) // 2
    tail = cap - head
    return list(range(head)) + [None] + list(range(n - tail, n))


def _collapse(items: list[Any]) -> list[Any]:
    out: list[Any] = []
    for item in items:
        if item is None and out and out[-1] is None:
            continue
        out.append(item)
    return out


@dataclass
class _Grid:
    """Where the drawn cells of a logical view go, in cell units (y grows downwards)."""

    xy: np.ndarray  # (n, 2) top-left corner of each drawn cell
    index: np.ndarray  # (n, ndim) the logical index of each drawn cell
    marks: list[tuple[float, float, str, float, str]]  # (x, y, text, fontsize, ha)
    w: float
    h: float


def _grid(shape: tuple[int, ...], cap: int) -> _Grid:
    """Lay out a tensor of ``shape``: last dim across, dim -2 down, leading dims as slices.

    Rank 3 puts the slices (dim 0) side by side; higher ranks fold dims ``0..nd-4``
    into rows of slices. Long dims show their first and last cells around an
    ellipsis, so the drawing stays small for any size.
    """
    nd = len(shape)
    if nd == 0:
        return _Grid(np.zeros((1, 2)), np.zeros((1, 0), dtype=np.int64), [], 1.0, 1.0)

    def parts(k: int, c: int) -> list[tuple[int, ...] | None]:
        return [None if i is None else (i,) for i in _elide(shape[k], c)]

    cols = parts(nd - 1, cap)
    rows = parts(nd - 2, cap) if nd >= 2 else [()]
    col_w, row_h = float(len(cols)), float(len(rows))
    # As many slices side by side as fit in about 36 cells.
    slice_cap = max(3, min(cap, int(36 // (col_w + 0.6))))
    scols = parts(nd - 3, slice_cap) if nd >= 3 else [()]
    if nd >= 4:
        lead = product(*[_elide(shape[k], 3) for k in range(nd - 3)])
        srows = _collapse([None if None in tup else tup for tup in lead])
        if len(srows) > 3:
            srows = _collapse(srows[:2] + [None] + srows[-1:])
    else:
        srows = [()]

    digits = len(str(shape[nd - 2] - 1)) if nd >= 2 else 0
    idx_w = 0.25 + 0.2 * digits if nd >= 2 else 0.0  # room for the row numbers
    top = 0.45  # room for the column numbers
    slab = 0.55 if nd >= 3 else 0.0  # room for the "[i, :, :]" slice labels
    xs, x = [], idx_w
    for sc in scols:
        xs.append(x)
        x += (col_w if sc is not None else 1.0) + 0.6
    width = x - 0.6
    ys, y = [], 0.0
    for sr in srows:
        ys.append(y)
        y += (slab + top + row_h if sr is not None else 1.0) + 0.4
    height = y - 0.4

    xy, index = [], []
    marks: list[tuple[float, float, str, float, str]] = []
    for sr, y0 in zip(srows, ys):
        if sr is None:
            marks.append((width / 2, y0 + 0.5, "⋮", FS_TEXT + 3, "center"))
            continue
        for c_i, (sc, x0) in enumerate(zip(scols, xs)):
            cy = y0 + slab + top
            if sc is None:
                marks.append((x0 + 0.5, cy + row_h / 2, "⋯", FS_TEXT + 3, "center"))
                continue
            if nd >= 3:
                label = "[" + ", ".join(map(str, sr + sc)) + ", :, :]"
                marks.append((x0 + col_w / 2, y0 + slab * 0.45, label, FS_SMALL, "center"))
            for ci, cp in enumerate(cols):
                if cp is not None:
                    marks.append((x0 + ci + 0.5, cy - top * 0.5, str(cp[0]), FS_SMALL, "center"))
            for ri, rp in enumerate(rows):
                if rp is not None and c_i == 0 and nd >= 2:
                    marks.append((x0 - 0.12, cy + ri + 0.5, str(rp[0]), FS_SMALL, "right"))
                for ci, cp in enumerate(cols):
                    if cp is not None and rp is not None:
                        xy.append((x0 + ci, cy + ri))
                        index.append(sr + sc + rp + cp)
                    else:  # an elided row and/or column, printed the way NumPy does
                        dots = "⋱" if cp is None and rp is None else "⋯" if cp is None else "⋮"
                        marks.append((x0 + ci + 0.5, cy + ri + 0.5, dots, FS_TEXT, "center"))
    return _Grid(np.asarray(xy, dtype=float).reshape(-1, 2),
                 np.asarray(index, dtype=np.int64).reshape(-1, nd), marks, width, height)


def _strip_slots(n_storage: int, wanted: np.ndarray, cap: int = 96) -> list[int | None]:
    """Storage elements to draw: all of a small storage, else the wanted ones with gaps elided."""
    if n_storage <= 72:
        return list(range(n_storage))
    points = sorted(set(wanted.tolist()) | {0, n_storage - 1})
    slots: list[int | None] = []
    prev = None
    for s in points:
        if prev is not None:
            if s - prev - 1 <= 2:
                slots.extend(range(prev + 1, s))
            else:
                slots.append(None)
        slots.append(s)
        prev = s
    if len(slots) > cap:
        slots = slots[: cap - 13] + [None] + slots[-12:]
    return _collapse(slots)


# --------------------------------------------------------------------------- colours, labels


def _colours(sidx: np.ndarray, lo: int, hi: int, fade: float = PALETTE_FADE) -> np.ndarray:
    """One colour per storage element: neighbours in storage get neighbouring colours.

    Mixed with white so black labels stay readable on every colour.
    """
    frac = (sidx - lo) / max(hi - lo, 1)
    rgba = _CMAP(PALETTE_LO + (1 - PALETTE_LO) * np.clip(frac, 0.0, 1.0))
    rgba[:, :3] = rgba[:, :3] * (1 - fade) + fade
    return rgba


def _format_values(values: torch.Tensor) -> list[str]:
    values = values.detach().cpu()
    if values.dtype == torch.bool:
        return ["T" if v else "F" for v in values.tolist()]
    if values.is_complex():
        return [f"{v.real:.2g}{v.imag:+.2g}j" for v in values.tolist()]
    if values.is_floating_point():
        return [f"{v:.3g}" for v in values.float().tolist()]
    return [str(v) for v in values.tolist()]


def _storage_values(t: torch.Tensor, positions: Sequence[int]) -> list[str] | None:
    """The values stored at storage ``positions``, read through torch; None if unreadable."""
    if t.device.type == "meta" or not positions:
        return None if t.device.type == "meta" else []
    flat = t.detach().as_strided((storage_numel(t),), (1,), 0)
    return _format_values(flat[torch.as_tensor(list(positions), device=t.device)])


def _label_fontsize(labels: Sequence[str], cell_in: float) -> float:
    longest = max((max(len(p) for p in s.split("\n")) for s in labels), default=1)
    lines = max((s.count("\n") + 1 for s in labels), default=1)
    by_width = cell_in * 72 * 0.86 / (0.62 * max(longest, 1))
    by_height = cell_in * 72 * 0.8 / (1.25 * lines)
    return max(4.5, min(9.0, by_width, by_height))


def _text_w(text: str, kw: dict[str, Any]) -> float:
    """Width in inches of a heading line styled by ``kw`` (measured on its outline)."""
    fs = round(kw.get("fontsize", FS_TEXT), 1)
    return _glyph_path(text, fs, kw.get("weight") == "bold", kw.get("family") == "monospace",
                       False, _line_h(fs))[2]


def _line_h(fontsize: float) -> float:
    return fontsize * 1.55 / 72


# --------------------------------------------------------------------------- the scene

_FONTS: dict[tuple[bool, bool], FontProperties] = {}


def _font(bold: bool, mono: bool) -> FontProperties:
    key = (bold, mono)
    if key not in _FONTS:
        _FONTS[key] = FontProperties(family="DejaVu Sans Mono" if mono else "DejaVu Sans",
                                     weight="bold" if bold else "normal")
    return _FONTS[key]


@lru_cache(maxsize=8192)
def _glyph_path(text: str, fontsize: float, bold: bool, mono: bool, centre: bool,
                step: float) -> tuple[np.ndarray, np.ndarray, float]:
    """``text`` as filled outlines, in inches with y down, and its width.

    The first line's baseline is at y = 0 and each next line ``step`` inches lower;
    lines start at x = 0, or are centred on x = 0 when ``centre``. All text is drawn
    this way, as one ``PathCollection`` of cached outlines: a ``Text`` object costs
    about 1 ms per label per draw (layout plus glyph rendering), which for ~100 cell
    labels would blow the redraw budget several times over.
    """
    verts, codes, width = [], [], 0.0
    for k, line in enumerate(text.split("\n")):
        path = TextPath((0, 0), line, size=fontsize, prop=_font(bold, mono))
        if not len(path.vertices):
            continue
        v = path.vertices / 72  # points -> inches
        v[:, 1] = k * step - v[:, 1]  # y up -> y down, then move to this line
        x0, x1 = v[:, 0].min(), v[:, 0].max()
        if centre:
            v[:, 0] -= (x0 + x1) / 2
        verts.append(v)
        codes.append(path.codes if path.codes is not None
                     else np.full(len(v), Path.LINETO, dtype=np.uint8))
        width = max(width, x1 - x0 if centre else x1)
    if not verts:
        return np.zeros((0, 2)), np.zeros(0, dtype=np.uint8), 0.0
    return np.concatenate(verts), np.concatenate(codes), width


@dataclass
class _Scene:
    """Rectangles and text in inches (y down); :meth:`render` makes one figure of them."""

    rects: list[tuple[float, float, float, float]] = field(default_factory=list)
    faces: list[np.ndarray] = field(default_factory=list)
    hatched: list[tuple[float, float, float, float]] = field(default_factory=list)
    hatched_faces: list[np.ndarray] = field(default_factory=list)
    outlines: list[tuple[float, float, float, float]] = field(default_factory=list)
    dashed: list[tuple[float, float, float, float]] = field(default_factory=list)
    paths: list[Path] = field(default_factory=list)
    colours: list[str] = field(default_factory=list)
    strings: list[str] = field(default_factory=list)
    width: float = 0.0
    height: float = 0.0

    def label(self, x: float, y: float, s: str, fontsize: float, color: str = INK,
              ha: str = "center", bold: bool = False) -> None:
        """A short label (1 or 2 lines) centred vertically on ``y``; ``ha``: where ``x`` is."""
        self.strings.append(s)
        fs = round(fontsize, 1)
        step = fs * 1.2 / 72
        v, codes, width = _glyph_path(s, fs, bold, False, True, step)
        if not len(v):
            return
        # Centre the block on the middle of a digit (cap height ~0.73 em) so labels
        # of different lengths share a baseline.
        dy = y + 0.365 * fs / 72 - s.count("\n") * step / 2
        dx = x + (width / 2 if ha == "left" else -width / 2 if ha == "right" else 0.0)
        self.paths.append(Path(v + (dx, dy), codes))
        self.colours.append(color)

    def lines(self, x: float, y: float, lines: Sequence[tuple[str, dict[str, Any]]]) -> float:
        """Stack text lines downwards from ``y`` (their top); return the y below them.

        Style keys: ``fontsize``, ``color``, ``weight`` ("bold"), ``family`` ("monospace").
        """
        for s, kw in lines:
            self.strings.append(s)
            fs = round(kw.get("fontsize", FS_TEXT), 1)
            step = _line_h(fs)
            v, codes, width = _glyph_path(s, fs, kw.get("weight") == "bold",
                                          kw.get("family") == "monospace", False, step)
            if len(v):
                self.paths.append(Path(v + (x, y + fs * 1.02 / 72), codes))
                self.colours.append(kw.get("color", INK))
            y += step * (s.count("\n") + 1)
            self.width = max(self.width, x + width)
        return y

    def render(self) -> VizFigure:
        w = self.width + MARGIN_IN
        h = self.height + MARGIN_IN
        fig = VizFigure(figsize=(w, h), dpi=100, facecolor="white")
        fig.text_content = "\n".join(self.strings)
        fig.stats = {"rects": len(self.rects), "hatched": len(self.hatched),
                     "labels": len(self.paths), "dashed": len(self.dashed)}
        # Artists live on the figure itself, in inches with y pointing down: no Axes
        # (creating one costs ~10 ms, and it would only be hidden).
        to_fig = Affine2D().scale(1, -1).translate(0, h) + fig.dpi_scale_trans

        def verts(rects: list[tuple[float, float, float, float]]) -> np.ndarray:
            r = np.asarray(rects, dtype=float).reshape(-1, 4)
            x0, y0, x1, y1 = r[:, 0], r[:, 1], r[:, 0] + r[:, 2], r[:, 1] + r[:, 3]
            return np.stack([np.stack([x0, y0], 1), np.stack([x1, y0], 1),
                             np.stack([x1, y1], 1), np.stack([x0, y1], 1)], 1)

        if self.rects:
            fig.add_artist(PolyCollection(verts(self.rects), facecolors=np.vstack(self.faces),
                                          edgecolors="white", linewidths=1.0, transform=to_fig))
        if self.hatched:
            fig.add_artist(PolyCollection(verts(self.hatched),
                                          facecolors=np.vstack(self.hatched_faces),
                                          edgecolors="#b0b0b0", linewidths=0.4, hatch="///",
                                          transform=to_fig))
        if self.dashed:  # not read: a dashed border, so it is not told by its grey alone
            fig.add_artist(PolyCollection(verts(self.dashed), facecolors="none",
                                          edgecolors=UNREAD_EDGE, linewidths=0.9,
                                          linestyles=(0, (2.5, 1.5)), transform=to_fig))
        if self.outlines:
            fig.add_artist(PolyCollection(verts(self.outlines), facecolors="none",
                                          edgecolors=RED, linewidths=2.2, transform=to_fig))
        if self.paths:
            fig.add_artist(PathCollection(self.paths, facecolors=self.colours, edgecolors="none",
                                          linewidths=0.0, transform=to_fig))
        return fig


@dataclass
class _Panel:
    """One logical view to draw: a grid, a colour and a label per drawn cell, a header."""

    header: list[tuple[str, dict[str, Any]]]
    grid: _Grid | None
    colours: np.ndarray
    hatched: np.ndarray
    labels: list[str]
    highlight: int | None = None  # position in grid.xy of the picked cell
    empty: str | None = None  # drawn instead of a grid
    unread: np.ndarray | None = None  # cells drawn with a dashed border (not read by the view)

    def size(self, cell: float) -> tuple[float, float]:
        head_h = sum(_line_h(kw.get("fontsize", FS_TEXT)) * (s.count("\n") + 1)
                     for s, kw in self.header)
        head_w = max((_text_w(s, kw) for s, kw in self.header),
                     default=0.0)
        if self.grid is None:
            return max(head_w, 1.5), head_h + 0.4
        return max(head_w, self.grid.w * cell), head_h + 0.08 + self.grid.h * cell

    def draw(self, scene: _Scene, x: float, y: float, cell: float) -> list[tuple[float, float]]:
        """Draw at (x, y); return each drawn cell's top-left corner in inches."""
        y = scene.lines(x, y, self.header) + 0.08
        if self.grid is None:
            scene.label(x, y + 0.2, self.empty or "", FS_TEXT, MUTED, "left")
            return []
        g = self.grid
        pad = cell * 0.04
        corners = [(x + gx * cell, y + gy * cell) for gx, gy in g.xy]
        fs = _label_fontsize(self.labels, cell)
        unread = self.unread if self.unread is not None else np.zeros(len(corners), bool)
        for (cx, cy), colour, hatch, label, dashed in zip(corners, self.colours, self.hatched,
                                                          self.labels, unread):
            rect = (cx + pad, cy + pad, cell - 2 * pad, cell - 2 * pad)
            (scene.hatched if hatch else scene.rects).append(rect)
            if dashed:
                scene.dashed.append(rect)
            (scene.hatched_faces if hatch else scene.faces).append(colour)
            scene.label(cx + cell / 2, cy + cell / 2, label, fs, MUTED if hatch else INK)
        for mx, my, s, mfs, ha in g.marks:
            scene.label(x + mx * cell, y + my * cell, s, mfs, MUTED, ha)
        if self.highlight is not None:
            cx, cy = corners[self.highlight]
            scene.outlines.append((cx, cy, cell, cell))
        return corners


def _flow(scene: _Scene, panels: Sequence[_Panel], x: float, y: float, cell: float) -> float:
    """Place panels left to right, wrapping at MAX_WIDTH_IN; return the y below them."""
    row_h, cx = 0.0, x
    for panel in panels:
        w, h = panel.size(cell)
        if cx > x and cx + w > x + MAX_WIDTH_IN:
            y += row_h + 0.3
            cx, row_h = x, 0.0
        panel.draw(scene, cx, y, cell)
        scene.width = max(scene.width, cx + w)
        cx += w + 0.45
        row_h = max(row_h, h)
    return y + row_h


def _cell_size(total_cells: float) -> float:
    return max(MIN_CELL_IN, min(CELL_IN, MAX_WIDTH_IN / max(total_cells, 1.0)))


def _dims_line(shape: tuple[int, ...], stride: tuple[int, ...]) -> str:
    nd = len(shape)
    if nd == 0:
        return "0-d tensor: one element, no dims"

    def d(k: int) -> str:
        mark = ", expanded" if stride[k] == 0 and shape[k] > 1 else ""
        return f"dim {k} (size {shape[k]}, stride {stride[k]}{mark})"

    if nd == 1:
        return f"across: {d(0)}"
    parts = [f"down: {d(nd - 2)}", f"across: {d(nd - 1)}"]
    if nd >= 3:
        parts.insert(0, f"slices: {d(nd - 3)}")
    if nd >= 4:
        parts.insert(0, "slice rows: " + ", ".join(d(k) for k in range(nd - 3)))
    return "\n".join(parts) if nd >= 3 else "   ".join(parts)


def _check_cap(max_elements: Any, fn: str) -> int:
    if isinstance(max_elements, bool) or not isinstance(max_elements, int) or max_elements < 3:
        raise ValueError(f"{fn}(): max_elements must be an int >= 3 (cells drawn per dim), "
                         f"got {max_elements!r}")
    return max_elements


# --------------------------------------------------------------------------- draw_layout


def _read_positions(t: torch.Tensor, drawn: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct storage elements ``t`` reads and how often (from drawn cells if ``t`` is huge)."""
    source = storage_index_map(t).reshape(-1).numpy() if t.numel() <= MAX_READ_SET else drawn
    return np.unique(source, return_counts=True)


def draw_layout(
    t: torch.Tensor,
    base: torch.Tensor | None = None,
    *,
    title: str | None = None,
    max_elements: int = 10,
    label: str = "index",
    highlight: Any = None,
) -> Figure:
    """Draw ``t``'s logical view above its flat storage, in one figure.

    Each drawn cell of the logical view has the colour of the storage element it
    reads, and the storage strip underneath (in element units, wrapped into rows)
    shows every storage element with its index; elements ``t`` does not read are
    grey, elements read through a stride-0 (expanded) dim are hatched in the view
    ("never allocated"), and ``×k`` marks a storage element read k times. The
    heading states shape, strides, storage offset, contiguity and dtype.

    ``base``: draw ``base`` next to ``t`` and say whether ``t`` shares its
    storage; if it does, base cells that ``t`` reads keep their colour and the
    strip shows which part of base's storage ``t`` covers; if it does not (after
    advanced indexing, ``.contiguous()`` or ``reshape`` copied) the figure says so.
    ``label``: what the cells show, ``"index"`` (storage index), ``"value"`` or
    ``"both"``. ``highlight``: a logical index of ``t`` to outline, with the
    storage element it reads. ``max_elements``: cells drawn per dim; longer dims
    show their first and last cells around an ellipsis (large tensors are
    summarised, not refused).

    Raises ``TypeError`` if ``t`` or ``base`` is not a ``torch.Tensor`` (a list, a
    NumPy array...: pass ``torch.tensor(...)``), ``ValueError`` for a tensor with
    0 elements, a sparse or other non-strided tensor, or a bad ``label`` /
    ``max_elements``, and ``IndexError`` for an out-of-range ``highlight``
    (``ValueError`` if it is not whole numbers).
    """
    t = require_tensor(t, "draw_layout")
    if base is not None:
        base = require_tensor(base, "draw_layout (base=)")
    if label not in ("index", "value", "both"):
        raise ValueError(f"draw_layout(): label must be 'index', 'value' or 'both', got {label!r}")
    cap = _check_cap(max_elements, "draw_layout")
    if t.device.type == "meta" or (base is not None and base.device.type == "meta"):
        label = "index"  # meta tensors have no values to show
    facts = describe_layout(t)
    shared = base is not None and shares_storage(t, base)
    n_storage = facts.storage_numel

    grid = _grid(facts.shape, cap)
    stride = np.asarray(facts.stride, dtype=np.int64)
    sidx = facts.offset + grid.index @ stride
    expanded = expanded_dims(t)
    repeat = (grid.index[:, list(expanded)] > 0).any(axis=1) if expanded \
        else np.zeros(len(sidx), dtype=bool)
    read, counts = _read_positions(t, sidx)

    base_grid = base_sidx = None
    if base is not None:
        base_grid = _grid(tuple(base.shape), cap)
        base_sidx = base.storage_offset() + base_grid.index @ np.asarray(base.stride(),
                                                                         dtype=np.int64)
    # The palette spans only what the view reads (everything else is grey), so even a
    # view of three neighbouring elements gets clearly different colours.
    lo, hi = int(read.min()), int(read.max())

    slots = _strip_slots(n_storage, np.concatenate([sidx, [facts.offset]]).astype(np.int64))
    total_w = grid.w + (base_grid.w + 1.5 if base_grid is not None else 0.0)
    cell = _cell_size(max(total_w, min(len(slots), 24)))
    row_len = len(slots) if len(slots) <= max(32, int(MAX_WIDTH_IN / cell) - 2) \
        else max(24, min(int(total_w), int(MAX_WIDTH_IN / cell) - 2))

    # Cell labels.
    def labels_for(positions: np.ndarray, src: torch.Tensor, grid_index: np.ndarray,
                   mode: str) -> list[str]:
        idx = [str(int(s)) for s in positions]
        if mode == "index":
            return idx
        flat_pos = [tuple(map(int, i)) for i in grid_index]
        with torch.no_grad():
            vals = _format_values(torch.stack([src[i] for i in flat_pos])) if flat_pos else []
        if mode == "value":
            return vals
        return [f"{v}\n@{i}" for v, i in zip(vals, idx)]

    view_labels = labels_for(sidx, t, grid.index, label)
    hl_pos = None
    if highlight is not None:
        hl_index = _normalize_index(t, highlight)  # IndexError/ValueError for a bad index
        matches = np.nonzero((grid.index == np.asarray(hl_index, dtype=np.int64)).all(axis=1))[0]
        hl_pos = int(matches[0]) if len(matches) else None
        hl_storage = facts.offset + int(np.dot(hl_index, stride)) if facts.shape else facts.offset
    else:
        hl_storage = None

    view_colours = _colours(sidx, lo, hi)
    if repeat.any():
        view_colours[repeat] = _colours(sidx[repeat], lo, hi, fade=0.75)
    dims = _dims_line(facts.shape, facts.stride)
    panels = []
    if base is not None and base_grid is not None and base_sidx is not None:
        bfacts = describe_layout(base)
        if shared:
            in_view = np.isin(base_sidx, read)
            bcol = np.tile(np.asarray(GREY_UNREAD), (len(base_sidx), 1))
            if in_view.any():
                bcol[in_view] = _colours(base_sidx[in_view], lo, hi)
            head = "base (cells the view reads keep their colour)"
        else:
            bcol = np.tile(np.asarray(GREY_SPARE), (len(base_sidx), 1))
            head = "base (a different storage: not read by the view)"
        panels.append(_Panel(
            header=[(head, {"fontsize": FS_TEXT, "weight": "bold"}),
                    (f"shape {bfacts.shape}  stride {bfacts.stride}  offset {bfacts.offset}",
                     {"fontsize": FS_SMALL, "color": MUTED})],
            grid=base_grid, colours=bcol, hatched=np.zeros(len(base_sidx), dtype=bool),
            labels=labels_for(base_sidx, base, base_grid.index, label),
            unread=~np.isin(base_sidx, read) if shared else np.ones(len(base_sidx), bool)))
        view_head = "view"
    else:
        view_head = "logical view"
    panels.append(_Panel(
        header=[(view_head + " (each cell shows " + {"index": "the storage index it reads)",
                                                     "value": "its value)",
                                                     "both": "value and @storage index)"}[label],
                 {"fontsize": FS_TEXT, "weight": "bold"}),
                (dims, {"fontsize": FS_SMALL, "color": MUTED})],
        grid=grid, colours=view_colours, hatched=repeat, labels=view_labels, highlight=hl_pos))

    scene = _Scene()
    x0 = y = MARGIN_IN
    heading: list[tuple[str, dict[str, Any]]] = []
    if title:
        heading.append((title, {"fontsize": FS_TITLE + 1, "weight": "bold"}))
    heading.append((facts.headline(), {"fontsize": FS_TITLE, "family": "monospace"}))
    if base is not None:
        if shared:
            n_read = len(read) if t.numel() <= MAX_READ_SET else None
            reads = f"reads {n_read} of its {n_storage} elements, " if n_read is not None else ""
            heading.append((f"shares storage with base: {reads}spanning storage elements "
                            f"{facts.span[0]}..{facts.span[1]}"
                            if facts.span else "shares storage with base",
                            {"fontsize": FS_TEXT, "color": "#1b5e20", "weight": "bold"}))
        else:
            heading.append(("does NOT share storage with base: it lives in its own memory "
                            "(e.g. a copy made by advanced indexing,\n.contiguous() or reshape), "
                            "so writing to it leaves base unchanged",
                            {"fontsize": FS_TEXT, "color": RED, "weight": "bold"}))
    for k in expanded:
        heading.append((f"dim {k} has stride 0 (expanded): its {facts.shape[k]} indices re-read "
                        "the same elements; never allocated (hatched cells)",
                        {"fontsize": FS_TEXT, "color": "#6a1b9a"}))
    y = scene.lines(x0, y, heading) + 0.12
    y = _flow(scene, panels, x0, y, cell) + 0.3

    # The storage strip.
    dtype = str(facts.dtype).replace("torch.", "")
    whose = ("storage shared by base and view" if shared else
             "the view's own storage" if base is not None else "storage")
    strip_head = (f"{whose}, in element units: {n_storage} × {dtype} ({facts.itemsize} B each) "
                  f"= {facts.storage_bytes} B" + ("   (a summary: … hides elements)"
                                                   if None in slots else ""))
    y = scene.lines(x0, y, [(strip_head, {"fontsize": FS_TEXT, "weight": "bold"})]) + 0.06
    real = [s for s in slots if s is not None]
    read_set = dict(zip(read.tolist(), counts.tolist()))
    base_read = set(base_sidx.tolist()) if shared and base_sidx is not None else set()
    values = _storage_values(t, real) if label != "index" else None
    value_of = dict(zip(real, values)) if values is not None else {}
    strip_labels = {s: (str(s) if label == "index" else
                        value_of.get(s, "") if label == "value" else
                        f"{value_of.get(s, '')}\n@{s}") for s in real}
    fs = _label_fontsize(list(strip_labels.values()) or ["0"], cell)
    real_arr = np.asarray(real, dtype=np.int64)
    colour_of = dict(zip(real, _colours(real_arr, lo, hi))) if real else {}
    row_gap = 0.26
    for pos, s in enumerate(slots):
        r, c = divmod(pos, row_len)
        cx, cy = x0 + c * cell, y + r * (cell + row_gap)
        if s is None:
            scene.label(cx + cell / 2, cy + cell / 2, "…", FS_TEXT + 2, MUTED)
            continue
        if s in read_set:
            colour = colour_of[s]
        else:
            colour = np.asarray(GREY_UNREAD if s in base_read else GREY_SPARE)
        scene.rects.append((cx + cell * 0.04, cy + cell * 0.04, cell * 0.92, cell * 0.92))
        scene.faces.append(np.asarray(colour))
        if s not in read_set:
            scene.dashed.append(scene.rects[-1])
        scene.label(cx + cell / 2, cy + cell / 2, strip_labels[s], fs,
                    INK if s in read_set else "#9a9a9a")
        if read_set.get(s, 0) > 1:
            scene.label(cx + cell * 0.93, cy + cell * 0.8, f"×{read_set[s]}", 5.5, "#4a148c",
                        "right", bold=True)
        if s == facts.offset:
            scene.label(cx + cell * 0.5, cy + cell + 0.09, "▲ offset", 6.5, INK, bold=True)
        if s == hl_storage:
            scene.outlines.append((cx, cy, cell, cell))
    n_rows = max(1, math.ceil(len(slots) / row_len))
    scene.width = max(scene.width, x0 + min(len(slots), row_len) * cell)
    y += n_rows * (cell + row_gap) + 0.04

    legend = ["A cell's colour = the storage element it reads; neighbours in storage have "
              "neighbouring colours."]
    if any(s is not None and s not in read_set for s in slots):
        legend.append("Grey with a dashed border: storage elements this tensor does not read.")
    if repeat.any():
        legend.append("Hatched: read again through a stride-0 dim (no memory of its own).")
    if (counts > 1).any():
        legend.append("×k: this storage element is read by k logical cells.")
    if highlight is not None:
        legend.append(f"Thick red outline: element {hl_index} → storage element "
                      f"{_formula(facts.offset, hl_index, facts.stride)}.")
    y = scene.lines(x0, y, [("\n".join(legend), {"fontsize": FS_SMALL, "color": MUTED})])
    scene.height = y
    fig = scene.render()
    fig.stats["logical_cells"] = len(grid.xy)
    shown = [f"{lab} (re-read through stride 0)" if rep else lab
             for lab, rep in zip(view_labels, repeat)]
    base_text = None
    if base is not None and base_grid is not None and base_sidx is not None:
        base_text = (describe_layout(base), base_grid.index,
                     labels_for(base_sidx, base, base_grid.index, label))
    fig.alt, fig.description = _layout_text(
        facts, title=title, label=label, index=grid.index, shown=shown, read=read,
        counts=counts, base=base_text, shared=shared,
        highlight=(hl_index, _formula(facts.offset, hl_index, facts.stride))
        if highlight is not None else None)
    return fig


_CONTENT = {"index": "the storage element it reads", "value": "its value",
            "both": "its value and @ the storage element it reads"}


def _layout_facts_items(facts: Any, who: str) -> list[str]:
    dtype = str(facts.dtype).replace("torch.", "")
    items = [f"{who}: shape {facts.shape}, stride {facts.stride}, storage offset "
             f"{facts.offset}, contiguous: {'yes' if facts.is_contiguous else 'no'}, "
             f"{dtype} ({facts.itemsize} B per element)"]
    for k, (n, st) in enumerate(zip(facts.shape, facts.stride)):
        extra = " (expanded: every index along it re-reads the same elements)" \
            if st == 0 and n > 1 else ""
        items.append(f"dim {k}: size {n}, stride {st}: one step along dim {k} moves {st} "
                     f"element{'s' if st != 1 else ''} in storage{extra}")
    return items


def _layout_text(facts: Any, *, title: str | None, label: str, index: np.ndarray,
                 shown: list[str], read: np.ndarray, counts: np.ndarray,
                 base: tuple[Any, np.ndarray, list[str]] | None, shared: bool,
                 highlight: tuple[tuple[int, ...], str] | None) -> tuple[str, Doc]:
    """The alt text and the full description of a :func:`draw_layout` figure."""
    dtype = str(facts.dtype).replace("torch.", "")
    n_storage = facts.storage_numel
    alt = (f"{title + ': ' if title else ''}Layout of a tensor of shape {facts.shape}, "
           f"stride {facts.stride}, storage offset {facts.offset}, "
           f"{'contiguous' if facts.is_contiguous else 'not contiguous'}, {dtype}. "
           f"Its {facts.numel} elements read {len(read)} of the {n_storage} storage elements "
           f"({int_ranges(read.tolist(), cap=4)}).")
    if base is not None:
        alt += (" It shares storage with base, shape " f"{base[0].shape}." if shared else
                " It does not share storage with base: it is a copy in its own memory.")
    for k in facts.expanded_dims:
        alt += f" Dim {k} has stride 0: its indices re-read the same elements."
    if highlight is not None:
        alt += f" Element {highlight[0]} reads storage element {highlight[1]}."
    doc = Doc().heading("Layout").items(_layout_facts_items(facts, "the tensor"))
    for caption, header, rows in cells_tables(index, shown, facts.shape,
                                              "Each cell shows " + _CONTENT[label]):
        doc.table(caption, header, rows)
    if base is not None:
        bfacts, bindex, blabels = base
        doc.heading("Base")
        doc.items(_layout_facts_items(bfacts, "base") + [
            "the tensor shares base's storage (a view)" if shared else
            "the tensor does not share base's storage: it is a copy, so writing to it "
            "leaves base unchanged"])
        for caption, header, rows in cells_tables(bindex, blabels, bfacts.shape,
                                                  "Each cell of base shows " + _CONTENT[label]):
            doc.table(caption, header, rows)
    doc.heading("Storage")
    unread = sorted(set(range(n_storage)) - set(read.tolist())) if n_storage <= MAX_READ_SET \
        else None
    again = [f"{int(p)} (×{int(c)})" for p, c in zip(read, counts) if c > 1]
    items = [f"{n_storage} × {dtype} ({facts.itemsize} B each) = {facts.storage_bytes} B",
             f"read by the tensor: storage elements {int_ranges(read.tolist())}"]
    if unread is not None:
        items.append(f"not read: {int_ranges(unread)}")
    if again:
        items.append("read by more than one cell: " + ", ".join(again[:24])
                     + (", …" if len(again) > 24 else ""))
    if highlight is not None:
        items.append(f"element {highlight[0]} reads storage element {highlight[1]} "
                     "(offset + Σ index_k · stride_k)")
    return alt, doc.items(items)


def _formula(offset: int, index: Sequence[int], stride: Sequence[int]) -> str:
    terms = [str(offset)] + [f"{i}·{s}" for i, s in zip(index, stride)]
    return f"{' + '.join(terms)} = {offset + sum(i * s for i, s in zip(index, stride))}"


# --------------------------------------------------------------------------- draw_broadcast


def draw_broadcast(*shapes: Any, dtype: Any = torch.float32, max_elements: int = 8) -> Figure:
    """Draw how 2 or 3 shapes broadcast: each operand stretched to the result shape.

    Every operand is drawn at the result's shape; its real cells are solid and its
    stretched cells (stride 0, read again from the cell they repeat) are faded and
    hatched as "not allocated". Numbers are the index into the operand's own
    storage, so a stretched row visibly repeats the same numbers. The result is
    drawn last with the bytes it allocates. The heading has the right-aligned
    table of sizes and the rule per dim; for incompatible shapes the operands are
    drawn as they are and torch's error message is quoted.

    Shapes and ``dtype`` are read as in :func:`explain_broadcast`, with the same
    errors (``ValueError`` for fewer than 2 or more than 3 shapes, a negative size
    or an unknown dtype, ``TypeError`` for a shape of the wrong type), plus
    ``ValueError`` for a bad ``max_elements``.
    """
    report = explain_broadcast(*shapes, dtype=dtype)
    cap = _check_cap(max_elements, "draw_broadcast")
    itemsize = report.itemsize
    dtype_name = str(report.dtype).replace("torch.", "")
    panels: list[_Panel] = []
    op_cells: dict[str, tuple[np.ndarray, list[str], tuple[int, ...]]] = {}
    for op in report.operands:
        if report.ok and report.result_shape is not None and op.expanded_stride is not None:
            shape, stride = report.result_shape, op.expanded_stride
            head2 = (f"stride {stride}: allocated {op.allocated_bytes} B, looks like "
                     f"{op.logical_bytes} B")
            head1 = f"{op.name}: {op.shape} → {shape}"
        else:
            shape = op.shape
            stride = tuple(torch.empty(shape, device="meta").stride())
            head1, head2 = f"{op.name}: {op.shape}", f"{op.allocated_bytes} B"
        numel = math.prod(shape)
        header = [(head1, {"fontsize": FS_TEXT, "weight": "bold"}),
                  (head2, {"fontsize": FS_SMALL, "color": MUTED})]
        if numel == 0:
            panels.append(_Panel(header, None, np.zeros((0, 4)), np.zeros(0, bool), [],
                                 empty="(0 elements)"))
            continue
        grid = _grid(shape, cap)
        sidx = grid.index @ np.asarray(stride, dtype=np.int64)
        stretched = list(op.stretched_dims)
        repeat = (grid.index[:, stretched] > 0).any(axis=1) if stretched \
            else np.zeros(len(sidx), dtype=bool)
        own = max(math.prod(op.shape), 1)
        colours = _colours(sidx, 0, own - 1)
        if repeat.any():
            colours[repeat] = _colours(sidx[repeat], 0, own - 1, fade=0.8)
        panels.append(_Panel(header, grid, colours, repeat, [str(int(s)) for s in sidx]))
        op_cells[op.name] = (grid.index, [f"{int(s)} (repeat)" if rep
                                          else str(int(s)) for s, rep in zip(sidx, repeat)],
                             shape)
    if report.ok and report.result_shape is not None:
        shape = report.result_shape
        numel = math.prod(shape)
        header = [(f"result: {shape}", {"fontsize": FS_TEXT, "weight": "bold"}),
                  (f"new memory: {numel} × {itemsize} B = {report.result_bytes} B",
                   {"fontsize": FS_SMALL, "color": MUTED})]
        if numel == 0:
            panels.append(_Panel(header, None, np.zeros((0, 4)), np.zeros(0, bool), [],
                                 empty="(0 elements)"))
        else:
            grid = _grid(shape, cap)
            strides = torch.empty(shape, device="meta").stride()
            flat = grid.index @ np.asarray(strides, dtype=np.int64)
            panels.append(_Panel(header, grid, np.tile(np.asarray(RESULT_BLUE), (len(flat), 1)),
                                 np.zeros(len(flat), dtype=bool), [str(int(s)) for s in flat]))

    shapes_text = " with ".join(f"{op.name} {op.shape}" for op in report.operands)
    heading: list[tuple[str, dict[str, Any]]] = []
    if report.ok:
        heading.append((f"broadcast {shapes_text} → {report.result_shape}   ({dtype_name})",
                        {"fontsize": FS_TITLE, "weight": "bold"}))
    else:
        heading.append((f"cannot broadcast {shapes_text}", {"fontsize": FS_TITLE,
                                                            "weight": "bold", "color": RED}))
    heading.append((report.table(), {"fontsize": FS_TEXT, "family": "monospace"}))
    if not report.ok:
        wrapped = textwrap.fill("torch: " + (report.error or ""), 100)
        heading.append((wrapped, {"fontsize": FS_TEXT, "color": RED}))

    widths = sum(p.grid.w for p in panels if p.grid is not None) + 1.0 * len(panels)
    cell = _cell_size(widths)
    scene = _Scene()
    y = scene.lines(MARGIN_IN, MARGIN_IN, heading) + 0.12
    y = _flow(scene, panels, MARGIN_IN, y, cell) + 0.25
    legend = "Numbers: which element of the operand's own storage a cell reads."
    if report.ok and any(op.stretched_dims for op in report.operands):
        legend += ("\nFaded, hatched: not allocated, the cell re-reads a real one through "
                   "stride 0. Only the result allocates new memory.")
    y = scene.lines(MARGIN_IN, y, [(legend, {"fontsize": FS_SMALL, "color": MUTED})])
    scene.height = y
    fig = scene.render()
    fig.alt, fig.description = _broadcast_text(report, op_cells)
    return fig


def _broadcast_text(report: Any, op_cells: dict[str, tuple[np.ndarray, list[str],
                                                           tuple[int, ...]]]) -> tuple[str, Doc]:
    """The alt text and the full description of a :func:`draw_broadcast` figure."""
    dtype = str(report.dtype).replace("torch.", "")
    shapes = " with ".join(f"{op.name} {op.shape}" for op in report.operands)
    if report.ok:
        stretched = [f"{op.name} is stretched along dim{'s' if len(op.stretched_dims) > 1 else ''} "
                     f"{', '.join(map(str, op.stretched_dims))} (stride 0, no new memory)"
                     for op in report.operands if op.stretched_dims]
        alt = (f"Broadcasting {shapes} gives shape {report.result_shape} ({dtype}): "
               + ("; ".join(stretched) if stretched else "no operand is stretched")
               + f". Only the result allocates new memory: {report.result_bytes} B.")
    else:
        alt = f"Cannot broadcast {shapes}: torch says {report.error}"
    doc = Doc().heading("Broadcasting, dim by dim (shapes aligned on the right)")
    rows = report.rows()
    doc.table("Sizes per dim", ["", *[f"dim {d.dim}" for d in report.dims]],
              [[name, *cells] for name, cells in rows])
    doc.items([f"dim {d.dim}: {d.detail}" for d in report.dims])
    if not report.ok:
        doc.para(f"torch: {report.error}")
    doc.heading("Operands")
    items = []
    for op in report.operands:
        if report.ok:
            where = (f"stretched along dim{'s' if len(op.stretched_dims) > 1 else ''} "
                     f"{', '.join(map(str, op.stretched_dims))}: those cells repeat elements "
                     "it already has" if op.stretched_dims else "already full size")
            items.append(f"{op.name} {op.shape} → {report.result_shape}: stride after expand "
                         f"{op.expanded_stride}; {where}; allocated {op.allocated_bytes} B, "
                         f"looks like {op.logical_bytes} B")
        else:
            items.append(f"{op.name} {op.shape}: {op.allocated_bytes} B")
    if report.ok:
        items.append(f"result {report.result_shape}: new memory, {report.result_bytes} B")
    doc.items(items)
    for name, (index, texts, shape) in op_cells.items():
        for caption, header, rows_ in cells_tables(
                index, texts, shape, f"{name}: the element of {name}'s own storage each cell "
                                     "reads; (repeat) marks a stretched cell, which re-reads "
                                     "that element and has no memory of its own"):
            doc.table(caption, header, rows_)
    return alt, doc
