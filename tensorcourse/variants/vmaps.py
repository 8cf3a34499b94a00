"""Variants of notebook 12's Exercise 1: the shape of what ``vmap`` returns (or ``"error"``).

A variant's ``shape`` holds six sizes, ``(n, d, r, c, k, t)``: ``A`` and ``B`` are ``(n, d)``,
``v`` is ``(d,)``, ``M`` is ``(r, c)``, ``C`` is ``(k, d)`` (``k != n``: its batch never
matches ``A``'s) and ``T`` is ``(t, n, d)``; published, ``(5, 3, 4, 6, 4, 2)``. Every answer
is a shape made of these sizes, so a variant asks the seven kinds of question in another order,
some written another way (``vmap(torch.mean, in_dims=1)(M)`` for ``torch.sum``, a tuple for a
list), on other sizes: a classmate's shapes are wrong on another variant even for the same
expression. Torch decides every answer. Each kind keeps its rank (a batch of dots is 1-d, an
outer product with a shared vector 3-d, a mismatched batch an error: that is the class
balanced), and its misconception, computed for the variant's sizes (:func:`beliefs`).
"""

from __future__ import annotations

import ast
import itertools
from collections.abc import Sequence
from typing import Any

import torch
from torch.func import vmap

from .oracle import _evaluate
from .spec import Beliefs, Params, PredictSpec

Answer = tuple[int, ...] | str   # a shape, or "error"
NAMES = ("A", "B", "v", "M", "C", "T")


def _sizes(shape: Sequence[int]) -> dict[str, tuple[int, ...]]:
    n, d, r, c, k, t = shape
    return {"A": (n, d), "B": (n, d), "v": (d,), "M": (r, c), "C": (k, d), "T": (t, n, d)}


def setup(shape: Sequence[int]) -> str:
    """The line that makes the six tensors of a variant (what a learner is shown)."""
    sizes = _sizes(shape)
    return f"{', '.join(NAMES)} = " + ", ".join(
        f"torch.randn({', '.join(map(str, sizes[name]))})" for name in NAMES)


def tensors(shape: Sequence[int]) -> tuple[torch.Tensor, ...]:
    """Fresh ``A, B, v, M, C, T`` of a variant's sizes (its ``shape``)."""
    sizes = _sizes(shape)
    return tuple(torch.randn(*sizes[name]) for name in NAMES)


def result(expr: str, params: Params) -> Answer:
    """The answer for one expression: its result's shape, or ``"error"`` when vmap raises."""
    try:
        return tuple(_evaluate(expr, None, vmap=vmap,
                                   **dict(zip(NAMES, tensors(params["shape"])))).shape)
    except Exception:  # noqa: BLE001 - an expression that raises is the answer "error"
        return "error"


def shapes(params: Params) -> list[Answer]:
    """The answers: each expression's result shape, or ``"error"``."""
    return [result(expr, params) for expr in params["expressions"]]


def rank(answer: Any) -> str:
    """What balancing counts: the result's number of dimensions, or the error."""
    return "error" if answer == "error" else f"{len(answer)}-d"


def beliefs(params: Params) -> Beliefs:
    """For each expression, ``{misconception: the shape it predicts}`` on the variant's sizes."""
    n, d, r, c, k, t = params["shape"]
    by_kind = {
        "a list as one argument": {"12/vmap-maps-list-items": (2,)},        # one per list item
        "out_dims=1": {"12/out-dims-ignored": (r, c)},                       # as if out_dims=0
        "in_dims=1": {"12/in-dims-is-the-reduced-dim": (r,)},                # M.sum(dim=1)
        "batches of different sizes": {"12/vmap-broadcasts-batch": (n,)},    # C stretched to n
    }
    return [dict(by_kind.get(kind, {})) for kind in params["kinds"]]


def _shapes() -> tuple[tuple[int, ...], ...]:
    """Every variant's sizes: ``d != n`` (a dot's length is not its batch), ``r != c`` (mapping
    over rows is not mapping over columns), ``k != n`` (C's batch never matches) and
    ``t != n`` (the two batches of a nested vmap stay told apart); ``n >= 3``: a batch is
    never the 2 of a list of two tensors."""
    return tuple((n, d, r, c, k, t)
                 for n, d, r, c, k, t in itertools.product(range(3, 8), range(2, 6), range(3, 8),
                                                           range(3, 8), range(2, 8), range(2, 5))
                 if d != n and r != c and k != n and t != n)


def _m(fn: str, *how: str) -> tuple[Any, ...]:
    """Ways to call ``vmap(torch.<name>, how)(M)`` for each name in ``fn`` (space-separated)."""
    return tuple((lambda g, s, f=f, h=h: f"vmap(torch.{f}, {h})(M)")
                 for f in fn.split() for h in how)


VMAP = PredictSpec(
    exercise="12-torch-func-and-kernels/ex1-vmap-shapes",
    variant0={"shape": [5, 3, 4, 6, 4, 2], "expressions": [
        "vmap(torch.dot)(A, B)", "vmap(torch.outer, in_dims=(0, None))(A, v)",
        "vmap(torch.sum, in_dims=1)(M)", "vmap(lambda row: row * 2, out_dims=1)(M)",
        "vmap(torch.dot)(A, C)", "vmap(lambda pair: pair[0] @ pair[1])([A, B])",
        "vmap(vmap(torch.dot))(T, T)"]},
    kinds0=("a batch of dots", "a shared argument", "in_dims=1", "out_dims=1",
            "batches of different sizes", "a list as one argument", "a nested vmap"),
    makers={
        "a batch of dots": (lambda g, s: "vmap(torch.dot)(A, B)", lambda g, s: "vmap(torch.dot)(B, A)",
                            lambda g, s: "vmap(lambda a, b: (a * b).sum())(A, B)"),
        "a shared argument": (lambda g, s: "vmap(torch.outer, in_dims=(0, None))(A, v)",
                              lambda g, s: "vmap(torch.outer, in_dims=(None, 0))(v, B)"),
        "in_dims=1": _m("sum mean", "in_dims=1"),
        "out_dims=1": (lambda g, s: "vmap(lambda row: row * 2, out_dims=1)(M)",
                       lambda g, s: "vmap(lambda row: row + 1, out_dims=1)(M)",
                       *_m("neg sin", "out_dims=1")),
        "batches of different sizes": (lambda g, s: "vmap(torch.dot)(A, C)",
                                       lambda g, s: "vmap(torch.dot)(C, B)"),
        "a list as one argument": (lambda g, s: "vmap(lambda pair: pair[0] @ pair[1])([A, B])",
                                   lambda g, s: "vmap(lambda pair: pair[0] @ pair[1])((A, B))",
                                   lambda g, s: "vmap(lambda pair: pair[1] @ pair[0])([A, B])"),
        "a nested vmap": (lambda g, s: "vmap(vmap(torch.dot))(T, T)",),
    },
    shapes=_shapes(),
    oracle=shapes,
    min_from_0=5,  # of 7 answers
    setup=setup,
    names=frozenset({"torch", "vmap", *NAMES, "row", "pair", "a", "b"}),
    methods=frozenset({"dot", "outer", "sum", "mean", "neg", "sin"}),
    keywords=frozenset({"in_dims", "out_dims"}),
    max_int=2,
    constants=(int, type(None)),
    operators=frozenset({ast.Lambda, ast.arguments, ast.arg, ast.Add, ast.Mult, ast.MatMult}),
    answer_class=rank,
    beliefs=beliefs,
)

