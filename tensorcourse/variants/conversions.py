"""Variants of notebook 09's Exercise 3: does a conversion give ``h`` itself, a view or a
copy, and which node made it? ``w = torch.randn(r, c, requires_grad=True)``, ``h = w * 2``.

A variant changes ``(r, c)`` and writes each of the ten kinds of conversion another way
(``h.double()`` for ``h.to(torch.float64)``, ``h.cpu()`` for ``h.to('cpu')``, a view to
another shape...); torch decides every ``(shares storage with h, grad_fn name)``. Each kind's
answer is the same in every variant (that is what it teaches), so the answers are balanced as
published, and a misconception predicts the same answer for its kind in every variant: the
notebook's hidden test diagnoses by kind.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

import torch

from ..viz.layout import shares_storage
from .oracle import _evaluate
from .spec import Params, PredictSpec

Answer = tuple[bool, "str | None"]


def setup(shape: Sequence[int]) -> str:
    """The line that makes ``w`` (what a learner is shown; ``h = w * 2`` as published)."""
    return f"w = torch.randn({', '.join(map(str, shape))}, requires_grad=True)"


def tensors(params: Params) -> dict[str, torch.Tensor]:
    """A fresh ``w`` and ``h = w * 2`` of the variant's shape."""
    w = torch.randn(*params["shape"], requires_grad=True)
    return {"w": w, "h": w * 2}


def conversions(params: Params) -> list[Answer]:
    """The answers: does each result share ``h``'s storage, and its node's name (or None)."""
    out: list[Answer] = []
    for expr in params["expressions"]:
        env = tensors(params)
        r = _evaluate(expr, None, **env)
        out.append((shares_storage(r, env["h"]), r.grad_fn.name() if r.grad_fn is not None else None))
    return out


def _view(rng: random.Random, shape: Sequence[int]) -> str:
    r, c = shape
    return rng.choice((f"h.view({c}, {r})", f"h.view({r * c})", "h.view(-1)", f"h.view(1, {r}, {c})"))


CONVERSIONS = PredictSpec(
    exercise="09-layout-devices-gradient-lifetime/ex3-to-predict",
    variant0={"shape": [2, 3], "expressions": [
        "h.to(torch.float32)", "h.to(torch.float64)", "h.to('cpu')", "h.to('cpu', copy=True)",
        "h.detach()", "h.detach().to(torch.float64)", "h.contiguous()", "h.t().contiguous()",
        "h.view(3, 2)", "h.to(torch.float64).to(torch.float32)"]},
    kinds0=("to its own dtype", "to another dtype", "to its own device", "a copy asked for",
            "detach", "a conversion of a detached tensor", "contiguous() of a contiguous tensor",
            "contiguous() of a non-contiguous view", "a view", "a round trip"),
    makers={
        "to its own dtype": (lambda g, s: "h.to(torch.float32)", lambda g, s: "h.float()",
                             lambda g, s: "h.to(dtype=torch.float32)"),
        "to another dtype": (lambda g, s: "h.to(torch.float64)", lambda g, s: "h.double()",
                             lambda g, s: "h.half()", lambda g, s: "h.to(torch.float16)"),
        "to its own device": (lambda g, s: "h.to('cpu')", lambda g, s: "h.cpu()",
                              lambda g, s: "h.to(device='cpu')"),
        "a copy asked for": (lambda g, s: "h.to('cpu', copy=True)",
                             lambda g, s: "h.to(torch.float32, copy=True)"),
        "detach": (lambda g, s: "h.detach()", lambda g, s: "h.detach().t()"),
        "a conversion of a detached tensor": (lambda g, s: "h.detach().to(torch.float64)",
                                              lambda g, s: "h.detach().double()",
                                              lambda g, s: "h.detach().half()"),
        "contiguous() of a contiguous tensor": (lambda g, s: "h.contiguous()",),
        "contiguous() of a non-contiguous view": (lambda g, s: "h.t().contiguous()",
                                                  lambda g, s: "h.transpose(0, 1).contiguous()",
                                                  lambda g, s: "h[:, ::2].contiguous()"),
        "a view": (_view,),
        "a round trip": (lambda g, s: "h.to(torch.float64).to(torch.float32)",
                         lambda g, s: "h.double().float()", lambda g, s: "h.half().float()"),
    },
    shapes=((2, 4), (3, 2), (3, 4), (4, 2), (4, 3), (2, 5), (5, 2), (3, 5)),
    oracle=conversions,
    min_from_0=6,  # of 10 answers
    setup=setup,
    names=frozenset({"torch", "h"}),
    methods=frozenset({"to", "float", "double", "half", "cpu", "detach", "t", "transpose",
                       "contiguous", "view", "float32", "float64", "float16"}),
    keywords=frozenset({"copy", "device", "dtype"}),
    max_int=32,
    constants=(int, bool, str),
    blank="(None, None)",
)
