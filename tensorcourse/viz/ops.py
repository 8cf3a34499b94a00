"""The operations of the layout explorer, as a pure, testable layer.

:func:`apply_op` runs one real torch operation on a real tensor and reports what
happened to the layout: the result's shape, strides, offset, contiguity, and
whether it still shares storage with its input. Sharing is read off the real
tensors (``untyped_storage().data_ptr()``), never from a table of "which ops are
views", so the explorer cannot teach something torch does not do.

When torch refuses an operation the result carries torch's own message and an
explanation in plain words; for a failing ``view`` it also runs ``reshape`` to
show that it succeeds by copying.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import torch

from ._inputs import parse_ints, require_tensor, storage_numel
from .layout import expanded_dims, shares_storage, storage_index_map

__all__ = ["OPS", "OpResult", "OpSpec", "Param", "apply_op", "default_params", "view_blockers"]


@dataclass(frozen=True)
class Param:
    """One parameter of an operation: ``kind`` is ``"int"`` or ``"ints"`` (a tuple)."""

    name: str
    kind: str
    help: str


@dataclass(frozen=True)
class OpSpec:
    """An explorer operation: its parameters and what it does to the layout, in one line."""

    name: str
    label: str
    params: tuple[Param, ...]
    doc: str


def _p(name: str, kind: str, help: str) -> Param:
    return Param(name, kind, help)


_DIM = _p("dim", "int", "which dim")
OPS: dict[str, OpSpec] = {spec.name: spec for spec in (
    OpSpec("view", "view(shape)", (_p("shape", "ints", "new shape, -1 = infer"),),
           "same storage, new shape; fails if no strides can describe it"),
    OpSpec("reshape", "reshape(shape)", (_p("shape", "ints", "new shape, -1 = infer"),),
           "a view when possible, otherwise a copy"),
    OpSpec("transpose", "transpose(dim0, dim1)",
           (_p("dim0", "int", "first dim"), _p("dim1", "int", "second dim")),
           "swaps two dims' sizes and strides; no data moves"),
    OpSpec("permute", "permute(dims)", (_p("dims", "ints", "new order of the dims"),),
           "reorders sizes and strides; no data moves"),
    OpSpec("slice", "t[..., start:stop:step]",
           (_DIM, _p("start", "int", "first index"), _p("stop", "int", "end (exclusive)"),
            _p("step", "int", "step > 0")),
           "offset moves to start, stride is multiplied by step"),
    OpSpec("narrow", "narrow(dim, start, length)",
           (_DIM, _p("start", "int", "first index"), _p("length", "int", "how many")),
           "a contiguous range of one dim: offset moves, strides stay"),
    OpSpec("select", "select(dim, index)", (_DIM, _p("index", "int", "which index")),
           "drops a dim: offset moves by index·stride"),
    OpSpec("unsqueeze", "unsqueeze(dim)", (_DIM,), "adds a size-1 dim"),
    OpSpec("expand", "expand(shape)", (_p("shape", "ints", "target shape, -1 = keep"),),
           "stretches size-1 dims with stride 0: nothing is allocated"),
    OpSpec("diagonal", "diagonal(offset, dim1, dim2)",
           (_p("offset", "int", "which diagonal"), _p("dim1", "int", "first dim"),
            _p("dim2", "int", "second dim")),
           "one stride that steps down and right at once: stride = stride1 + stride2"),
    OpSpec("unfold", "unfold(dimension, size, step)",
           (_p("dimension", "int", "which dim"), _p("size", "int", "window length"),
            _p("step", "int", "window step")),
           "sliding windows as a new dim; windows may overlap in storage"),
    OpSpec("contiguous", "contiguous()", (),
           "returns the tensor itself if already contiguous, else a row-major copy"),
    OpSpec("as_strided", "as_strided(size, stride, storage_offset)",
           (_p("size", "ints", "shape"), _p("stride", "ints", "strides (>= 0)"),
            _p("storage_offset", "int", "offset into the whole storage")),
           "any shape/stride/offset over the same storage: you do the arithmetic"),
    OpSpec("index_select", "index_select(dim, indices)  (advanced indexing)",
           (_DIM, _p("indices", "ints", "which indices, in order")),
           "picks arbitrary indices: always copies"),
)}


def default_params(op: str, t: torch.Tensor) -> dict[str, Any]:
    """Sensible starting parameters for ``op`` on ``t`` (they run without error on most tensors)."""
    if op not in OPS:
        raise ValueError(f"unknown operation {op!r}; choose one of {', '.join(OPS)}")
    shape, nd = tuple(t.shape), t.dim()
    last = max(nd - 1, 0)
    size_last = shape[-1] if nd else 1
    size_0 = shape[0] if nd else 1
    if op in ("view", "reshape"):
        return {"shape": (-1,)}
    if op == "transpose":
        return {"dim0": 0, "dim1": 1 if nd > 1 else 0}
    if op == "permute":
        return {"dims": tuple(reversed(range(nd)))}
    if op == "slice":
        return {"dim": last, "start": 0, "stop": size_last, "step": 2}
    if op == "narrow":
        return {"dim": 0, "start": min(1, size_0 - 1), "length": max(1, min(2, size_0 - 1))}
    if op == "select":
        return {"dim": 0, "index": min(1, size_0 - 1)}
    if op == "unsqueeze":
        return {"dim": 0}
    if op == "expand":
        return {"shape": (3, *shape)}
    if op == "diagonal":
        return {"offset": 0, "dim1": 0, "dim2": 1 if nd > 1 else 0}
    if op == "unfold":
        size = max(1, min(3, size_last))
        return {"dimension": last, "size": size, "step": max(1, size - 1)}
    if op == "as_strided":
        return {"size": shape, "stride": tuple(t.stride()), "storage_offset": t.storage_offset()}
    if op == "index_select":
        return {"dim": 0, "indices": (size_0 - 1, 0) if size_0 > 1 else (0,)}
    return {}


@dataclass(frozen=True)
class OpResult:
    """What one operation did to a tensor's layout.

    ``result`` is the real tensor torch returned, or ``None`` when torch refused;
    then ``error`` explains why in plain words and ``torch_message`` is torch's own
    text. For a failing ``view``, ``reshape_result`` is what ``reshape`` returns
    instead and ``reshape_shares_storage`` says whether it copied (it does).
    """

    op: str
    params: dict[str, Any]
    code: str
    input_shape: tuple[int, ...]
    input_stride: tuple[int, ...]
    input_offset: int
    result: torch.Tensor | None = None
    shape: tuple[int, ...] | None = None
    stride: tuple[int, ...] | None = None
    offset: int | None = None
    is_contiguous: bool | None = None
    shares_storage_with_input: bool | None = None
    error: str | None = None
    torch_message: str | None = None
    reshape_result: torch.Tensor | None = None
    reshape_shares_storage: bool | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def ok(self) -> bool:
        return self.result is not None

    def __str__(self) -> str:
        lines = [self.code]
        if self.ok:
            lines.append(f"  shape {self.shape}, stride {self.stride}, offset {self.offset}, "
                         f"contiguous: {'yes' if self.is_contiguous else 'no'}, shares storage "
                         f"with input: {'yes' if self.shares_storage_with_input else 'no'}")
        else:
            lines.append(f"  failed: {self.error}")
            if self.torch_message:
                lines.append(f"  torch says: {self.torch_message}")
        lines.extend(f"  {note}" for note in self.notes)
        return "\n".join(lines)


def _dim_ok(t: torch.Tensor, dim: int, what: str = "dim") -> str | None:
    nd = max(t.dim(), 1)
    if -nd <= dim < nd:
        return None
    return (f"{what} {dim} does not exist: this tensor has {t.dim()} dims "
            f"(valid: 0..{nd - 1}, or -{nd}..-1 counting from the end)")


def view_blockers(shape: tuple[int, ...], stride: tuple[int, ...]) -> list[str]:
    """Neighbouring dims that ``view`` cannot merge, each with the numbers that show why.

    ``view`` can merge dims ``a`` and ``b`` (the next dim of size > 1) only when
    they sit back to back in storage: ``stride[a] == size[b] · stride[b]``.
    Size-1 dims never block (they are never stepped along).
    """
    dims = [d for d, n in enumerate(shape) if n != 1]
    out = []
    for a, b in zip(dims, dims[1:]):
        need = shape[b] * stride[b]
        if stride[a] != need:
            out.append(f"dims {a} and {b}: stride[{a}] = {stride[a]}, but size[{b}]·stride[{b}] "
                       f"= {shape[b]}·{stride[b]} = {need}")
    return out


def _explain(t: torch.Tensor, op: str, params: dict[str, Any], message: str) -> str:
    """Plain words for torch's refusal (torch's own message is kept next to it)."""
    shape, stride = tuple(t.shape), tuple(t.stride())
    if "is invalid for input of size" in message:
        return (f"the new shape has a different number of elements than the tensor "
                f"({t.numel()}); {op} never adds or drops elements, only regroups them")
    if op == "view" and "view size is not compatible" in message:
        blockers = "; ".join(view_blockers(shape, stride)) or "the strides"
        return ("view() never copies: it must find new strides over the same storage. It can "
                "merge neighbouring dims only when they sit back to back in storage "
                "(stride[a] = size[b]·stride[b]). Here that fails for " + blockers + ", and "
                f"the shape {params.get('shape')} needs to merge across it, so no strides "
                "can describe it")
    if op == "as_strided" and "out of bounds for storage" in message:
        size, st = params["size"], params["stride"]
        n = storage_numel(t)
        last = tuple(max(k - 1, 0) for k in size)
        # No real tensor exists to ask, so do the address arithmetic by hand.
        terms = [str(params["storage_offset"])] + [f"{i}·{s}" for i, s in zip(last, st)]
        end = params["storage_offset"] + sum(i * s for i, s in zip(last, st))
        return (f"the last element {last} would read storage element {' + '.join(terms)} = "
                f"{end}, but the storage has only {n} elements (0..{n - 1}). as_strided "
                "checks against the whole storage, not the input's shape, and refuses to "
                f"read outside it (torch's message counts bytes: {n} elements × "
                f"{t.element_size()} B = {n * t.element_size()} B)")
    if "must match the existing size" in message:
        return ("expand can only stretch dims of size 1 (or add new dims in front); a dim "
                "that already has size > 1 must keep its size (use -1 to keep it)")
    if "Negative strides" in message:
        return "PyTorch tensors cannot have negative strides (flip() copies instead)"
    if "step cannot be zero" in message:
        return "a slice step of 0 would never move; use a step of 1 or more"
    if "step must be greater than zero" in message:
        return "PyTorch slices need a step > 0 (there are no negative strides; flip() copies)"
    if "Dimension out of range" in message:
        return f"that dim does not exist: the tensor has {t.dim()} dims"
    if "out of range" in message or "exceeds dimension size" in message \
            or "maximum size for tensor" in message or "out of DATA bounds" in message:
        return "an index, start or length goes past the end of that dim"
    if "duplicate dims" in message or "dims don't match" in message:
        return "permute needs every dim exactly once, e.g. 1, 0 for a 2-D tensor"
    return "torch refused this operation; its message is below"


def _code(op: str, p: dict[str, Any], nd: int) -> str:
    def tup(x: tuple[int, ...]) -> str:
        return "(" + ", ".join(map(str, x)) + ("," if len(x) == 1 else "") + ")"

    def args(x: tuple[int, ...]) -> str:
        return "(" + ", ".join(map(str, x)) + ")" if x else "(())"

    if op in ("view", "reshape", "expand"):
        return f"t.{op}{args(p['shape'])}"
    if op == "permute":
        return f"t.permute{args(p['dims'])}"
    if op == "slice":
        dim = p["dim"] % nd if -nd <= p["dim"] < nd else 0
        stop = "" if p["stop"] is None else str(p["stop"])
        where = ":, " * dim if -nd <= p["dim"] < nd else f"<dim {p['dim']}>: "
        return "t[" + where + f"{p['start']}:{stop}:{p['step']}]"
    if op == "as_strided":
        return f"t.as_strided({tup(p['size'])}, {tup(p['stride'])}, {p['storage_offset']})"
    if op == "index_select":
        return f"t.index_select({p['dim']}, torch.tensor({list(p['indices'])}))"
    args = ", ".join(str(p[q.name]) for q in OPS[op].params)
    return f"t.{op}({args})"


_RUN: dict[str, Callable[[torch.Tensor, dict[str, Any]], torch.Tensor]] = {
    "view": lambda t, p: t.view(p["shape"]),
    "reshape": lambda t, p: t.reshape(p["shape"]),
    "transpose": lambda t, p: t.transpose(p["dim0"], p["dim1"]),
    "permute": lambda t, p: t.permute(p["dims"]),
    "slice": lambda t, p: t[(slice(None),) * (p["dim"] % t.dim())
                            + (slice(p["start"], p["stop"], p["step"]),)],
    "narrow": lambda t, p: t.narrow(p["dim"], p["start"], p["length"]),
    "select": lambda t, p: t.select(p["dim"], p["index"]),
    "unsqueeze": lambda t, p: t.unsqueeze(p["dim"]),
    "expand": lambda t, p: t.expand(p["shape"]),
    "diagonal": lambda t, p: t.diagonal(p["offset"], p["dim1"], p["dim2"]),
    "unfold": lambda t, p: t.unfold(p["dimension"], p["size"], p["step"]),
    "contiguous": lambda t, p: t.contiguous(),
    "as_strided": lambda t, p: t.as_strided(p["size"], p["stride"], p["storage_offset"]),
    "index_select": lambda t, p: t.index_select(p["dim"], torch.tensor(p["indices"],
                                                                       dtype=torch.int64)),
}


def _read_params(op: str, t: torch.Tensor, given: dict[str, Any]) -> dict[str, Any]:
    spec = OPS[op]
    names = [q.name for q in spec.params]
    unknown = [k for k in given if k not in names]
    if unknown:
        takes = ", ".join(names) or "no parameters"
        raise TypeError(f"apply_op(t, {op!r}) takes {takes}; got unexpected {', '.join(unknown)}")
    params = {**default_params(op, t), **given}
    out: dict[str, Any] = {}
    for q in spec.params:
        value = params[q.name]
        if q.kind == "ints":
            out[q.name] = parse_ints(value, q.name)
        elif op == "slice" and q.name == "stop" and (value is None or value == ""):
            out[q.name] = None
        else:
            ints = parse_ints(value, q.name)
            if len(ints) != 1:
                raise ValueError(f"{q.name} must be one whole number, got {value!r}")
            out[q.name] = ints[0]
    return out


def apply_op(t: torch.Tensor, op: str, **params: Any) -> OpResult:
    """Run operation ``op`` on ``t`` with ``params`` and report the layout of the result.

    ``op`` is a key of :data:`OPS` (``"view"``, ``"transpose"``, ``"slice"``,
    ``"as_strided"``...). Missing parameters take :func:`default_params`; values
    may be ints, tuples or text such as ``"3, 8"`` (what the widget passes).

    Never raises for a refused operation or an unreadable value: the returned
    :class:`OpResult` has ``result=None`` and ``error`` (plain words) plus
    ``torch_message`` (torch's text). Raises ``TypeError`` if ``t`` is not a
    ``torch.Tensor`` or a parameter name is unknown, ``ValueError`` for an unknown
    ``op`` or a non-strided tensor.
    """
    t = require_tensor(t, "apply_op", allow_empty=True)
    if op not in OPS:
        raise ValueError(f"unknown operation {op!r}; choose one of {', '.join(OPS)}")
    base = {"op": op, "input_shape": tuple(t.shape), "input_stride": tuple(t.stride()),
            "input_offset": t.storage_offset()}
    try:
        p = _read_params(op, t, params)
    except ValueError as err:
        return OpResult(params=dict(params), code=f"t.{op}(...)", error=str(err), **base)
    code = _code(op, p, t.dim())
    if op == "slice":
        # Indexing with too many ``:`` gives a confusing message; say it in words.
        msg = _dim_ok(t, p["dim"])
        if msg is not None:
            return OpResult(params=p, code=code, error=msg, **base)
    try:
        with torch.no_grad():
            out = _RUN[op](t, p)
    except (RuntimeError, IndexError, ValueError, TypeError) as err:
        message = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        fallback = fallback_shares = None
        notes: tuple[str, ...] = ()
        if op == "view" and "view size is not compatible" in message:
            fallback = t.reshape(p["shape"])
            fallback_shares = shares_storage(fallback, t)
            notes = (f"{_code('reshape', p, t.dim())} works instead: it "
                     + ("copies the elements into new storage (shares storage with t: no)"
                        if not fallback_shares else "returns a view"),)
        return OpResult(params=p, code=code, error=_explain(t, op, p, message),
                        torch_message=message, reshape_result=fallback,
                        reshape_shares_storage=fallback_shares, notes=notes, **base)
    shared = shares_storage(out, t)
    notes_list = []
    for k in expanded_dims(out):
        notes_list.append(f"dim {k} has stride 0: all {out.shape[k]} indices read the same "
                          "elements, nothing was allocated for it")
    if out.numel() <= 200_000 and not expanded_dims(out):
        distinct = storage_index_map(out).unique().numel()
        if distinct < out.numel():
            notes_list.append(f"overlap: its {out.numel()} elements read only {distinct} distinct "
                              "storage elements, so some are read more than once (writing "
                              "through it is unsafe)")
    if op in ("contiguous", "reshape") and shared and out.data_ptr() == t.data_ptr() \
            and tuple(out.stride()) == tuple(t.stride()):
        notes_list.append(f"{op}() returned the input's layout unchanged over the same "
                          "storage: no copy was needed")
    elif not shared:
        notes_list.append(f"{op} copied: the result has its own new storage "
                          f"({out.untyped_storage().nbytes()} bytes)")
    return OpResult(
        params=p, code=code, result=out, shape=tuple(out.shape), stride=tuple(out.stride()),
        offset=out.storage_offset(), is_contiguous=out.is_contiguous(),
        shares_storage_with_input=shared, notes=tuple(notes_list), **base,
    )
