"""Variants of notebook 05's Exercise 5: the dtype of a result under CPU autocast (bfloat16).

The tensors are the exercise's (``x`` (8, 16), ``w`` (16, 4), ``b`` (4,), ``target`` (8, 4),
float32, and int64 ``labels`` (8,)). A variant asks the same seven kinds of question in another
order, each written with another operation of the same kind (``torch.mm(x, w)`` for ``x @ w``,
``torch.tanh`` for ``torch.relu``, ``F.l1_loss`` for ``F.mse_loss``...); torch, under CPU
autocast, decides every dtype. Each kind's dtype is the same in every variant (three bfloat16,
four float32, as published), and a misconception predicts the other dtype for its kind in
every variant: the notebook's hidden test names it by kind. Two dtypes over seven answers give
only 22 answer vectors far enough from the published one (:attr:`PredictSpec.distinct`).
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
    """The exercise's tensors (and ``F``), made as its hidden test makes them."""
    gen = torch.Generator().manual_seed(0)
    return {"F": F, "x": torch.randn(8, 16, generator=gen), "w": torch.randn(16, 4, generator=gen),
            "b": torch.randn(4, generator=gen), "target": torch.randn(8, 4, generator=gen),
            "labels": torch.randint(0, 4, (8,), generator=gen)}


def dtypes(params: Params) -> list[torch.dtype]:
    """The answers: the dtype of each expression's result under CPU autocast to bfloat16."""
    out = []
    for expr in params["expressions"]:
        env = tensors()
        x = env.pop("x")
        with torch.autocast("cpu", dtype=torch.bfloat16):
            out.append(_evaluate(expr, x, **env).dtype)
    return out


def _mm(rng: random.Random) -> str:
    return rng.choice(("x @ w", "torch.mm(x, w)", "torch.matmul(x, w)"))


AUTOCAST = PredictSpec(
    exercise="05-memory-and-performance/ex5-autocast",
    variant0={"shape": [1], "expressions": [
        "x @ w", "torch.relu(x)", "torch.softmax(x @ w, dim=-1)", "(x @ w).sum()", "x @ w + b",
        "F.mse_loss(x @ w, target)", "F.cross_entropy(x @ w, labels)"]},
    kinds0=("a matmul", "an op on neither list, on float32", "softmax of a matmul",
            "a reduction of a matmul", "a matmul plus a float32 tensor", "a regression loss",
            "a classification loss"),
    makers={
        "a matmul": (lambda g, s: "x @ w", lambda g, s: "torch.mm(x, w)",
                     lambda g, s: "torch.matmul(x, w)", lambda g, s: "F.linear(x, w.t())"),
        "an op on neither list, on float32": (lambda g, s: "torch.relu(x)", lambda g, s: "x.relu()",
                                              lambda g, s: "torch.tanh(x)"),
        "softmax of a matmul": (lambda g, s: f"torch.softmax({_mm(g)}, dim=-1)",
                                lambda g, s: "(x @ w).softmax(-1)"),
        "a reduction of a matmul": (lambda g, s: "(x @ w).sum()", lambda g, s: "(x @ w).mean()",
                                    lambda g, s: "torch.sum(torch.mm(x, w))",
                                    lambda g, s: "(x @ w).amax()"),
        "a matmul plus a float32 tensor": (lambda g, s: "x @ w + b", lambda g, s: "b + x @ w",
                                           lambda g, s: "torch.mm(x, w) + b"),
        "a regression loss": (lambda g, s: f"F.mse_loss({_mm(g)}, target)",
                              lambda g, s: f"F.l1_loss({_mm(g)}, target)",
                              lambda g, s: f"F.smooth_l1_loss({_mm(g)}, target)"),
        "a classification loss": (lambda g, s: f"F.cross_entropy({_mm(g)}, labels)",
                                  lambda g, s: "F.nll_loss(F.log_softmax(x @ w, dim=-1), labels)"),
    },
    shapes=((1,),),   # the tensors are the exercise's
    oracle=dtypes,
    min_from_0=4,  # of 7 answers (3 bfloat16, 4 float32)
    setup=setup,
    names=frozenset({"torch", "F", "x", "w", "b", "target", "labels"}),
    methods=frozenset({"mm", "matmul", "linear", "t", "relu", "tanh", "softmax", "sum", "mean",
                       "amax", "mse_loss", "l1_loss", "smooth_l1_loss", "cross_entropy",
                       "nll_loss", "log_softmax"}),
    keywords=frozenset({"dim"}),
    max_int=1,
    operators=frozenset({ast.MatMult, ast.Add}),
    # Seven answers, three bfloat16: 35 orders, 22 of them at least 4 away from variant 0's. A
    # class of 30 repeats some (a copy from one of those classmates scores; from the others,
    # about chance).
    distinct=22,
)
