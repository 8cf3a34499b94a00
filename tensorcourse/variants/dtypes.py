"""Variants of notebook 01's Exercise 1: the dtype torch gives a tensor built from Python data,
from the ``torch.Tensor`` class, from a NumPy array, and by ``/`` and ``//``.

No ``x``: each expression builds its own tensor. A variant asks the same seven kinds of
question in another order, each written with other data (other numbers, nesting, another
constructor of the same kind); torch decides every dtype. Each kind's dtype is the same in
every variant (that is what the kind teaches), so the answers are balanced as published: two
int64, three float32, one bool, one float64. A misconception predicts the same dtype for its
kind in every variant: the notebook's hidden test diagnoses by kind.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

import torch

from .oracle import _evaluate
from .spec import Params, PredictSpec


def setup(shape: Sequence[int]) -> str:
    """Nothing to set up: no expression uses an ``x``."""
    return ""


def dtypes(params: Params) -> list[torch.dtype]:
    """The answers: the dtype of each expression's result."""
    return [_evaluate(expr, None).dtype for expr in params["expressions"]]


def _n(rng: random.Random, low: int = 1, high: int = 9) -> int:
    return rng.randint(low, high)


def _bool(rng: random.Random) -> str:
    return rng.choice(("True", "False"))


DTYPES = PredictSpec(
    exercise="01-why-tensors/ex1-dtypes",
    variant0={"shape": [1], "expressions": [
        "torch.tensor([1, 2, 3])", "torch.tensor([1, 2.0])", "torch.Tensor([1, 2, 3])",
        "torch.tensor([True, False])", "torch.tensor(np.array([1.0, 2.0]))",
        "torch.arange(5) / 2", "torch.arange(5) // 2"]},
    kinds0=("integer data", "a float among ints", "the Tensor class", "bool data",
            "NumPy float64 data", "true division", "floor division"),
    makers={
        "integer data": (lambda g, s: f"torch.tensor([{_n(g)}, {_n(g)}, {_n(g)}])",
                         lambda g, s: f"torch.tensor([[{_n(g)}, {_n(g)}], [{_n(g)}, {_n(g)}]])",
                         lambda g, s: f"torch.tensor({_n(g)})"),
        "a float among ints": (lambda g, s: f"torch.tensor([{_n(g)}, {_n(g)}.0])",
                               lambda g, s: f"torch.tensor([{_n(g)}.5, {_n(g)}, {_n(g)}])"),
        "the Tensor class": (lambda g, s: f"torch.Tensor([{_n(g)}, {_n(g)}, {_n(g)}])",
                             lambda g, s: f"torch.Tensor([[{_n(g)}, {_n(g)}]])"),
        "bool data": (lambda g, s: f"torch.tensor([{_bool(g)}, {_bool(g)}])",
                      lambda g, s: f"torch.tensor({_bool(g)})",
                      lambda g, s: f"torch.tensor([{_n(g)}, {_n(g)}]) > {_n(g)}"),
        "NumPy float64 data": (
            lambda g, s: f"torch.tensor(np.array([{_n(g)}.0, {_n(g)}.0]))",
            lambda g, s: f"torch.from_numpy(np.array([{_n(g)}.5, {_n(g)}.0]))",
            lambda g, s: f"torch.as_tensor(np.array([{_n(g)}.5]))"),
        "true division": (lambda g, s: f"torch.arange({_n(g, 2)}) / {_n(g, 2, 4)}",
                          lambda g, s: f"torch.tensor([{_n(g)}, {_n(g)}]) / {_n(g, 2, 4)}"),
        "floor division": (lambda g, s: f"torch.arange({_n(g, 2)}) // {_n(g, 2, 4)}",
                           lambda g, s: f"torch.tensor([{_n(g)}, {_n(g)}]) // {_n(g, 2, 4)}"),
    },
    shapes=((1,),),   # no x: the shape is not used
    oracle=dtypes,
    min_from_0=4,  # of 7 answers (2 int64, 3 float32, 1 bool, 1 float64): the public solution
    # gets at most 3 right
    setup=setup,
    names=frozenset({"torch", "np"}),
    methods=frozenset({"tensor", "Tensor", "arange", "array", "from_numpy", "as_tensor"}),
    max_int=10,   # 9.5 is a number a maker writes
    constants=(int, float, bool),
)
