"""A submission's own variants, decided outside the sandbox (issue #31).

Which variant a student has comes from the assignment's manifest and the student's id (the
roster's, the folder or zip name), never from anything in the submitted notebook
(:mod:`tensorcourse.variants.manifest`). The kernel is told the variants only so that the
notebook shows them and its tests run on them; the verdict is decided here:

* :func:`assigned` gives ``{exercise: [variant number, params]}`` for one student.
* :func:`reference_for` turns the solution's recorded checks of a test (variant 0's, from the
  reference run) into that variant's: the same checks in the same order, each named after the
  variant's expression, with the expected value torch gives *here*
  (:attr:`tensorcourse.variants.PredictSpec.oracle`). :mod:`.values` then decides the
  learner's records against these, as it does for everyone.

A test whose recorded checks do not line up with variant 0's expressions is a course error
(the notebook and its spec disagree), raised as :class:`tensorcourse.variants.VariantError`
before anything is graded; ``tests/test_variants.py`` holds them in step.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from typing import Any

from tensorcourse.variants import SPECS, PredictSpec, VariantError, params_for

Assigned = dict[str, list[Any]]   # exercise -> [variant number, params] (JSON, for the kernel)


def grade_id(spec: PredictSpec) -> str:
    """The test cell a spec's exercise is graded by: ``03-.../ex2-sharing`` -> ``ex2-sharing``."""
    return spec.exercise.split("/", 1)[1]


def assigned(manifest: Mapping[str, Any] | None, assignment: str, student: str) -> Assigned:
    """The variants ``student`` has in ``assignment`` (empty: none, the published exercise)."""
    if not manifest or student not in manifest.get("students", {}):
        return {}
    out: Assigned = {}
    for exercise in manifest.get("exercises", {}):
        if exercise.split("/", 1)[0] == assignment and exercise in SPECS:
            index, params = params_for(manifest, exercise, student)
            out[exercise] = [index, params]
    return out


PLAIN = ("a predict exercise's answer is your predictions written out as values (True, "
         "\"view\", (12, 4, 1), torch.int64) in the dict literal, not code that computes them: each student "
         "predicts their own variant, and a program that works them out would pass for anyone "
         "it is shared with. Replace the code with the values you predict")


def predictions_problem(assignment: str, gid: str, source: str) -> str:
    """Why the answer cell ``gid`` of an exercise with variants is not plain predictions ("" when
    it is, or when ``gid`` is no such cell). Such a cell may only bind dicts of values written
    out (constants, tuples and lists of them, and dtypes such as ``torch.int64``), annotated or
    not, show such a dict (by name, ``print`` or ``display``), import torch, numpy or F as the
    notebook does, keep the stub's ``raise NotImplementedError()`` as its last line, and hold
    comments and docstrings: the red team of 02 Ex4 shared
    one cell that computed any variant's strides from the expressions the notebook shows.
    What such a cell's dict *holds* in the kernel can still be changed by earlier code (a
    finalizer that runs mid-cell, second red team): the grader decides these checks on the
    values as written (:func:`written_records`), never on the kernel's. Never raises: what
    cannot be read is refused."""
    cells = {grade_id(s) + "-answer" for s in SPECS.values() if s.exercise.split("/", 1)[0] == assignment}
    if gid not in cells:
        return ""
    try:
        body, bound = ast.parse(source).body, set()
        for i, node in enumerate(body):
            if (binding := _binding(node)) is not None:
                if not _written_out(binding[1]):
                    return PLAIN
                bound.add(binding[0])
            elif isinstance(node, ast.Raise):
                # Only the stub's, and last: what follows a raise never runs, and the grader
                # reads the answer's text (third red team: a table after the raise scored).
                if node.cause is not None or node.exc is None or i != len(body) - 1 \
                        or ast.unparse(node.exc) not in ("NotImplementedError", "NotImplementedError()"):
                    return PLAIN
            elif isinstance(node, ast.Expr) and (
                    (isinstance(node.value, ast.Constant) and type(node.value.value) is str)
                    or _shows(node.value, bound)):
                continue   # a docstring, or the dict shown (a plain dict of written-out values)
            elif not (isinstance(node, ast.Pass)
                      or ast.unparse(node) in _IMPORTS):
                return PLAIN
    except SyntaxError:
        return ""   # fails on its own in the kernel, with Python's message
    except Exception:  # noqa: BLE001 - learner input: a value literal_eval refuses, or too deep
        return PLAIN
    return ""


# Habits of honest answers the rule accepts (fourth red team: each scored 0 before): the
# course's imports, and the dict shown by name, printed or displayed.
_IMPORTS = frozenset({"import torch", "import numpy as np", "import torch.nn.functional as F"})


def _binding(node: ast.stmt) -> tuple[str, ast.Dict] | None:
    """(name, dict) when ``node`` binds a dict literal to a plain name, annotated or not."""
    if isinstance(node, ast.Assign) and len(node.targets) == 1:
        target = node.targets[0]
    elif isinstance(node, ast.AnnAssign) and node.simple and all(   # a type, not a call
            isinstance(n, (ast.Name, ast.Attribute, ast.Subscript, ast.Tuple, ast.Load,
                           ast.Constant)) for n in ast.walk(node.annotation)):
        target = node.target
    else:
        return None
    if isinstance(target, ast.Name) and isinstance(node.value, ast.Dict):
        return target.id, node.value
    return None


def _shows(value: ast.expr, bound: set[str]) -> bool:
    """``NAME``, ``print(NAME)`` or ``display(NAME)`` of a dict this cell bound."""
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) \
            and value.func.id in ("print", "display") and len(value.args) == 1 \
            and not value.keywords:
        value = value.args[0]
    return isinstance(value, ast.Name) and value.id in bound


_DTYPE_NAMES = frozenset({"bool", "uint8", "int8", "int16", "int32", "int64", "float16",
                          "bfloat16", "float32", "float64", "complex64", "complex128", "half",
                          "float", "double", "long", "int", "short", "cfloat", "cdouble"})


def _written_out(node: ast.expr) -> bool:
    """A value written out: a constant (a negative number too), ``torch.<dtype>``, or a tuple,
    list or dict of such values."""
    if isinstance(node, ast.Dict):
        return all(k is not None and _written_out(k) for k in node.keys) \
            and all(_written_out(v) for v in node.values)
    if isinstance(node, (ast.Tuple, ast.List)):
        return all(_written_out(e) for e in node.elts)
    if isinstance(node, ast.Attribute):
        return isinstance(node.value, ast.Name) and node.value.id == "torch" \
            and node.attr in _DTYPE_NAMES
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        node = node.operand
    return isinstance(node, ast.Constant)


def _value(node: ast.expr) -> Any:
    """What a node :func:`_written_out` accepts stands for (``torch.int64`` is the dtype)."""
    if isinstance(node, ast.Dict):
        return {_value(k): _value(v) for k, v in zip(node.keys, node.values) if k is not None}
    if isinstance(node, ast.Tuple):
        return tuple(_value(e) for e in node.elts)
    if isinstance(node, ast.List):
        return [_value(e) for e in node.elts]
    if isinstance(node, ast.Attribute):
        import torch

        return getattr(torch, node.attr)   # one of _DTYPE_NAMES (checked by _written_out)
    if isinstance(node, ast.UnaryOp):
        return -_value(node.operand)
    return node.value   # type: ignore[attr-defined]


def written(source: str, name: str) -> dict[Any, Any]:
    """The dict an answer cell that :func:`predictions_problem` accepts last binds to
    ``name``, as written ({} when it binds none, or cannot be read). Never raises."""
    found: dict[Any, Any] = {}
    try:
        for node in ast.parse(source).body:
            binding = _binding(node)
            if binding is not None and binding[0] == name and _written_out(binding[1]):
                found = _value(binding[1])
    except Exception:  # noqa: BLE001 - learner input: nothing readable is nothing predicted
        return {}
    return found


def written_answers(assignment: str, variants: Assigned, sources: Mapping[str, str],
                    stubs: Mapping[str, str]) -> dict[str, tuple[list[str], dict[Any, Any]]]:
    """``{test grade_id: (the expressions of the submission's variant, its predictions as
    written)}`` for each exercise of ``assignment`` with a spec. ``sources``: the learner's
    answer cells; ``stubs``: the release's (which name the answer binds)."""
    out: dict[str, tuple[list[str], dict[Any, Any]]] = {}
    for spec in SPECS.values():
        if spec.exercise.split("/", 1)[0] != assignment:
            continue
        gid = grade_id(spec)
        stub = ast.parse(stubs.get(f"{gid}-answer", "")).body
        name = next((n.targets[0].id for n in stub if isinstance(n, ast.Assign)
                     and isinstance(n.targets[0], ast.Name)), "")
        params = variants.get(spec.exercise, [0, spec.variant0])[1]
        said = written(sources.get(f"{gid}-answer", ""), name)
        # Exactly the variant's expressions, as the test asks: a dict with more keys (everyone's
        # answers in one table) predicts nothing (third red team).
        if set(said) != set(params["expressions"]):
            said = {}
        out[gid] = (list(params["expressions"]), said)
    return out


def written_records(reference: list[dict], learner: list[dict], expressions: list[str],
                    predictions: Mapping[Any, Any]) -> list[dict]:
    """The kernel's records of a predict test with each check's value replaced by the
    learner's prediction *as written* for that check's expression. ``reference`` is the
    test's reference checks (one per expression, in order: :func:`reference_for`); a record
    matches the check with the same options (its name and points). The kernel still decides
    which checks ran; what was predicted is read from the answer's text alone."""
    by_options = {repr(r.get("options")): e for r, e in zip(reference, expressions)}
    out = []
    for record in learner:
        expr = by_options.get(repr(record.get("options"))) if isinstance(record, dict) else None
        if expr is not None and record.get("kind") == "same_value":
            try:
                actual = _encoded(predictions[expr]) if expr in predictions else \
                    {"t": "missing", "u": "no prediction written for it"}
            except VariantError:
                actual = {"t": "unknown", "u": "not a value a prediction can be"}
            record = {**record, "actual": actual}
        out.append(record)
    return out


def _encoded(answer: Any) -> dict[str, Any]:
    """An answer as the kernel's recorder encodes a value (``encode`` in
    autograder/judge/in_kernel.py; tests/test_in_kernel.py holds the two in step): bool, int,
    str and None as themselves, tuples and lists item by item, a ``torch.dtype`` by its name."""
    t = type(answer)
    if t in (bool, int, str, type(None)):
        return {"t": f"builtins.{t.__name__}", "v": answer}
    if t in (tuple, list):
        return {"t": f"builtins.{t.__name__}", "items": [_encoded(a) for a in answer]}
    if f"{t.__module__}.{t.__qualname__}" == "torch.dtype":
        return {"t": "torch.dtype", "v": str(answer)}
    raise VariantError(f"an oracle answered {answer!r}: only bool, int, str, None, dtypes, and "
                       "tuples or lists of them are graded outside the kernel")


def reference_for(spec: PredictSpec, params: Mapping[str, Any], template: list[dict]) -> list[dict]:
    """The reference checks of ``params``' variant, from variant 0's recorded ``template``."""
    published = spec.variant0["expressions"]
    if len(template) != len(published):
        raise VariantError(f"{spec.exercise}: the solution's test made {len(template)} checks "
                           f"for {len(published)} expressions; the spec and the notebook differ")
    why = spec.problem(dict(params))   # load() checked it too: never run what it refuses
    if why:
        raise VariantError(f"{spec.exercise}: not one of its variants ({why})")
    answers = spec.oracle(dict(params))
    out = []
    for record, old, new, answer in zip(template, published, params["expressions"], answers):
        options = dict(record.get("options") or {})
        name = str(options.get("name", ""))
        if not name.endswith(old):
            raise VariantError(f"{spec.exercise}: the check {name!r} does not name the "
                               f"expression {old!r}; the spec and the notebook differ")
        options["name"] = name[: len(name) - len(old)] + new
        out.append({"kind": record.get("kind"), "options": options, "expected": _encoded(answer)})
    return out


def references(reference: Mapping[str, list[dict]] | None, variants: Assigned,
               ) -> tuple[dict[str, list[dict]] | None, dict[str, int]]:
    """(one submission's reference checks, its variant number by test): the solution's, with
    each variant's test replaced by :func:`reference_for`'s. No reference, or no checks kept
    for a test (the solution failed it): that test is left to the kernel, as for everyone."""
    numbers = {grade_id(SPECS[e]): index for e, (index, _) in variants.items()}
    if reference is None:
        return None, numbers
    out = dict(reference)
    for exercise, (_, params) in variants.items():
        gid = grade_id(SPECS[exercise])
        if gid in reference:
            out[gid] = reference_for(SPECS[exercise], params, reference[gid])
    return out, numbers
