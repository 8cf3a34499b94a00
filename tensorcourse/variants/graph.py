"""Variants of notebook 04's Exercise 4: ``(requires_grad, is_leaf, grad_fn name)`` of results
computed from ``w`` (requires grad) and ``c`` (does not), both ``torch.randn(3)``.

A variant asks the same eleven kinds of question in another order, each written another way
(``2 * w`` for ``w * 3``, ``torch.sum(w)`` for ``w.sum()``, ``w.to(torch.double)`` for
``w.double()``...); torch decides every answer. The arithmetic kinds may add or multiply, so a
variant may swap which of two results is a ``MulBackward0`` and which an ``AddBackward0``
(balancing keeps as many of each as published). Every grad_fn name a variant can ask for is one
the exercise's hint lists. A misconception predicts the same answer for its kind in every
variant: the notebook's hidden test diagnoses by kind.
"""

from __future__ import annotations

import ast
import random
from collections.abc import Sequence

import torch

from .oracle import _evaluate
from .spec import Params, PredictSpec

Answer = tuple[bool, bool, "str | None"]


def setup(shape: Sequence[int]) -> str:
    """Nothing to set up: ``w`` and ``c`` are the exercise's, whatever the variant."""
    return ""


def tensors() -> dict[str, torch.Tensor]:
    """A fresh ``w`` (requires grad) and ``c`` (does not), as the exercise makes them."""
    return {"w": torch.randn(3, requires_grad=True), "c": torch.randn(3)}


def flags(params: Params) -> list[Answer]:
    """The answers: each result's ``(requires_grad, is_leaf, grad_fn name or None)``."""
    out: list[Answer] = []
    for expr in params["expressions"]:
        r = _evaluate(expr, None, **tensors())
        out.append((r.requires_grad, r.is_leaf, None if r.grad_fn is None else type(r.grad_fn).__name__))
    return out


def _k(rng: random.Random) -> int:
    return rng.randint(2, 5)


GRAPH = PredictSpec(
    exercise="04-operations-and-autograd/ex4-graph-flags",
    variant0={"shape": [3], "expressions": [
        "w * 2", "c * 2", "w + c", "w.sum()", "w.detach()", "w.clone()", "c.clone()",
        "w.detach().requires_grad_()", "w.argmax()", "w.float()", "w.double()"]},
    kinds0=("w and a number", "c and a number", "w and c", "a sum of w", "detach",
            "a clone of w", "a clone of c", "detach, then requires_grad_", "an integer result",
            "a conversion to its own dtype", "a conversion to another dtype"),
    makers={
        "w and a number": (lambda g, s: f"w * {_k(g)}", lambda g, s: f"{_k(g)} * w",
                           lambda g, s: f"w + {_k(g)}", lambda g, s: f"{_k(g)} + w"),
        "c and a number": (lambda g, s: f"c * {_k(g)}", lambda g, s: f"{_k(g)} * c",
                           lambda g, s: f"c + {_k(g)}"),
        "w and c": (lambda g, s: "w + c", lambda g, s: "c + w", lambda g, s: "w * c",
                    lambda g, s: "c * w"),
        "a sum of w": (lambda g, s: "w.sum()", lambda g, s: "torch.sum(w)",
                       lambda g, s: f"(w * {_k(g)}).sum()"),
        "detach": (lambda g, s: "w.detach()", lambda g, s: f"(w * {_k(g)}).detach()"),
        "a clone of w": (lambda g, s: "w.clone()", lambda g, s: "(w + c).clone()"),
        "a clone of c": (lambda g, s: "c.clone()", lambda g, s: f"(c * {_k(g)}).clone()"),
        "detach, then requires_grad_": (lambda g, s: "w.detach().requires_grad_()",
                                        lambda g, s: "c.clone().requires_grad_()"),
        "an integer result": (lambda g, s: "w.argmax()", lambda g, s: f"(w * {_k(g)}).argmax()"),
        "a conversion to its own dtype": (lambda g, s: "w.float()",
                                          lambda g, s: "w.to(torch.float)"),
        "a conversion to another dtype": (lambda g, s: "w.double()", lambda g, s: "w.half()",
                                          lambda g, s: "w.to(torch.double)"),
    },
    shapes=((3,),),   # w and c are the exercise's
    oracle=flags,
    min_from_0=6,  # of 11 answers
    setup=setup,
    names=frozenset({"torch", "w", "c"}),
    methods=frozenset({"sum", "detach", "clone", "requires_grad_", "argmax", "float", "double",
                       "half", "to"}),   # torch.float and torch.double: the same names
    max_int=5,
    operators=frozenset({ast.Add, ast.Mult}),
)
