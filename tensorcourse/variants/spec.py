"""What a variant of a *predict* exercise is, and how a pool of them is drawn.

A predict exercise asks for one answer per expression ("shares storage with ``x``?", "view,
copy or error?"). Variant 0 is the exercise as the notebook's prose, the solutions and the
website show it. Any other variant keeps its *kinds* (the same kinds of indexing, the same
number of each: equal difficulty) in another order, each filled in with fresh numbers, on a
base tensor of another shape. A random shape alone is not a new question when the answers do
not change, so a candidate is kept only when torch (the oracle: the expected answers are
computed, never written down) gives it

* the same number of each answer (or class of answer, :attr:`PredictSpec.answer_class`) as
  variant 0 (balanced: as many "copy" as "view" as before),
* an answer vector that differs from variant 0's in at least ``min_from_0`` entries (the public
  solution is worth at most about chance on it),
* an answer vector no other variant in the pool has, while the spec has such vectors left
  (classmates' answers differ pairwise; in a larger class, variants repeat an answer vector,
  never an expression list).

A scripted exercise (:attr:`PredictSpec.labels`, notebook 06's allocator) asks about the steps
of a fixed script instead: its keys are the steps' labels, in order, and a variant draws only
the script's numbers (its ``shape``), with the spec's oracle running the script.

Drawing is deterministic from a seed: a pool is reproducible, and frozen in a manifest
(:mod:`tensorcourse.variants.manifest`) when an assignment is released, so that a later change
to a spec never reshuffles what students already have.
"""

from __future__ import annotations

import ast
import random
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

Params = dict[str, Any]   # one variant: {"shape": [r, c], "expressions": [...], "kinds": [...]}
Beliefs = list[dict[str, Any]]   # per expression: misconception id -> the answer it predicts
Maker = Callable[[random.Random, tuple[int, ...]], str]   # one expression of a kind, for a shape
FORM_DRAWS = 64   # draws of each maker that gather the forms it writes
MISSES = 2000  # rejections in a row after which no more distinct answer vectors are sought


class VariantError(ValueError):
    """A spec, a pool or a manifest that cannot give what was asked; the text says what to do."""


MAX_EXPRESSION = 200   # characters
# What any expression may hold (a first, coarse check; PredictSpec.problem also requires a
# maker's form, so that what one evaluates stays small).
MAX_INT, MAX_ARGS, MAX_CALLS = 128, 4, 3   # 4 arguments: a 4-d size
MAX_STRING = 8   # a device name ('cpu') where a spec's constants allow str
MIN_FLOAT = 0.1  # a float's size, where allowed: no step of 2e-8 (a gigabyte arange)
_NODES = (ast.Expression, ast.Name, ast.Load, ast.Attribute, ast.Call, ast.Subscript, ast.Slice,
          ast.Tuple, ast.List, ast.Constant, ast.UnaryOp, ast.USub, ast.Compare, ast.Gt, ast.Lt,
          ast.GtE, ast.LtE, ast.Eq, ast.BinOp, ast.Mod, ast.Div, ast.FloorDiv,
          ast.keyword)   # no +, -, *: sizes stay as written


def unsafe(expr: Any, names: frozenset[str], methods: frozenset[str],
           keywords: frozenset[str] = frozenset(), max_int: int = MAX_INT,
           constants: tuple[type, ...] = (int,),
           operators: frozenset[type] = frozenset()) -> str:
    """Why ``expr`` is not an expression a variant may hold ("" when it is one).

    Variants are evaluated in the grader's own process (torch is the oracle), so what one may
    hold is a short list of what is allowed: the spec's names (``x``, ``torch``), its methods
    and keyword arguments, subscripts, slices, comparisons, ``%``, ``/``, ``//`` and numbers
    of the spec's ``constants`` types (int alone by default) up to ``max_int``, and the
    spec's ``operators`` (``+`` and ``*`` where its tensors have a fixed, small size). Nothing
    else: no builtins, no other attribute, no string, no other keyword, no arithmetic that
    builds a large size."""
    if type(expr) is not str or len(expr) > MAX_EXPRESSION:
        return "not a short string"
    try:
        tree = ast.parse(expr, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return "not an expression"
    for node in ast.walk(tree):
        if not isinstance(node, _NODES) and type(node) not in operators:
            return f"{type(node).__name__} is not allowed"
        if isinstance(node, ast.Name) and node.id not in names:
            return f"the name {node.id!r} is not allowed"
        if isinstance(node, ast.Attribute) and node.attr not in methods:
            return f"the attribute .{node.attr} is not allowed"
        if isinstance(node, ast.Call) and (len(node.args) > MAX_ARGS or any(
                k.arg not in keywords for k in node.keywords)):
            return (f"a call with more than {MAX_ARGS} arguments, or a keyword other than "
                    f"{sorted(keywords)}, is not allowed")
        if isinstance(node, ast.Constant) and not _constant_ok(node.value, constants, max_int):
            return f"the constant {str(node.value)[:20]!r} is not allowed"
    if sum(isinstance(node, ast.Call) for node in ast.walk(tree)) > MAX_CALLS:
        return f"more than {MAX_CALLS} calls"
    return ""


def _constant_ok(value: Any, constants: tuple[type, ...], max_int: int) -> bool:
    """A constant of the allowed types, and small: a short string, no number past ``max_int``,
    no float under MIN_FLOAT but 0 (None, where allowed, is ``in_dims``' "not mapped")."""
    if type(value) not in constants:
        return False
    if value is None:
        return True
    if type(value) is str:
        return len(value) <= MAX_STRING
    return abs(value) <= max_int and (type(value) is not float or value == 0 or abs(value) >= MIN_FLOAT)


def form(expr: str) -> str:
    """An expression with every number written N: what a maker writes whatever it draws (a
    name's digits are the name's: ``torch.float32`` and ``torch.float64`` are two forms)."""
    return re.sub(r"\b\d+\b", "N", expr)   # not the digits of a name: float32 stays float32


@dataclass(frozen=True)
class PredictSpec:
    """One predict exercise's variants.

    ``kinds0``: the kind of each of variant 0's expressions, in order. ``makers``: for each
    kind, the ways to write an expression of that kind for a base of a given shape. ``oracle``:
    the expected answer of each expression of a variant, computed with torch. ``setup``: the
    line of code that makes ``x`` for a shape (what a learner is shown; "" when the
    expressions use no ``x``).

    ``answer_class``: what balancing counts. By default an answer is its own class (as many
    True as False as in variant 0); answers that are never equal across shapes (strides,
    shapes) are balanced by a coarser class ("row-major" or "reordered" strides).
    ``beliefs``: for a variant, what each misconception predicts for each expression (the
    hidden test names the misconception a wrong answer matches; the tests carry each wrong
    answer of tests/wrong_answers over to every variant with it). ``None``: the notebook's
    beliefs are the same answer in every variant, by kind.
    """

    exercise: str                                  # "03-indexing-and-views/ex2-sharing"
    variant0: Params
    kinds0: tuple[str, ...]
    makers: dict[str, tuple[Maker, ...]]
    shapes: tuple[tuple[int, ...], ...]
    oracle: Callable[[Params], list[Any]]
    min_from_0: int
    setup: Callable[[Sequence[int]], str]
    names: frozenset[str] = frozenset({"x", "torch"})   # what an expression may name ...
    methods: frozenset[str] = frozenset()                # ... the attributes it may use ...
    keywords: frozenset[str] = frozenset()               # ... its keyword arguments ...
    max_int: int = MAX_INT                               # ... its largest number ...
    constants: tuple[type, ...] = (int,)                 # ... the types of its numbers ...
    operators: frozenset[type] = frozenset()             # ... and its other operators (ast.Add)
    answer_class: Callable[[Any], str] = repr
    beliefs: Callable[[Params], Beliefs] | None = None
    # True: the expressions are labels of a fixed script's steps ("after free a"), asked in
    # the published order; a variant changes only its ``shape`` (the script's numbers), and
    # nothing is evaluated but the spec's oracle on that shape.
    labels: bool = False
    blank: str = "None"   # what the answer stub holds for each expression, as code
    # How many answer vectors its variants can have besides variant 0's, where that is fewer
    # than a class may need (None: plenty); past them, variants repeat an answer vector.
    distinct: int | None = None
    tries: int = 20_000                            # candidates drawn before a pool is called full
    answers0: list[Any] = field(init=False, default_factory=list)
    # Each kind's forms: its makers' expressions with every number written N.
    forms: dict[str, set[str]] = field(init=False, default_factory=dict)

    def __post_init__(self) -> None:
        if len(self.kinds0) != len(self.variant0["expressions"]):
            raise VariantError(f"{self.exercise}: kinds0 names {len(self.kinds0)} kinds for "
                               f"{len(self.variant0['expressions'])} expressions; give one each")
        missing = sorted(set(self.kinds0) - set(self.makers))
        if missing:
            raise VariantError(f"{self.exercise}: no maker for kind(s) {missing}; add them to makers")
        # Every variant names the kind of each expression: tests diagnose misconceptions by kind.
        object.__setattr__(self, "variant0", {**self.variant0, "kinds": list(self.kinds0)})
        object.__setattr__(self, "answers0", self.oracle(self.variant0))
        shape = tuple(self.variant0["shape"])
        # A maker may choose among words too (a dtype): its forms are gathered over many draws.
        object.__setattr__(self, "forms", {kind: {form(maker(random.Random(i), shape))
                                                  for maker in makers for i in range(FORM_DRAWS)}
                                           for kind, makers in self.makers.items()})

    def draw(self, rng: random.Random) -> Params:
        """One candidate (not yet checked): variant 0's kinds shuffled, each written afresh (a
        script's labels: in their order, on other numbers)."""
        shape = rng.choice(self.shapes)
        kinds = list(self.kinds0)
        if not self.labels:
            rng.shuffle(kinds)
        expressions: list[str] = []
        for kind in kinds:
            for _ in range(50):  # the same expression twice would be one question asked twice
                expr = rng.choice(self.makers[kind])(rng, shape)
                if expr not in expressions:
                    break
            expressions.append(expr)
        return {"shape": list(shape), "expressions": expressions, "kinds": kinds}

    def problem(self, params: Any) -> str:
        """Why ``params`` is not a variant of this spec ("" when it is one): its form, its kinds
        (variant 0's, in some order), every expression (:func:`unsafe`, and written as one of
        its kind's makers writes them, numbers aside) and torch's answers (as many of each as
        variant 0's). Run on every variant a manifest holds before it is graded: a manifest
        edited by hand must never run in the grader's process, and only a maker's forms (with
        numbers up to MAX_INT) are evaluated, so what one allocates stays small."""
        exprs, kinds = params.get("expressions"), params.get("kinds")
        shape = params.get("shape")
        if not (isinstance(exprs, list) and isinstance(kinds, list)
                and len(exprs) == len(kinds) == len(self.kinds0)):
            return f"it must have {len(self.kinds0)} expressions and their kinds"
        if not (isinstance(shape, list) and tuple(shape) in {*self.shapes, tuple(self.variant0["shape"])}):
            return f"its shape {shape!r} is not one of the spec's"
        if Counter(map(str, kinds)) != Counter(self.kinds0):
            return "its kinds are not the exercise's"
        if self.labels and (exprs != self.variant0["expressions"] or kinds != list(self.kinds0)):
            return "its steps are not the exercise's, in the exercise's order"
        for expr, kind in zip(exprs, kinds):
            if self.labels:
                break   # labels, never evaluated: the oracle runs the spec's own script
            why = self.unsafe(expr)
            if not why and form(expr) not in self.forms.get(kind, ()):
                why = f"not an expression of the kind {str(kind)[:40]!r}"
            if why:
                return f"{str(expr)[:60]!r}: {why}"
        try:
            answers = self.oracle(dict(params))
        except Exception as err:  # noqa: BLE001 - the manifest's, not the grader's, failure
            return f"torch cannot answer it ({type(err).__name__}: {str(err)[:80]})"
        if self.balance(answers) != self.balance(self.answers0):
            return "its answers are not balanced like the published exercise's"
        return ""

    def far_problem(self, params: Params) -> str:
        """Why a variant handed to a student is too close to variant 0 ("" when it is not):
        fewer than ``min_from_0`` answers differ from the published ones. For a variant that
        :meth:`problem` accepts."""
        answers = self.oracle(dict(params))
        if sum(a != b for a, b in zip(answers, self.answers0)) < self.min_from_0:
            return f"its answers differ from the published exercise's in fewer than {self.min_from_0}"
        return ""

    def unsafe(self, expr: Any) -> str:
        """:func:`unsafe` with this spec's names, methods, keywords and largest number."""
        return unsafe(expr, self.names, self.methods, self.keywords, self.max_int,
                      self.constants, self.operators)

    def balance(self, answers: Sequence[Any]) -> Counter[str]:
        """How many answers of each class (:attr:`answer_class`) a variant has."""
        return Counter(map(self.answer_class, answers))

    def accepts(self, params: Params, taken: set[tuple[Any, ...]]) -> list[Any] | None:
        """The candidate's answers when it keeps this spec's promises, else None."""
        if len(set(params["expressions"])) != len(params["expressions"]):
            return None
        if not self.labels and any(self.unsafe(e) for e in params["expressions"]):
            raise VariantError(f"{self.exercise}: a maker wrote {params['expressions']}, which "
                               "uses more than the spec's names and methods: fix the maker")
        answers = self.oracle(params)
        if self.balance(answers) != self.balance(self.answers0):
            return None
        if sum(a != b for a, b in zip(answers, self.answers0)) < self.min_from_0:
            return None
        if tuple(answers) in taken:
            return None
        return answers

    def pool(self, size: int, seed: int | str, start: Sequence[Params] = ()) -> list[Params]:
        """``start`` (variant 0 first when empty) grown to ``size`` variants, drawn from
        ``seed``. Answer vectors are distinct while the spec has such vectors left (a few
        hundred for ten True/False answers); past that, variants repeat an answer vector but
        never an expression list. Raises :class:`VariantError` when not even that is found."""
        variants = list(start) or [self.variant0]
        taken = {tuple(self.oracle(v)) for v in variants}
        written = {self._written(v) for v in variants}
        rng = random.Random(f"{self.exercise}|{seed}|{len(variants)}")
        misses = 0
        for _ in range(self.tries):
            if len(variants) >= size:
                return variants
            candidate = self.draw(rng)
            if self._written(candidate) in written:
                continue
            # Distinct answers until they run out (MISSES rejections in a row), then repeats.
            answers = self.accepts(candidate, taken if misses < MISSES else set())
            if answers is None:
                misses += 1
                continue
            misses = 0 if tuple(answers) not in taken else misses
            variants.append(candidate)
            taken.add(tuple(answers))
            written.add(self._written(candidate))
        raise VariantError(
            f"{self.exercise}: only {len(variants)} variants were found in {self.tries} draws, "
            f"{size} asked: add kinds of expression, or makers, to the spec")

    def _written(self, params: Params) -> tuple[Any, ...]:
        """What no two variants share: their expressions (a script's labels: its numbers)."""
        return tuple(params["shape"]) if self.labels else tuple(params["expressions"])

    def copied_score(self, source: Params, target: Params) -> float:
        """The share of ``target``'s answers that ``source``'s answers, copied in order, get
        right: what a student earns with a classmate's answers."""
        mine, theirs = self.oracle(target), self.oracle(source)
        return sum(a == b for a, b in zip(mine, theirs)) / len(mine)

    def chance(self) -> float:
        """What guessing earns on average, guessing each answer as often as it is right in
        variant 0 (every variant has the same counts): the sum of the squared shares. With a
        coarser :attr:`answer_class`, an upper bound (guessing the class is not guessing the
        answer: a stride tuple of the right class can still be wrong)."""
        counts = self.balance(self.answers0)
        n = len(self.answers0)
        return sum((c / n) ** 2 for c in counts.values())
