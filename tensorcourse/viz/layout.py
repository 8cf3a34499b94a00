"""What a strided tensor *is*: one flat storage read through shape, strides and offset.

Logical element ``t[i0, i1, ...]`` lives at storage element

    storage_offset + i0·stride[0] + i1·stride[1] + ...

(in element units, not bytes). Everything the drawings show is computed here from
a real tensor's metadata (``t.shape``, ``t.stride()``, ``t.storage_offset()``,
``t.untyped_storage()``), with no drawing code, so tests can check it against what
torch actually reads.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from ._inputs import parse_ints, require_tensor, storage_numel

__all__ = [
    "LayoutFacts",
    "address_formula",
    "describe_layout",
    "expanded_dims",
    "shares_storage",
    "storage_index",
    "storage_index_map",
    "storage_numel",
]


def _index_grid(offset: int, strides: Sequence[int], indices: Sequence[torch.Tensor]) -> torch.Tensor:
    """``offset + Σ_k indices[k]·strides[k]``, each index vector along its own dim."""
    out = torch.tensor(offset, dtype=torch.int64)
    ndim = len(indices)
    for k, (idx, step) in enumerate(zip(indices, strides)):
        shape = [1] * ndim
        shape[k] = -1
        out = out + idx.to(torch.int64).reshape(shape) * step
    # Broadcasting the sum already has the full shape, but it may be a view of
    # one row (a dim of size 1 stays size 1); make it a plain, independent tensor.
    return out.expand([len(i) for i in indices]).contiguous()


def storage_index_map(t: torch.Tensor) -> torch.Tensor:
    """The storage element each logical element of ``t`` reads.

    Returns an ``int64`` tensor of ``t``'s shape (on the CPU) whose entry at
    ``[i0, i1, ...]`` is ``t.storage_offset() + Σ_k i_k·t.stride()[k]``. So
    ``flat[storage_index_map(t)]`` equals ``t`` when ``flat`` is ``t``'s whole
    storage as a 1-D tensor. Works from metadata only (also for tensors on a GPU
    or the meta device) and for 0-element tensors (an empty map).

    Raises ``TypeError`` if ``t`` is not a ``torch.Tensor`` and ``ValueError`` if
    it is not strided (sparse, nested...).
    """
    t = require_tensor(t, "storage_index_map", allow_empty=True)
    return _index_grid(t.storage_offset(), t.stride(), [torch.arange(n) for n in t.shape])


def _normalize_index(t: torch.Tensor, index: Any) -> tuple[int, ...]:
    idx = parse_ints(index, "index")
    if len(idx) != t.dim():
        raise IndexError(
            f"index {idx} has {len(idx)} entries but the tensor has {t.dim()} dims "
            f"(shape {tuple(t.shape)}): give one index per dim"
        )
    out = []
    for k, (i, n) in enumerate(zip(idx, t.shape)):
        if not -n <= i < n:
            raise IndexError(
                f"index {i} is out of range for dim {k} of size {n} "
                f"(valid: 0..{n - 1}, or -{n}..-1 counting from the end)"
            )
        out.append(i % n)
    return tuple(out)


def storage_index(t: torch.Tensor, index: Any) -> int:
    """The storage element that ``t[index]`` reads (negative indices count from the end).

    ``index`` is a tuple of ints, or text such as ``"1, 3"``. Raises ``IndexError``
    when it has the wrong length or is out of range, ``ValueError`` when it is not
    whole numbers.
    """
    t = require_tensor(t, "storage_index")
    idx = _normalize_index(t, index)
    return t.storage_offset() + sum(i * s for i, s in zip(idx, t.stride()))


def address_formula(t: torch.Tensor, index: Any) -> str:
    """The address arithmetic for ``t[index]`` with its numbers, e.g. ``"2 + 1·6 + 3·1 = 11"``.

    Terms are ``index_k·stride_k`` in dim order after the storage offset, so the
    formula reads the same as the rule ``offset + Σ index_k · stride_k``.
    Raises ``IndexError`` and ``ValueError`` like :func:`storage_index`.
    """
    t = require_tensor(t, "address_formula")
    idx = _normalize_index(t, index)
    terms = [str(t.storage_offset())] + [f"{i}·{s}" for i, s in zip(idx, t.stride())]
    return f"{' + '.join(terms)} = {storage_index(t, idx)}"


def shares_storage(a: torch.Tensor, b: torch.Tensor) -> bool:
    """True when ``a`` and ``b`` read the same storage (one is a view of the other, or both of one base).

    Decided from the real tensors: same device and the same
    ``untyped_storage().data_ptr()``, the address of the first byte of the storage.
    """
    a = require_tensor(a, "shares_storage", allow_empty=True)
    b = require_tensor(b, "shares_storage", allow_empty=True)
    if a.device != b.device:
        return False
    pa, pb = a.untyped_storage().data_ptr(), b.untyped_storage().data_ptr()
    if pa == 0 or pb == 0:
        # No memory behind it (meta device, 0-byte storage): fall back to "is it the
        # very same storage object", which is what data_ptr stands in for.
        return a.untyped_storage()._cdata == b.untyped_storage()._cdata
    return pa == pb


def expanded_dims(t: torch.Tensor) -> tuple[int, ...]:
    """Dims with stride 0 and size > 1: every index along them reads the same elements.

    These are what ``expand`` and broadcasting create: the dim looks ``size`` long
    but no memory was allocated for it.
    """
    return tuple(k for k, (n, s) in enumerate(zip(t.shape, t.stride())) if s == 0 and n > 1)


@dataclass(frozen=True)
class LayoutFacts:
    """The numbers a layout drawing states about one tensor."""

    shape: tuple[int, ...]
    stride: tuple[int, ...]
    offset: int
    is_contiguous: bool
    dtype: torch.dtype
    itemsize: int
    numel: int
    storage_numel: int
    span: tuple[int, int] | None  # lowest and highest storage element read, None if empty
    expanded_dims: tuple[int, ...]

    @property
    def storage_bytes(self) -> int:
        return self.storage_numel * self.itemsize

    def headline(self) -> str:
        """One line: shape, stride, offset, contiguity, dtype."""
        dtype = str(self.dtype).replace("torch.", "")
        return (f"shape {self.shape}   stride {self.stride}   offset {self.offset}   "
                f"contiguous: {'yes' if self.is_contiguous else 'no'}   {dtype}")


def describe_layout(t: torch.Tensor) -> LayoutFacts:
    """Collect :class:`LayoutFacts` for ``t`` (metadata only, cheap for any size)."""
    t = require_tensor(t, "describe_layout", allow_empty=True)
    shape, stride, offset = tuple(t.shape), tuple(t.stride()), t.storage_offset()
    if t.numel():
        # Strides are never negative in PyTorch, so the extremes are the first and
        # last index along every dim.
        low = offset + sum(min(0, (n - 1) * s) for n, s in zip(shape, stride))
        high = offset + sum(max(0, (n - 1) * s) for n, s in zip(shape, stride))
        span: tuple[int, int] | None = (low, high)
    else:
        span = None
    return LayoutFacts(
        shape=shape, stride=stride, offset=offset, is_contiguous=t.is_contiguous(),
        dtype=t.dtype, itemsize=t.element_size(), numel=t.numel(),
        storage_numel=storage_numel(t), span=span, expanded_dims=expanded_dims(t),
    )
