"""Evaluating a spec's expression: torch is the oracle of every variant's answers.

Only a spec's own expressions are evaluated (drawn by its makers, or checked by
:meth:`tensorcourse.variants.PredictSpec.problem` when read from a manifest), never a
learner's text, and with one builtin: the import torch's C++ makes through the caller's
builtins (no expression can name it).
"""

from __future__ import annotations

import builtins
from typing import Any

import numpy as np
import torch

_IMPORT_ONLY = {"__import__": builtins.__import__}


def _evaluate(expr: str, x: torch.Tensor | None, **tensors: torch.Tensor) -> Any:
    """``expr``'s value with ``x``, ``torch``, ``np`` and the given ``tensors`` as its only
    names (a spec's ``names`` say which of them its expressions may use). Private: the grader's
    screen refuses a learner's answer that names it (red team of #31's 02 Ex4)."""
    return eval(expr, {"__builtins__": _IMPORT_ONLY, "torch": torch, "np": np, "x": x, **tensors})  # noqa: S307
