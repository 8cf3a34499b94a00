"""Variants of notebook 03's predict exercises: which results share storage with ``x``
(Exercise 2), and whether a reshape is a view, a copy or an error (Exercise 5).

``x`` is ``torch.arange(r * c).reshape(r, c)``; a variant changes ``(r, c)`` and rewrites each
kind of expression with other numbers. Kinds name what the learner must recognise, so a
variant asks the same things in another order (equal difficulty); torch decides the answers.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

import torch

from ..viz.layout import shares_storage
from .oracle import _evaluate
from .spec import Params, PredictSpec


def base(params: Params) -> torch.Tensor:
    rows, cols = params["shape"]
    return torch.arange(rows * cols).reshape(rows, cols)


def setup(shape: Sequence[int]) -> str:
    """The line that makes :func:`base` (what a learner is shown)."""
    rows, cols = shape
    return f"x = torch.arange({rows * cols}).reshape({rows}, {cols})"


METHODS = frozenset({"t", "view", "reshape", "flatten", "narrow", "unsqueeze", "expand",
                     "contiguous", "tensor"})


def sharing(params: Params) -> list[bool]:
    """Exercise 2's answers: does each expression's result share storage with ``x``?"""
    out = []
    for expr in params["expressions"]:
        x = base(params)  # a fresh x each time: nothing one expression does reaches the next
        out.append(shares_storage(_evaluate(expr, x), x))
    return out


def outcome(params: Params) -> list[str]:
    """Exercise 5's answers: is each expression's result a view of ``x``, a copy, or an error?"""
    out = []
    for expr in params["expressions"]:
        x = base(params)
        try:
            out.append("view" if shares_storage(_evaluate(expr, x), x) else "copy")
        except RuntimeError:
            out.append("error")
    return out


def _r(rng: random.Random, n: int, low: int = 0) -> int:
    return rng.randrange(low, n)


R, C = 0, 1  # which number of the shape a maker reads

SHARING = PredictSpec(
    exercise="03-indexing-and-views/ex2-sharing",
    variant0={"shape": [4, 6], "expressions": [
        "x[2]", "x[[2]]", "x[2:3]", "x[:, [1]]", "x[::2, 1:]",
        "x[x > 10]", "x[torch.tensor(2)]", "x[torch.tensor([2])]", "x[[1, 3]][0]",
        "x.narrow(1, 2, 3)"]},
    kinds0=("integer index", "list index", "one-row slice", "list index on dim 1",
            "strided slice", "boolean mask", "0-d tensor index", "1-d tensor index",
            "index into a copy", "narrow"),
    makers={
        "integer index": (lambda g, s: f"x[{_r(g, s[R])}]",
                          lambda g, s: f"x[:, {_r(g, s[C])}]",
                          lambda g, s: f"x[{_r(g, s[R])}, {_r(g, s[C] - 1)}:]"),
        "list index": (lambda g, s: f"x[[{_r(g, s[R])}]]",
                       lambda g, s: f"x[[{_r(g, s[R])}, {_r(g, s[R])}]]"),
        "one-row slice": (lambda g, s: (lambda i: f"x[{i}:{i + 1}]")(_r(g, s[R])),
                          lambda g, s: (lambda j: f"x[:, {j}:{j + 1}]")(_r(g, s[C]))),
        "list index on dim 1": (lambda g, s: f"x[:, [{_r(g, s[C])}]]",
                                lambda g, s: f"x[:, [{_r(g, s[C])}, {_r(g, s[C])}]]"),
        "strided slice": (lambda g, s: f"x[::2, {_r(g, s[C] - 1, 1)}:]",
                          lambda g, s: f"x[{_r(g, s[R] - 1)}:, ::2]",
                          lambda g, s: f"x[::{_r(g, 4, 2)}]"),
        "boolean mask": (lambda g, s: f"x[x > {_r(g, s[R] * s[C] - 1)}]",
                         lambda g, s: f"x[x % {_r(g, 5, 2)} == 0]"),
        "0-d tensor index": (lambda g, s: f"x[torch.tensor({_r(g, s[R])})]",),
        "1-d tensor index": (lambda g, s: f"x[torch.tensor([{_r(g, s[R])}])]",
                             lambda g, s: f"x[:, torch.tensor([{_r(g, s[C])}])]"),
        "index into a copy": (lambda g, s: f"x[[{_r(g, s[R])}, {_r(g, s[R])}]][0]",
                              lambda g, s: f"x[x > {_r(g, s[R] * s[C] - 1)}][:1]"),
        "narrow": (lambda g, s: f"x.narrow(1, {_r(g, s[C] - 2)}, 2)",
                   lambda g, s: f"x.narrow(0, {_r(g, s[R] - 1)}, 1)"),
    },
    shapes=((3, 5), (4, 5), (4, 6), (5, 4), (5, 6), (6, 4), (3, 7), (6, 5)),
    oracle=sharing,
    setup=setup,
    methods=METHODS,
    min_from_0=4,  # of 10 answers (5 True): the public solution gets at most 6 right; 5 or more
    # would push every variant towards the opposite of variant 0, and so towards each other
)

OUTCOMES = PredictSpec(
    exercise="03-indexing-and-views/ex5-view-copy-error",
    variant0={"shape": [4, 6], "expressions": [
        "x.view(6, 4)", "x.t().view(24)", "x.t().reshape(24)", "x.t().view(6, 1, 4)",
        "x[:, ::2].view(12)", "x[:, :3].view(12)", "x[::2].reshape(12)", "x.flatten()",
        "x.t().flatten()", "x.unsqueeze(0).expand(2, 4, 6).reshape(48)"]},
    kinds0=("view to another shape", "view of a transpose, flattened", "reshape of a transpose",
            "view of a transpose, split", "view of a column-strided slice",
            "view of a column slice", "reshape of a row-strided slice", "flatten",
            "flatten of a transpose", "reshape of an expand"),
    makers={
        "view to another shape": (lambda g, s: f"x.view({s[C]}, {s[R]})",
                                  lambda g, s: "x.view(-1)",
                                  lambda g, s: f"x.view(1, {s[R] * s[C]})"),
        "view of a transpose, flattened": (lambda g, s: f"x.t().view({s[R] * s[C]})",
                                           lambda g, s: "x.t().view(-1)"),
        "reshape of a transpose": (lambda g, s: f"x.t().reshape({s[R] * s[C]})",
                                   lambda g, s: "x.t().reshape(-1)"),
        "view of a transpose, split": (lambda g, s: f"x.t().view({s[C]}, 1, {s[R]})",
                                       lambda g, s: f"x.t().view(1, {s[C]}, {s[R]})"),
        "view of a column-strided slice": (
            lambda g, s: f"x[:, ::2].view({s[R] * ((s[C] + 1) // 2)})",),
        "view of a column slice": (
            lambda g, s: (lambda k: f"x[:, :{k}].view({s[R] * k})")(_r(g, s[C], 1)),
            lambda g, s: (lambda k: f"x[:, {k}:].view({s[R] * (s[C] - k)})")(_r(g, s[C], 1))),
        "reshape of a row-strided slice": (
            lambda g, s: f"x[::2].reshape({((s[R] + 1) // 2) * s[C]})",
            lambda g, s: "x[:, ::2].reshape(-1)"),
        "flatten": (lambda g, s: "x.flatten()", lambda g, s: "x.flatten(0, 1)"),
        "flatten of a transpose": (lambda g, s: "x.t().flatten()",
                                   lambda g, s: "x.t().contiguous().view(-1)"),
        "reshape of an expand": (
            lambda g, s: f"x.unsqueeze(0).expand(2, {s[R]}, {s[C]}).reshape({2 * s[R] * s[C]})",
            lambda g, s: f"x[:1].expand({s[R]}, {s[C]}).reshape(-1)"),
    },
    shapes=((4, 6), (6, 4), (3, 8), (8, 3), (4, 5), (5, 4), (6, 6), (3, 6), (2, 6)),
    oracle=outcome,
    setup=setup,
    methods=METHODS,
    min_from_0=5,  # of 10 answers (4 view, 4 copy, 2 error): the public solution gets at most 5
)
