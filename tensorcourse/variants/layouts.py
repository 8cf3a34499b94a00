"""Variants of notebook 02's Exercise 4: the strides of a tensor after a transpose, a permute,
a conversion, a ``*_like`` allocation, a copy of a strided slice, and ``channels_last``.

``x`` is ``torch.empty(a, b, c)``; a variant changes ``(a, b, c)``, which dims each transpose
or permute moves, which dim a slice steps over, the dtype of a conversion and the size of the
``channels_last`` batch. Every answer is a stride tuple, and torch gives it. Strides of
another shape are never equal, so answers are balanced by class: "row-major" (non-increasing,
what a fresh copy gets) against "reordered" (what a layout kept, or chosen, gives), five to two
as in the published exercise. Each kind keeps its misconception (:func:`beliefs`): what a
learner who holds it predicts, computed for the variant's own tensors.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import torch

from .oracle import _evaluate
from .spec import Beliefs, Params, PredictSpec


def base(params: Params) -> torch.Tensor:
    return torch.empty(*params["shape"])


def setup(shape: Sequence[int]) -> str:
    """The line that makes :func:`base` (what a learner is shown)."""
    return f"x = torch.empty({', '.join(map(str, shape))})"


def strides(params: Params) -> list[tuple[int, ...]]:
    """The answers: ``.stride()`` of each expression's result (a fresh ``x`` for each)."""
    return [_evaluate(expr, base(params)).stride() for expr in params["expressions"]]


def stride_class(answer: Any) -> str:
    """"row-major" when the strides never grow left to right, else "reordered"."""
    values = list(answer)
    return "row-major" if values == sorted(values, reverse=True) else "reordered"


def _row_major(result: torch.Tensor) -> tuple[int, ...]:
    return torch.empty(result.shape).stride()


def _slice_strides(expr: str, x: torch.Tensor) -> tuple[int, ...]:
    return _evaluate(expr[: expr.index("]") + 1], x).stride()   # "x[:, ::2]" of "x[:, ::2].to(...)"


# kind -> (misconception id, what a learner holding it predicts for (expression, x, result))
_BELIEFS = {
    "permute": ("02/permute-is-reversal", lambda e, x, r: tuple(reversed(x.stride()))),
    "to() of a transpose": ("02/to-makes-contiguous", lambda e, x, r: _row_major(r)),
    "empty_like of a transpose": ("02/like-allocates-contiguous", lambda e, x, r: _row_major(r)),
    "copy of a strided slice": ("02/copy-keeps-gaps", lambda e, x, r: _slice_strides(e, x)),
    "channels_last": ("02/strides-follow-shape", lambda e, x, r: _row_major(r)),
}


def beliefs(params: Params) -> Beliefs:
    """For each expression, ``{misconception: the strides it predicts}`` ({} for none)."""
    out: Beliefs = []
    for expr, kind in zip(params["expressions"], params["kinds"]):
        x = base(params)
        if kind in _BELIEFS:
            mid, predict = _BELIEFS[kind]
            out.append({mid: predict(expr, x, _evaluate(expr, x))})
        else:
            out.append({})
    return out


_PAIRS = ((0, 1), (0, 2), (1, 2))
_CYCLES = ((2, 0, 1), (1, 2, 0))   # never (2, 1, 0): that permute *is* the reversal
_DTYPES = ("float64", "float16", "int32")


def _pair(rng: random.Random) -> str:
    return "{}, {}".format(*rng.choice(_PAIRS))


def _batch(rng: random.Random) -> str:
    return ", ".join(str(rng.randrange(2, 6)) for _ in range(4))


LAYOUTS = PredictSpec(
    exercise="02-creating-tensors/ex4-layouts",
    variant0={"shape": [2, 3, 4], "expressions": [
        "x.transpose(0, 2)", "x.permute(2, 0, 1)", "x.transpose(0, 2).to(torch.float64)",
        "x.transpose(0, 2).contiguous()", "torch.empty_like(x.transpose(0, 2))",
        "x[:, :, ::2].to(torch.float64)",
        "torch.empty(2, 3, 4, 5, memory_format=torch.channels_last)"]},
    kinds0=("transpose", "permute", "to() of a transpose", "contiguous() of a transpose",
            "empty_like of a transpose", "copy of a strided slice", "channels_last"),
    makers={
        "transpose": (lambda g, s: f"x.transpose({_pair(g)})",),
        "permute": (lambda g, s: "x.permute({}, {}, {})".format(*g.choice(_CYCLES)),),
        "to() of a transpose": (
            lambda g, s: f"x.transpose({_pair(g)}).to(torch.{g.choice(_DTYPES)})",),
        "contiguous() of a transpose": (lambda g, s: f"x.transpose({_pair(g)}).contiguous()",),
        "empty_like of a transpose": (
            lambda g, s: f"torch.empty_like(x.transpose({_pair(g)}))",
            lambda g, s: f"torch.zeros_like(x.transpose({_pair(g)}))"),
        "copy of a strided slice": (
            lambda g, s: f"x[:, :, ::2].to(torch.{g.choice(_DTYPES)})",
            lambda g, s: f"x[:, ::2].to(torch.{g.choice(_DTYPES)})",
            lambda g, s: "x[::2].clone()"),
        "channels_last": (
            lambda g, s: f"torch.empty({_batch(g)}, memory_format=torch.channels_last)",
            lambda g, s: f"torch.empty({_batch(g)}).contiguous(memory_format=torch.channels_last)"),
    },
    # Every size at least 3: a step-2 slice keeps two or more entries, so its copy has gaps to
    # lose (a slice of one entry is dense, and its copy keeps its strides).
    shapes=((3, 4, 5), (3, 5, 4), (4, 3, 5), (4, 5, 3), (5, 4, 3), (3, 4, 6), (4, 6, 3),
            (6, 3, 5), (5, 6, 4), (3, 5, 6), (6, 4, 5), (5, 3, 6)),
    oracle=strides,
    min_from_0=5,  # of 7: a channels_last batch may be drawn as published, (2, 3, 4, 5)
    setup=setup,
    methods=frozenset({"transpose", "permute", "to", "contiguous", "clone", "empty_like",
                       "zeros_like", "empty", "channels_last", *_DTYPES}),
    keywords=frozenset({"memory_format"}),
    max_int=8,
    answer_class=stride_class,
    beliefs=beliefs,
)
