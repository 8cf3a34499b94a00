"""Text alternatives for the figures: a short summary (``alt``) and a full description.

Every figure :mod:`tensorcourse.viz` draws is built from facts (shape, strides, offset,
which storage element each cell reads, what broadcasting stretched, the graph's nodes in
backward order). The same facts are written here as text, so a learner who cannot see
the image (a screen reader, a text browser, a printout) gets everything the image shows:

* :attr:`VizFigure.alt <tensorcourse.viz.draw.VizFigure.alt>`: one or two sentences, for
  an image's ``alt`` attribute;
* :meth:`VizFigure.describe() <tensorcourse.viz.draw.VizFigure.describe>`: the complete
  description as Markdown (``describe("html")`` as HTML): headings, lists and tables.

A description is a :class:`Doc`, a list of blocks (paragraphs, lists, tables) that renders
to both Markdown and HTML, so notebooks, the website and plain text say the same thing.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

__all__ = ["Doc", "cells_tables", "int_ranges"]


def int_ranges(values: Iterable[int], cap: int = 24) -> str:
    """``[0, 1, 2, 5, 7, 8]`` -> ``"0..2, 5, 7..8"``; at most ``cap`` runs, then ``…``."""
    vals = sorted(set(int(v) for v in values))
    runs: list[tuple[int, int]] = []
    for v in vals:
        if runs and v == runs[-1][1] + 1:
            runs[-1] = (runs[-1][0], v)
        else:
            runs.append((v, v))
    parts = [str(a) if a == b else f"{a}..{b}" for a, b in runs]
    if len(parts) > cap:
        parts = parts[: cap - 1] + ["…", parts[-1]]
    return ", ".join(parts) if parts else "none"


@dataclass
class Doc:
    """A small document: headings, paragraphs, lists, tables and preformatted text.

    Text is plain (no markup); :meth:`markdown` and :meth:`html` escape it for their format.
    """

    blocks: list[tuple] = field(default_factory=list)

    def heading(self, text: str) -> Doc:
        self.blocks.append(("h", text))
        return self

    def para(self, text: str) -> Doc:
        self.blocks.append(("p", text))
        return self

    def items(self, items: Sequence[str], ordered: bool = False) -> Doc:
        if items:
            self.blocks.append(("ol" if ordered else "ul", list(items)))
        return self

    def table(self, caption: str, header: Sequence[str], rows: Sequence[Sequence[str]]) -> Doc:
        self.blocks.append(("table", caption, list(header), [list(r) for r in rows]))
        return self

    def pre(self, text: str) -> Doc:
        """Preformatted text (a tree, an aligned table): kept as it is."""
        self.blocks.append(("pre", text))
        return self

    def extend(self, other: Doc) -> Doc:
        self.blocks.extend(other.blocks)
        return self

    # -- rendering -------------------------------------------------------------------------

    def markdown(self) -> str:
        def md(s: str) -> str:
            return s.replace("\\", "\\\\").replace("|", "\\|").replace("*", "\\*") \
                .replace("_", "\\_").replace("<", "&lt;")

        out: list[str] = []
        for block in self.blocks:
            kind = block[0]
            if kind == "h":
                out.append(f"**{md(block[1])}**")
            elif kind == "pre":
                out.append("```text\n" + block[1] + "\n```")
            elif kind == "p":
                out.append(md(block[1]))
            elif kind in ("ul", "ol"):
                out.append("\n".join((f"{k + 1}. " if kind == "ol" else "- ") + md(item)
                                     for k, item in enumerate(block[1])))
            else:
                _, caption, header, rows = block
                lines = [md(caption) + ":", "",
                         "| " + " | ".join(md(h) for h in header) + " |",
                         "|" + "---|" * len(header)]
                lines += ["| " + " | ".join(md(c) for c in row) + " |" for row in rows]
                out.append("\n".join(lines))
        return "\n\n".join(out) + "\n"

    def html(self) -> str:
        esc = html.escape
        out: list[str] = []
        for block in self.blocks:
            kind = block[0]
            if kind == "h":
                out.append(f"<p><strong>{esc(block[1])}</strong></p>")
            elif kind == "pre":
                out.append(f"<pre>{esc(block[1])}</pre>")
            elif kind == "p":
                out.append(f"<p>{esc(block[1])}</p>")
            elif kind in ("ul", "ol"):
                out.append(f"<{kind}>" + "".join(f"<li>{esc(i)}</li>" for i in block[1])
                           + f"</{kind}>")
            else:
                _, caption, header, rows = block
                head = "".join(f'<th scope="col">{esc(h)}</th>' for h in header)
                body = "".join(
                    "<tr>" + "".join((f'<th scope="row">{esc(c)}</th>' if k == 0 else
                                      f"<td>{esc(c)}</td>") for k, c in enumerate(row)) + "</tr>"
                    for row in rows)
                out.append(f'<table class="tio-described"><caption>{esc(caption)}</caption>'
                           f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")
        return "".join(out)

    def text(self) -> str:
        """Plain text (for ``text/plain``): the Markdown without its escapes."""
        out: list[str] = []
        for block in self.blocks:
            kind = block[0]
            if kind in ("h", "p", "pre"):
                out.append(block[1])
            elif kind in ("ul", "ol"):
                out.append("\n".join((f"{k + 1}. " if kind == "ol" else "- ") + item
                                     for k, item in enumerate(block[1])))
            else:
                _, caption, header, rows = block
                table = [header] + rows
                width = [max(len(r[k]) for r in table) for k in range(len(header))]
                out.append(caption + ":\n" + "\n".join(
                    "  ".join(c.rjust(w) for c, w in zip(r, width)) for r in table))
        return "\n\n".join(out)


def cells_tables(index: np.ndarray, texts: Sequence[str], shape: tuple[int, ...],
                 what: str) -> list[tuple[str, list[str], list[list[str]]]]:
    """Tables of what each drawn cell says: one per slice ``[i, j, :, :]``, dim -2 down.

    ``index`` is the (n, ndim) logical index of each drawn cell, ``texts`` what it shows.
    Cells the drawing left out (long dims are elided) appear as ``…`` rows and columns.
    Returns ``(caption, header, rows)`` triples; ``what`` names the content (caption).
    """
    nd = len(shape)
    if nd == 0:
        return [(what, ["element", "reads"], [["the only element ()", texts[0]]])]
    by_cell = {tuple(int(i) for i in row): t for row, t in zip(index, texts)}

    def with_gaps(values: Iterable[int]) -> list[int | None]:
        out: list[int | None] = []
        for v in sorted(set(values)):
            if out and out[-1] is not None and v > out[-1] + 1:
                out.append(None)
            out.append(v)
        return out

    lead_of = sorted({k[:-2] for k in by_cell}) if nd >= 2 else [()]
    tables = []
    for lead in lead_of:
        keys = [k for k in by_cell if (k[:-2] if nd >= 2 else ()) == lead]
        cols = with_gaps(k[-1] for k in keys)
        rows_ = with_gaps(k[-2] for k in keys) if nd >= 2 else [None]
        header = ([f"dim {nd - 2} down, dim {nd - 1} across"] if nd >= 2 else ["index"]) + [
            "…" if c is None else f"{c}" for c in cols]
        body = []
        for r in rows_:
            if nd >= 2 and r is None:
                body.append(["…"] + ["…"] * len(cols))
                continue
            label = f"row {r}" if nd >= 2 else "reads"
            cells = []
            for c in cols:
                key = (*lead, r, c) if nd >= 2 else (c,)
                cells.append("…" if c is None else by_cell.get(key, "…"))
            body.append([label] + cells)
        where = f" in slice [{', '.join(map(str, lead))}, :, :]" if lead else ""
        tables.append((what + where, header, body))
    return tables
