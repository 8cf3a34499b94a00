"""Argument checks shared by the visualizers, with messages that say what to do.

Learners call these functions from notebooks, so a wrong argument must fail at
once with a message naming the fix, not deep inside matplotlib or torch.
"""

from __future__ import annotations

import operator
import re
from typing import Any

import torch

__all__ = ["require_tensor", "parse_ints", "storage_numel"]

_EXAMPLE = "torch.tensor([[1, 2], [3, 4]])"


def _type_name(x: Any) -> str:
    cls = type(x)
    module = cls.__module__
    return cls.__qualname__ if module == "builtins" else f"{module}.{cls.__qualname__}"


def require_tensor(t: Any, fn: str, *, allow_empty: bool = False) -> torch.Tensor:
    """Return ``t`` when it is a strided ``torch.Tensor`` a layout drawing can show.

    Raises ``TypeError`` for anything that is not a ``torch.Tensor`` (a list, a
    NumPy array...) and ``ValueError`` for a sparse, nested or otherwise
    non-strided tensor and, unless ``allow_empty``, for a tensor with 0 elements.
    """
    if not isinstance(t, torch.Tensor):
        hint = f"pass a torch.Tensor, e.g. {_EXAMPLE}"
        if type(t).__module__ == "numpy":
            hint += " or torch.from_numpy(array)"
        raise TypeError(f"{fn}() needs a torch.Tensor, got {_type_name(t)}: {hint}.")
    if t.is_nested or t.layout != torch.strided:
        layout = "nested" if t.is_nested else str(t.layout)
        raise ValueError(
            f"{fn}(): this tensor's layout is {layout}; only strided (dense) tensors have "
            "a shape, strides and a storage offset over one flat storage. "
            "Convert it first, e.g. t.to_dense()."
        )
    if not allow_empty and t.numel() == 0:
        raise ValueError(
            f"{fn}(): the tensor has 0 elements (shape {tuple(t.shape)}), so there is no "
            "element to draw. Use a tensor with at least one element, e.g. "
            "torch.arange(6).reshape(2, 3)."
        )
    return t


def storage_numel(t: torch.Tensor) -> int:
    """How many elements of ``t``'s dtype fit in its whole storage (not just ``t``'s view)."""
    return t.untyped_storage().nbytes() // t.element_size()


_SEPARATORS = re.compile(r"[\s,]+")


def parse_ints(value: Any, what: str) -> tuple[int, ...]:
    """Read a tuple of ints from ``"3, 4"``, ``"(3, 4)"``, ``[3, 4]``, ``torch.Size`` or ``5``.

    The widgets pass text typed by a learner, Python callers pass sequences; both
    end up here. Raises ``ValueError`` naming ``what`` and an example on bad input.
    """
    if isinstance(value, str):
        body = value.strip().strip("()[]").strip()
        parts = [p for p in _SEPARATORS.split(body) if p]
        try:
            return tuple(int(p) for p in parts)
        except ValueError:
            raise ValueError(
                f"could not read {what} from {value!r}: write whole numbers separated by "
                "commas, e.g. 3, 4"
            ) from None
    if isinstance(value, bool):
        raise ValueError(f"{what} must be whole numbers, got {value!r}")
    if isinstance(value, torch.Tensor):
        value = value.tolist() if value.dim() else [value.item()]
    try:
        return (operator.index(value),)
    except TypeError:
        pass
    try:
        items = list(value)
    except TypeError:
        raise ValueError(
            f"{what} must be whole numbers, e.g. (3, 4); got {_type_name(value)}"
        ) from None
    out = []
    for item in items:
        if isinstance(item, bool):
            raise ValueError(f"{what} must be whole numbers, got {item!r} in {value!r}")
        try:
            out.append(operator.index(item))
        except TypeError:
            raise ValueError(
                f"{what} must be whole numbers, e.g. (3, 4); got {item!r} in {value!r}"
            ) from None
    return tuple(out)
