"""Variants of notebook 02's Exercise 1: the shape and dtype a constructor gives.

No ``x``: each expression builds its own tensor. A variant asks the same nine kinds of
question in another order, each written with other sizes and values (and, for some kinds,
another constructor that behaves the same); torch decides every ``(shape, dtype)``. Shapes of
other sizes are never equal, so answers are balanced by their dtype (five float32, three
int64, one float64, as published); each kind keeps its dtype in every variant. Each
misconception's prediction is computed for the variant's own result (:func:`beliefs`).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Any

import torch

from .oracle import _evaluate
from .spec import Beliefs, Params, PredictSpec

Answer = tuple[tuple[int, ...], torch.dtype]


def setup(shape: Sequence[int]) -> str:
    """Nothing to set up: no expression uses an ``x``."""
    return ""


def _answer(result: torch.Tensor) -> Answer:
    return tuple(result.shape), result.dtype


def shapes_and_dtypes(params: Params) -> list[Answer]:
    """The answers: ``(shape, dtype)`` of each expression's result."""
    return [_answer(_evaluate(expr, None)) for expr in params["expressions"]]


def dtype_class(answer: Any) -> str:
    """Balancing counts the dtype of a ``(shape, dtype)`` answer."""
    return repr(answer[1])


# kind -> (misconception id, what a learner holding it predicts for the expression's result)
_BELIEFS: dict[str, tuple[str, Callable[[torch.Tensor], Answer]]] = {
    # the integers read as data: one float per argument
    "Tensor(ints) is a size": ("02/tensor-class-int-is-data",
                               lambda r: ((r.dim(),), torch.float32)),
    # the integer read as a size, like torch.Tensor(n)
    "tensor(int) is 0-d data": ("02/tensor-int-is-size", lambda r: ((int(r.item()),), torch.int64)),
    "from_numpy keeps float64": ("02/from-numpy-gives-default-float",
                                 lambda r: (tuple(r.shape), torch.float32)),
    "arange stops before its end": ("02/arange-includes-end",
                                    lambda r: ((len(r) + 1,), torch.float32)),
    "full with an int value": ("02/full-gives-float", lambda r: (tuple(r.shape), torch.float32)),
}


def beliefs(params: Params) -> Beliefs:
    """For each expression, ``{misconception: the (shape, dtype) it predicts}`` ({} for none)."""
    out: Beliefs = []
    for expr, kind in zip(params["expressions"], params["kinds"]):
        if kind in _BELIEFS:
            mid, predict = _BELIEFS[kind]
            out.append({mid: predict(_evaluate(expr, None))})
        else:
            out.append({})
    return out


def _n(rng: random.Random, low: int = 2, high: int = 6) -> int:
    return rng.randint(low, high)


CONSTRUCTORS = PredictSpec(
    exercise="02-creating-tensors/ex1-constructors",
    variant0={"shape": [1], "expressions": [
        "torch.Tensor(3)", "torch.tensor(3)", "torch.Tensor([3, 4])", "torch.tensor([3, 4.0])",
        "torch.full((2, 2), 7)", "torch.zeros_like(torch.arange(4))",
        "torch.from_numpy(np.zeros((2, 3)))", "torch.empty(0, 3)", "torch.arange(0, 1, 0.25)"]},
    kinds0=("Tensor(ints) is a size", "tensor(int) is 0-d data", "Tensor(list) is data",
            "a float in the data", "full with an int value", "*_like keeps the dtype",
            "from_numpy keeps float64", "a size of 0", "arange stops before its end"),
    makers={
        "Tensor(ints) is a size": (lambda g, s: f"torch.Tensor({_n(g)})",
                                   lambda g, s: f"torch.Tensor({_n(g)}, {_n(g)})"),
        "tensor(int) is 0-d data": (lambda g, s: f"torch.tensor({_n(g)})",),
        "Tensor(list) is data": (lambda g, s: f"torch.Tensor([{_n(g)}, {_n(g)}])",
                                 lambda g, s: f"torch.Tensor([[{_n(g)}, {_n(g)}, {_n(g)}]])"),
        "a float in the data": (lambda g, s: f"torch.tensor([{_n(g)}, {_n(g)}.0])",
                                lambda g, s: f"torch.tensor([[{_n(g)}, {_n(g)}.5], [{_n(g)}, {_n(g)}]])"),
        "full with an int value": (lambda g, s: f"torch.full(({_n(g)}, {_n(g)}), {_n(g, 1, 9)})",
                                   lambda g, s: f"torch.full(({_n(g)},), {_n(g, 1, 9)})"),
        "*_like keeps the dtype": (lambda g, s: f"torch.zeros_like(torch.arange({_n(g)}))",
                                   lambda g, s: f"torch.ones_like(torch.arange({_n(g)}))"),
        "from_numpy keeps float64": (lambda g, s: f"torch.from_numpy(np.zeros(({_n(g)}, {_n(g)})))",
                                     lambda g, s: f"torch.from_numpy(np.ones({_n(g)}))"),
        "a size of 0": (lambda g, s: f"torch.empty(0, {_n(g)})",
                        lambda g, s: f"torch.zeros({_n(g)}, 0)"),
        "arange stops before its end": (lambda g, s: f"torch.arange(0, {_n(g, 1, 3)}, 0.25)",
                                        lambda g, s: f"torch.arange(0, {_n(g, 1, 3)}, 0.5)"),
    },
    shapes=((1,),),   # no x: the shape is not used
    oracle=shapes_and_dtypes,
    min_from_0=5,  # of 9: torch.tensor(n) is ((), torch.int64) whatever n is
    setup=setup,
    names=frozenset({"torch", "np"}),
    methods=frozenset({"Tensor", "tensor", "full", "zeros_like", "ones_like", "arange",
                       "from_numpy", "zeros", "ones", "empty"}),
    max_int=9,
    constants=(int, float),
    answer_class=dtype_class,
    beliefs=beliefs,
    blank="(None, None)",
)
