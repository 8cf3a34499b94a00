"""Variants of notebook 07's Exercise 2: which node made a result (``type(r.grad_fn).__name__``,
or ``None``)? ``x`` ``(4, 3)``, ``w`` ``(3, 2)``, ``b`` ``(2,)`` and ``x3`` ``(5, 4, 3)``
require grad; ``c`` ``(3, 2)`` does not.

A variant asks the same seven kinds of question in another order, each written another way
(``torch.mm(x, w)`` for ``x @ w``, ``torch.addmm(b, x, w)`` for ``F.linear(x, w.T, b)``...);
torch decides every answer. Two kinds change their answer with the expression: the operation
applied after a matmul (``AddBackward0``, ``SubBackward0``, ``MulBackward0``,
``ReluBackward0``...) and the reduction that ends a chain (``SumBackward0``,
``MeanBackward0``...). The others keep theirs (that is what they teach: autograd records the
ATen operator that ran last, ``x3 @ w`` is an ``mm`` between two views, a detached operand
does not stop the other's gradient), so a misconception predicts the same answer for its kind
in every variant and the hidden test diagnoses by kind. Only ``None`` is balanced: one result
without a node, as published.
"""

from __future__ import annotations

import ast
import random
from collections.abc import Sequence
from typing import Any

import torch
import torch.nn.functional as F

from .oracle import _evaluate
from .spec import Params, PredictSpec


def setup(shape: Sequence[int]) -> str:
    """Nothing to set up: the tensors are the exercise's, whatever the variant."""
    return ""


def tensors() -> dict[str, Any]:
    """Fresh tensors of the exercise's shapes, and ``F`` (``torch.nn.functional``)."""
    return {"x": torch.randn(4, 3, requires_grad=True), "w": torch.randn(3, 2, requires_grad=True),
            "b": torch.randn(2, requires_grad=True), "c": torch.randn(3, 2),
            "x3": torch.randn(5, 4, 3, requires_grad=True), "F": F}


def node(result: torch.Tensor) -> str | None:
    """The answer for one result: its grad_fn's class name, or None."""
    return None if result.grad_fn is None else type(result.grad_fn).__name__


def nodes(params: Params) -> list[str | None]:
    """The answers: the node that made each expression's result."""
    out = []
    for expr in params["expressions"]:
        env = tensors()
        out.append(node(_evaluate(expr, env.pop("x"), **env)))
    return out


def _k(rng: random.Random) -> int:
    return rng.randint(2, 5)


def _mm(a: str, b: str) -> tuple[Any, ...]:
    """Ways to write a 2-d matmul of ``a`` by ``b`` (each is an ``mm``)."""
    return (lambda g, s: f"{a} @ {b}", lambda g, s: f"torch.mm({a}, {b})",
            lambda g, s: f"torch.matmul({a}, {b})", lambda g, s: f"{a}.mm({b})")


GRAD_FN = PredictSpec(
    exercise="07-programmable-tensor-system/ex2-grad-fn",
    variant0={"shape": [4, 3], "expressions": [
        "x @ w + b", "x @ w", "x.detach() @ w", "x.detach() @ c", "x3 @ w",
        "F.linear(x, w.T, b)", "(x @ w).relu().sum()"]},
    kinds0=("an operation after a matmul", "a matmul", "a matmul with one operand detached",
            "a matmul of tensors that need no grad", "a 3-d by 2-d matmul",
            "a fused matmul and bias", "a reduction at the end"),
    makers={
        "an operation after a matmul": (
            lambda g, s: "x @ w + b", lambda g, s: "b + x @ w", lambda g, s: "x @ w - b",
            lambda g, s: f"x @ w * {_k(g)}", lambda g, s: "(x @ w).relu()",
            lambda g, s: "(x @ w).sigmoid()", lambda g, s: "(x @ w).tanh()"),
        "a matmul": (*_mm("x", "w"), lambda g, s: "x @ c", lambda g, s: "x.matmul(w)"),
        "a matmul with one operand detached": (*_mm("x.detach()", "w"), lambda g, s: "x @ w.detach()"),
        "a matmul of tensors that need no grad": (
            *_mm("x.detach()", "c"), lambda g, s: "x.detach() @ w.detach()",
            lambda g, s: "(x @ w).detach()"),
        "a 3-d by 2-d matmul": (lambda g, s: "x3 @ w", lambda g, s: "torch.matmul(x3, w)",
                                lambda g, s: "x3 @ c", lambda g, s: "x3.matmul(w)",
                                lambda g, s: "x3.detach() @ w"),
        "a fused matmul and bias": (lambda g, s: "F.linear(x, w.T, b)",
                                    lambda g, s: "torch.addmm(b, x, w)",
                                    lambda g, s: "F.linear(x, c.T, b)", lambda g, s: "b.addmm(x, w)"),
        "a reduction at the end": (
            lambda g, s: "(x @ w).relu().sum()", lambda g, s: "(x @ w).sum()",
            lambda g, s: "(x @ w).mean()", lambda g, s: "(x @ w).relu().mean()",
            lambda g, s: "(x @ w).prod()", lambda g, s: "(x @ w).sigmoid().sum()"),
    },
    shapes=((4, 3),),   # the tensors are the exercise's
    oracle=nodes,
    min_from_0=4,  # of 7 answers
    setup=setup,
    names=frozenset({"torch", "x", "w", "b", "c", "x3", "F"}),
    methods=frozenset({"detach", "mm", "matmul", "relu", "sigmoid", "tanh", "sum", "mean", "prod",
                       "linear", "addmm", "T"}),
    max_int=5,
    operators=frozenset({ast.MatMult, ast.Add, ast.Sub, ast.Mult}),
    answer_class=lambda answer: "no node" if answer is None else "a node",
    blank="...",   # None is an answer here (red team): the stub's blank is the published one
)
