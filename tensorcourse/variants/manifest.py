"""Who has which variant: the manifest an instructor freezes when an assignment is released.

A manifest is one JSON file per assignment (commit it with the release)::

    {"format": 1, "assignment": "03-indexing-and-views",
     "exercises": {"03-indexing-and-views/ex2-sharing": {"variants": [{...}, ...]}},
     "students": {"alice": {"03-indexing-and-views/ex2-sharing": 7}}}

``variants[0]`` is always the exercise as published. Students get the other variants, in an
order decided by an HMAC of (assignment, exercise, student) under the course's secret: nothing
in a submitted notebook chooses a variant, and without the secret nobody can tell who will get
what. :func:`freeze` only ever *adds*: a student already in the manifest keeps their variant
and its frozen parameters, whatever later happens to the spec. Everything a variant is can be
read back from the manifest and the student id alone (:func:`params_for`); the answers are
torch's (:attr:`PredictSpec.oracle`).
"""

from __future__ import annotations

import copy
import hashlib
import hmac
import json
import os
import textwrap
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

from .spec import Params, PredictSpec, VariantError

FORMAT = 1
FILE_NAME = "variants.json"   # next to the released notebook
MIN_SECRET_BYTES = 16


def rank(secret: bytes, assignment: str, exercise: str, student: str) -> str:
    """The student's place in the queue for an exercise's variants (HMAC-SHA256, hex)."""
    message = "\0".join((assignment, exercise, student)).encode()
    return hmac.new(secret, message, hashlib.sha256).hexdigest()


def freeze(specs: Iterable[PredictSpec], assignment: str, students: Iterable[str],
           secret: bytes, earlier: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The manifest giving every student in ``students`` a variant of each spec, keeping
    ``earlier`` (a manifest frozen before) as it is: new students get unused variants."""
    if len(secret) < MIN_SECRET_BYTES:
        raise VariantError(f"the course secret has {len(secret)} bytes; use at least "
                           f"{MIN_SECRET_BYTES} (e.g. `python3 -c \"import secrets; "
                           "print(secrets.token_hex(32))\"` into a file kept out of the repo)")
    roster = sorted({s.strip() for s in students if s.strip()})
    if not roster:
        raise VariantError("no student ids given: list one per line in the roster")
    old = dict(earlier or {})
    if old and old.get("assignment") != assignment:
        raise VariantError(f"the earlier manifest is for {old.get('assignment')!r}, not "
                           f"{assignment!r}: give the manifest of this assignment")
    exercises = {k: {"variants": list(v["variants"])} for k, v in old.get("exercises", {}).items()}
    given = {s: dict(v) for s, v in old.get("students", {}).items()}
    for spec in specs:
        if spec.exercise.split("/", 1)[0] != assignment:
            raise VariantError(f"{spec.exercise} is not an exercise of {assignment}: freeze "
                               "each assignment's manifest with its own exercises")
        entry = exercises.setdefault(spec.exercise, {"variants": []})
        had = {s: v[spec.exercise] for s, v in given.items() if spec.exercise in v}
        everyone = dict.fromkeys([*given, *roster])   # an exercise added later: everyone gets one
        new = sorted((s for s in everyone if s not in had),
                     key=lambda s: rank(secret, assignment, spec.exercise, s))
        used = set(had.values())
        size = 1 + len(used) + len(new)
        entry["variants"] = spec.pool(max(size, len(entry["variants"])), secret.hex(),
                                      start=entry["variants"])
        free = (i for i in range(1, len(entry["variants"])) if i not in used)
        for student, index in zip(new, free):
            given.setdefault(student, {})[spec.exercise] = index
    return {"format": FORMAT, "assignment": assignment, "exercises": exercises,
            "students": dict(sorted(given.items()))}


def load(path: Path) -> dict[str, Any]:
    """A manifest read and checked; :class:`VariantError` says what is wrong with it."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as err:
        raise VariantError(f"cannot read the variants manifest {path} ({err}); freeze it again "
                           "with `python -m autograder variants ASSIGNMENT --roster ROSTER "
                           "--secret-file SECRET`") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise VariantError(f"{path} is not a variants manifest of format {FORMAT}")
    problem = _shape_problem(data) or _spec_problem(data)
    if problem:
        raise VariantError(f"{path}: {problem}; it was edited by hand: freeze it again from "
                           "the committed copy")
    return data


def _spec_problem(data: dict[str, Any]) -> str:
    """What makes a manifest's variant one its spec would never have drawn ("" when none).
    The grader evaluates every variant's expressions in its own process."""
    from . import SPECS  # the package's specs (this module is imported by the package first)

    for exercise, entry in data["exercises"].items():
        spec = SPECS.get(exercise)
        if spec is None:
            return f"no exercise {exercise!r} has variants in this version of the course"
        if entry["variants"][0] != spec.variant0:   # what self-study and unlisted ids get
            return (f"variant 0 of {exercise} is not the published exercise (the course changed "
                    "it since this manifest was frozen, or the file was edited)")
        for number, params in enumerate(entry["variants"]):
            why = spec.problem(params) or (number and spec.far_problem(params))
            if why:
                return f"variant {number} of {exercise} is not one of its variants ({why})"
    return ""


def _shape_problem(data: dict[str, Any]) -> str:
    """What is wrong with a manifest's structure ("" when nothing)."""
    exercises, students = data.get("exercises"), data.get("students")
    if not isinstance(data.get("assignment"), str):
        return "no assignment name"
    if not isinstance(exercises, dict) or not isinstance(students, dict):
        return "`exercises` and `students` must be objects"
    if not all(isinstance(picks, dict) for picks in students.values()):
        return "a student's entry is not an object"
    for exercise, entry in exercises.items():
        variants = entry.get("variants") if isinstance(entry, dict) else None
        if not isinstance(variants, list) or not variants:
            return f"{exercise} has no list of variants"
        # freeze() draws one variant per student and variant 0: no more (every variant is
        # checked with torch before grading, so their number bounds the time that takes).
        if len(variants) > 1 + len(students):
            return f"{exercise} has {len(variants)} variants for {len(students)} students"
        for number, params in enumerate(variants):
            if not is_params(params):
                return (f"variant {number} of {exercise} is not a shape, a list of expressions "
                        "and their kinds, and nothing else")
        if len({json.dumps(v, sort_keys=True) for v in variants}) != len(variants):
            return f"{exercise} holds the same variant twice"
    for student, picks in students.items():
        for exercise, index in picks.items():
            variants = exercises.get(exercise, {}).get("variants", [])
            if type(index) is not int or not 0 <= index < len(variants):
                return f"{student}'s variant of {exercise} ({index!r}) is not in the manifest"
            if index == 0:   # the published exercise, whose answers anyone can copy
                return f"{student} is given variant 0 of {exercise}, which nobody on a roster gets"
    for student, picks in students.items():   # freeze() gives every student one of each
        missing = [e for e in exercises if e not in picks]
        if missing:
            return f"{student} has no variant of {missing[0]}"
    for exercise in exercises:   # one student's answers would be another's, copied whole
        picked = [picks[exercise] for picks in students.values() if exercise in picks]
        if len(set(picked)) != len(picked):
            return f"two students are given the same variant of {exercise}"
    return ""


def is_params(params: Any) -> bool:
    """Whether ``params`` is one variant: a shape, expressions and one kind for each, and no
    other key (a release writes a variant into every student's notebook)."""
    return (isinstance(params, dict) and set(params) == {"shape", "expressions", "kinds"}
            and isinstance(params.get("expressions"), list)
            and all(isinstance(e, str) for e in params["expressions"])
            and isinstance(params.get("kinds"), list)
            and all(isinstance(k, str) for k in params["kinds"])
            and len(params["kinds"]) == len(params["expressions"])
            and isinstance(params.get("shape"), list)
            and all(type(n) is int and 0 < n <= 64 for n in params["shape"]))


def params_for(manifest: Mapping[str, Any], exercise: str, student: str | None) -> tuple[int, Params]:
    """(variant number, parameters) of ``student``'s variant; variant 0 for no student, or one
    the manifest does not list (self-study, the website, the instructor's own runs)."""
    variants = manifest.get("exercises", {}).get(exercise, {}).get("variants", [])
    if not variants:
        raise VariantError(f"the manifest has no variants of {exercise}; freeze it again")
    index = manifest.get("students", {}).get(student or "", {}).get(exercise, 0)
    return index, variants[index]


def mine(spec: PredictSpec, folder: Path | None = None) -> tuple[int, Params]:
    """In a learner's kernel: (variant number, parameters) for this learner.

    Graded, the grader has put this submission's variants in :data:`GRADER_ENV` (from the
    roster's id and the manifest, never from the notebook). On a JupyterHub the learner is
    ``JUPYTERHUB_USER`` and the manifest is :data:`FILE_NAME` in the notebook's folder.
    Otherwise variant 0 (the exercise as published)."""
    given = _from_grader(spec)
    if given is not None:
        return given
    path = Path(folder or Path.cwd()) / FILE_NAME
    user = os.environ.get("JUPYTERHUB_USER")
    if not user or not path.is_file():
        return 0, copy.deepcopy(spec.variant0)   # a copy: nothing a notebook does reaches the spec
    return params_for(load(path), spec.exercise, user)


GRADER_ENV = "TIO_VARIANTS"   # {exercise: [variant number, params]} as JSON, set by the grader


def _from_grader(spec: PredictSpec) -> tuple[int, Params] | None:
    # What the kernel holds is only what it shows: the grader decides every answer again
    # outside the sandbox from the manifest (autograder.judge.variants). Read afresh on
    # every call, and checked like a manifest's: the tests evaluate its expressions.
    try:
        entry = json.loads(os.environ.get(GRADER_ENV, "{}")).get(spec.exercise)
        index, params = entry
    except (ValueError, TypeError, AttributeError):
        return None
    ok = type(index) is int and is_params(params) and not spec.problem(params)
    return (index, params) if ok else None


def answer_stub(answer: str, expressions: Any, blank: str = "None") -> str:
    """The answer dict a learner fills in, ``blank`` (the spec's: ``None``, ``(None, None)``)
    for each expression (what ``yours`` prints and a per-student release writes into the
    answer cell)."""
    rows = "".join(f"    {json.dumps(e)}: {blank},\n" for e in expressions)
    return f"{answer} = {{\n{rows}}}\n"


def yours(spec: PredictSpec, answer: str, given: Any = None) -> Mapping[str, Any]:
    """This learner's variant of ``spec`` (:func:`mine`). When it is not the published one, it
    is printed: ``x`` and the expressions, and the ``answer`` dict ready to paste.

    ``given``: ``[number, params]`` written into a notebook released for one student
    (``python -m autograder variants ASSIGNMENT --release DIR``), for courses without a hub. It
    only decides what the notebook shows: the grader runs the release's own cell and takes
    the variant from the roster's id."""
    index, params = mine(spec)
    if not index and isinstance(given, list) and len(given) == 2 and type(given[0]) is int \
            and is_params(given[1]) and not spec.problem(given[1]):
        index, params = given
    if index:
        here = spec.setup(params["shape"])
        if spec.labels:   # the same steps, other numbers: show the whole script
            what = f"your script has the same steps with other sizes:\n\n{textwrap.indent(here, '    ')}\n"
        else:
            what = f"{f'here {here} and ' if here else ''}the expressions differ from the text's."
        print(f"Your variant of this exercise is number {index}: {what}\nPaste this into the "
              f"answer cell below instead of its dict, then fill in each {spec.blank}:\n\n"
              f"{answer_stub(answer, params['expressions'], spec.blank)}")
    # Read-only: the notebook's own cells evaluate these expressions after learners' cells ran.
    return MappingProxyType({k: tuple(v) if isinstance(v, list) else v for k, v in params.items()})
