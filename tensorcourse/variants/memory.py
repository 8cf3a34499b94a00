"""Variants of notebook 06's Exercise 3: ``(allocated, reserved)`` MiB after the marked steps of
an allocator script, on the course's model of the caching allocator
(:class:`tensorcourse.allocator.FakeCachingAllocator`, exact on a default GPU).

The script is the exercise's; a variant changes its four sizes, ``(a, b, c, d)`` MiB, within
the rules the published script exercises, so every variant asks the same questions in the
same order: ``c`` fits in ``a``'s freed block and splits it, nothing is released by the first
``empty_cache``, ``d`` is larger than the piece left over and reserves a new segment, and the
last ``empty_cache`` releases the two merged, free segments. All sizes are even and at least
10 MiB (no rounding rule in play). The steps are labels, not expressions (``PredictSpec.labels``):
a classmate's tuples are wrong on other sizes even though the keys are the same. Each
misconception's prediction is computed on the variant's sizes (:func:`beliefs`).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

from ..allocator import FakeCachingAllocator, Step, replay
from .spec import Beliefs, Params, PredictSpec

MARKS = {"after free a": 2, "after malloc c": 3, "after first empty_cache": 4,
         "after malloc d": 5, "after last empty_cache": 8}      # mark -> index in the script
MARKS_ORDER = list(MARKS)


def script(shape: Sequence[int]) -> list[Step]:
    """The exercise's script with sizes ``(a, b, c, d)`` MiB."""
    a, b, c, d = shape
    return [("malloc", "a", a), ("malloc", "b", b), ("free", "a"), ("malloc", "c", c),
            ("empty_cache",), ("malloc", "d", d), ("free", "b"), ("free", "c"), ("empty_cache",)]


def setup(shape: Sequence[int]) -> str:
    """The script as the exercise shows it, with the variant's sizes and the marks."""
    a, b, c, d = shape
    return "\n".join([
        f"a = malloc({a})", f"b = malloc({b})",
        'free(a)            # "after free a"',
        f'c = malloc({c})'.ljust(19) + '# "after malloc c"',
        'empty_cache()      # "after first empty_cache"',
        f'd = malloc({d})'.ljust(19) + '# "after malloc d"',
        "free(b); free(c)",
        'empty_cache()      # "after last empty_cache"'])


def states(params: Params) -> list[tuple[int, int]]:
    """The answers: the model's ``(allocated, reserved)`` after each marked step."""
    after = replay(script(params["shape"]), FakeCachingAllocator())
    return [after[MARKS[mark]] for mark in params["expressions"]]


def chains(params: Params) -> dict[str, list[tuple[int, int]]]:
    """Each misconception replayed through the whole script on the variant's sizes: the
    states it predicts after each marked step, in the published order."""
    a, b, c, d = params["shape"]
    return {
        # freeing gives memory back: reserved is always what is allocated
        "06/free-returns-to-gpu": [(b, b), (b + c, b + c), (b + c, b + c), (b + c + d,) * 2, (d, d)],
        # every malloc reserves a new segment; empty_cache then drops a's, still free
        "06/no-block-reuse": [(b, a + b), (b + c, a + b + c), (b + c, b + c), (b + c + d,) * 2,
                              (d, d)],
        # empty_cache also returns the free piece of a's split block
        "06/empty-cache-releases-free-pieces": [(b, a + b), (b + c, a + b), (b + c, b + c),
                                                (b + c + d,) * 2, (d, d)],
    }


def beliefs(params: Params) -> Beliefs:
    """For each step, ``{misconception: the state it predicts}`` at the *first* step where that
    misconception's chain (:func:`chains`) leaves the rules: later steps follow from the first
    error (several beliefs agree there), so a wrong answer is named where it starts."""
    truth = dict(zip(MARKS_ORDER, states({**params, "expressions": MARKS_ORDER})))
    first: dict[str, dict[str, tuple[int, int]]] = {mark: {} for mark in MARKS_ORDER}
    for misconception, chain in chains(params).items():
        mark = next(m for m, state in zip(MARKS_ORDER, chain) if state != truth[m])
        first[mark][misconception] = chain[MARKS_ORDER.index(mark)]
    return [first[mark] for mark in params["expressions"]]


def _shapes() -> tuple[tuple[int, ...], ...]:
    """Sizes on the published script's path, four different ones of 10, 14, ... 58 MiB (even:
    no rounding; a coarse grid keeps the list short to build): ``c < a`` (c splits a's block,
    more than 1 MiB left), ``d > a - c`` (d does not fit the piece left over)."""
    sizes = range(10, 62, 4)
    return tuple((a, b, c, d) for a, b, c, d in itertools.product(sizes, repeat=4)
                 if c < a and d > a - c and len({a, b, c, d}) == 4)


def _label(mark: str) -> Any:
    return lambda g, s: mark


MEMORY = PredictSpec(
    exercise="06-troubleshooting/ex3-allocator",
    variant0={"shape": [40, 20, 30, 20], "expressions": MARKS_ORDER},
    kinds0=tuple(MARKS_ORDER),
    makers={mark: (_label(mark),) for mark in MARKS_ORDER},
    shapes=_shapes(),
    oracle=states,
    min_from_0=5,  # of 5 answers: every state differs from the published one's
    setup=setup,
    answer_class=lambda state: "a state",
    beliefs=beliefs,
    blank="(None, None)",
    labels=True,
)
