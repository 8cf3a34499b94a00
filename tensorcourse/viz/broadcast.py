"""Broadcasting, explained dim by dim, with the bytes it does (not) cost.

Shapes are aligned on the right; in each dim the sizes must be equal, or 1 (that
operand is *stretched*: stride 0, no copy), or missing (treated as 1). The verdict
and the error text come from torch itself (``torch.broadcast_shapes``), and the
strides of the stretched operands from a real ``expand``, so the report cannot
disagree with what torch does.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass
from typing import Any

import torch

from ._inputs import parse_ints

__all__ = ["BroadcastReport", "DimRule", "OperandInfo", "explain_broadcast", "parse_dtype"]

NAMES = ("a", "b", "c")

# Rules, in the order a dim is classified: the first that applies wins.
INCOMPATIBLE = "incompatible"
MISSING = "missing"
STRETCHED = "stretched from 1"
EQUAL = "equal"


def parse_dtype(dtype: Any) -> torch.dtype:
    """``torch.float32`` or its name (``"float32"``, ``"torch.int8"``); ``ValueError`` otherwise."""
    if isinstance(dtype, torch.dtype):
        return dtype
    if isinstance(dtype, str):
        value = getattr(torch, dtype.replace("torch.", "").strip(), None)
        if isinstance(value, torch.dtype):
            return value
    raise ValueError(f"dtype must be a torch.dtype such as torch.float32 (or its name), "
                     f"got {dtype!r}")


@dataclass(frozen=True)
class DimRule:
    """One aligned dim. ``dim`` counts from the right (-1 is the last dim)."""

    dim: int
    sizes: tuple[int | None, ...]  # each operand's size here; None = the operand has no such dim
    result: int | None  # the broadcast size, None when incompatible
    rule: str  # "equal" | "stretched from 1" | "missing" | "incompatible"
    detail: str


@dataclass(frozen=True)
class OperandInfo:
    """One operand: its shape, its expanded strides and what it really occupies."""

    name: str
    shape: tuple[int, ...]
    aligned: tuple[int | None, ...]  # padded on the left with None to the common rank
    expanded_stride: tuple[int, ...] | None  # strides after expand() to the result shape
    allocated_bytes: int  # the operand's own storage: unchanged by expand
    logical_bytes: int | None  # what it *looks* like once expanded: result numel × itemsize
    # Dims of the result (counted from the left) this operand is stretched along:
    # it has size 1 or no dim there, the result has size > 1.
    stretched_dims: tuple[int, ...] = ()


@dataclass(frozen=True)
class BroadcastReport:
    """The result of :func:`explain_broadcast`.

    ``ok`` and ``result_shape`` are torch's verdict; ``error`` is torch's message
    from ``torch.broadcast_shapes`` and ``op_error`` the one an elementwise op
    such as ``a + b`` raises, both verbatim.
    """

    shapes: tuple[tuple[int, ...], ...]
    dtype: torch.dtype
    ok: bool
    result_shape: tuple[int, ...] | None
    dims: tuple[DimRule, ...]
    operands: tuple[OperandInfo, ...]
    result_bytes: int | None  # what the output of an elementwise op allocates
    error: str | None
    op_error: str | None

    @property
    def itemsize(self) -> int:
        return torch.empty((), dtype=self.dtype).element_size()

    @property
    def rank(self) -> int:
        return len(self.dims)

    def rows(self) -> list[tuple[str, list[str]]]:
        """The right-aligned table as text cells: one row per operand, then result and rule."""
        def cell(x: int | None) -> str:
            return "" if x is None else str(x)

        rows = [(op.name, [cell(x) for x in op.aligned]) for op in self.operands]
        rows.append(("result", [cell(d.result) if d.result is not None else "✗"
                                for d in self.dims]))
        rows.append(("rule", [d.rule for d in self.dims]))
        return rows

    def table(self) -> str:
        """The right-aligned table in monospace text."""
        rows = self.rows()
        width = [max(len(r[1][k]) for r in rows) for k in range(self.rank)]
        head = max(len(r[0]) for r in rows)
        lines = []
        for name, cells in rows:
            body = "  ".join(c.rjust(w) for c, w in zip(cells, width))
            lines.append(f"{name + ':':<{head + 1}}  {body}")
        return "\n".join(lines)

    def __str__(self) -> str:
        shapes = " with ".join(str(s) for s in self.shapes)
        if self.ok:
            head = f"broadcast {shapes} -> {self.result_shape}"
        else:
            head = f"broadcast {shapes} fails: {self.error}"
        lines = [head, self.table()]
        lines += [f"dim {d.dim}: {d.detail}" for d in self.dims]
        if self.ok:
            for op in self.operands:
                lines.append(f"{op.name}: stride after expand {op.expanded_stride}; allocated "
                             f"{op.allocated_bytes} B, looks like {op.logical_bytes} B")
            lines.append(f"result allocates {self.result_bytes} B ({self.dtype})")
        return "\n".join(lines)

    def to_html(self) -> str:
        """The report as an HTML fragment (the broadcast explorer shows it)."""
        esc = html.escape
        rows = self.rows()
        out = ['<table style="border-collapse:collapse;font-family:monospace">']
        for name, cells in rows:
            tds = "".join(
                f'<td style="padding:2px 10px;text-align:right;'
                f'{"color:#b00020;font-weight:bold" if c in ("✗", INCOMPATIBLE) else ""}">'
                f"{esc(c)}</td>" for c in cells)
            out.append(f'<tr><th style="text-align:left;padding:2px 10px">{esc(name)}</th>'
                       f"{tds}</tr>")
        out.append("</table>")
        if self.ok:
            out.append(f"<p><b>result shape {self.result_shape}</b>; an elementwise op "
                       f"allocates {self.result_bytes:,} B ({esc(str(self.dtype))}).</p><ul>")
            for op in self.operands:
                note = ("stretched: stride 0 where it repeats, <b>no new memory</b>"
                        if op.stretched_dims else "already full size")
                out.append(f"<li><code>{op.name}</code> {op.shape} → expand → stride "
                           f"{op.expanded_stride}: allocated {op.allocated_bytes:,} B, looks "
                           f"like {op.logical_bytes:,} B ({note})</li>")
            out.append("</ul>")
        else:
            out.append(f'<p style="color:#b00020"><b>torch.broadcast_shapes:</b> '
                       f"{esc(self.error or '')}</p>")
            if self.op_error:
                out.append(f'<p style="color:#b00020"><b>a + b:</b> {esc(self.op_error)}</p>')
        out.append("<ul>" + "".join(f"<li>dim {d.dim}: {esc(d.detail)}</li>"
                                    for d in self.dims) + "</ul>")
        return "".join(out)


def _read_shape(shape: Any, name: str) -> tuple[int, ...]:
    if isinstance(shape, torch.Tensor):
        return tuple(shape.shape)
    try:
        dims = parse_ints(shape, f"shape {name}")
    except ValueError as err:
        if isinstance(shape, (str, list, tuple, torch.Size)):
            raise
        raise TypeError(f"explain_broadcast(): shape {name} must be a tuple of ints such as "
                        f"(3, 1), a torch.Size or a tensor; got {type(shape).__name__}") from err
    if any(d < 0 for d in dims):
        raise ValueError(f"shape {name} = {dims} has a negative size; sizes are >= 0")
    return dims


def _classify(sizes: tuple[int | None, ...]) -> tuple[str, int | None, str]:
    present = [s for s in sizes if s is not None]
    big = sorted({s for s in present if s != 1})
    names = NAMES[: len(sizes)]
    if len(big) > 1:
        parts = ", ".join(f"{n}={s}" for n, s in zip(names, sizes) if s is not None)
        return INCOMPATIBLE, None, f"{parts}: two different sizes, neither is 1, so no rule applies"
    result = big[0] if big else 1
    words = []
    for n, s in zip(names, sizes):
        if s is None:
            words.append(f"{n} has no dim here: treated as 1"
                         + (f", stretched to {result}" if result != 1 else ""))
        elif s == result:
            words.append(f"{n}={s} kept")
        else:
            words.append(f"{n}=1 stretched to {result} (stride 0)")
    if any(s is None for s in sizes):
        rule = MISSING
    elif any(s != result for s in present):
        rule = STRETCHED
    else:
        rule = EQUAL
    return rule, result, "; ".join(words)


def explain_broadcast(*shapes: Any, dtype: Any = torch.float32) -> BroadcastReport:
    """Explain how 2 or 3 shapes broadcast (or why they cannot), with bytes for ``dtype``.

    Each shape is a tuple of ints, a ``torch.Size``, a tensor (its shape is used)
    or text such as ``"3, 1"``. Raises ``ValueError`` for fewer than 2 or more than
    3 shapes, a negative size or an unknown dtype, ``TypeError`` for a shape of
    the wrong type. Incompatible shapes do not raise: the report has ``ok=False``
    and torch's message in ``error``.
    """
    if not 2 <= len(shapes) <= 3:
        raise ValueError(f"explain_broadcast() takes 2 or 3 shapes, got {len(shapes)}, e.g. "
                         "explain_broadcast((3, 1), (4,))")
    dims_in = tuple(_read_shape(s, n) for s, n in zip(shapes, NAMES))
    dt = parse_dtype(dtype)
    itemsize = torch.empty((), dtype=dt).element_size()
    rank = max(len(s) for s in dims_in)
    aligned = tuple((None,) * (rank - len(s)) + tuple(s) for s in dims_in)

    rules = []
    for k in range(rank):
        sizes = tuple(a[k] for a in aligned)
        rule, result, detail = _classify(sizes)
        rules.append(DimRule(dim=k - rank, sizes=sizes, result=result, rule=rule, detail=detail))

    # The verdict is torch's, not ours: the per-dim rules above are the explanation.
    try:
        result_shape: tuple[int, ...] | None = tuple(torch.broadcast_shapes(*dims_in))
        error = op_error = None
    except RuntimeError as err:
        result_shape, error = None, str(err)
        # What a learner sees from `a + b`: an elementwise op on expanded 0-d tensors
        # raises the same error without allocating the operands.
        op_error = None
        try:
            fakes = [torch.empty((), dtype=dt).expand(s) for s in dims_in]
            total = fakes[0]
            for other in fakes[1:]:
                total = total + other
        except RuntimeError as op_err:
            op_error = str(op_err)

    operands = []
    for name, shape, al in zip(NAMES, dims_in, aligned):
        allocated = math.prod(shape) * itemsize
        if result_shape is not None:
            # A real expand, on the meta device so even huge shapes cost no memory:
            # torch computes the strides (0 where stretched) and the storage size.
            real = torch.empty(shape, dtype=dt, device="meta")
            expanded = real.expand(result_shape)
            stride: tuple[int, ...] | None = tuple(expanded.stride())
            allocated = expanded.untyped_storage().nbytes()
            logical: int | None = expanded.numel() * itemsize
        else:
            stride, logical = None, None
        stretched = () if result_shape is None else tuple(
            k for k, (mine, out) in enumerate(zip(al, result_shape))
            if mine in (None, 1) and out > 1)
        operands.append(OperandInfo(name=name, shape=shape, aligned=al, expanded_stride=stride,
                                    allocated_bytes=allocated, logical_bytes=logical,
                                    stretched_dims=stretched))
    result_bytes = math.prod(result_shape) * itemsize if result_shape is not None else None
    return BroadcastReport(shapes=dims_in, dtype=dt, ok=result_shape is not None,
                           result_shape=result_shape, dims=tuple(rules),
                           operands=tuple(operands), result_bytes=result_bytes,
                           error=error, op_error=op_error)
