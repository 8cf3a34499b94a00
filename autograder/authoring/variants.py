"""``python -m autograder variants``: freeze who gets which variant of an assignment, and
show one student's variant (what they were asked, and torch's answers).

The variants themselves are :mod:`tensorcourse.variants` (the learner's kernel reads the same
manifest on a JupyterHub); this module is the instructor's side: the roster, the course secret
and the manifest file.
"""

from __future__ import annotations

import json
from pathlib import Path

from tensorcourse.variants import SPECS, VariantError, freeze, load, params_for

from ..course import VARIANTS, CourseError
from ..outputs.lms import read_roster

DEFAULT_FOLDER = VARIANTS


def manifest_path(assignment: str, given: Path | None) -> Path:
    return given or DEFAULT_FOLDER / f"{assignment}.json"


def specs_of(assignment: str) -> list:
    specs = [s for s in SPECS.values() if s.exercise.split("/")[0] == assignment]
    if not specs:
        have = sorted({s.exercise.split("/")[0] for s in SPECS.values()})
        raise CourseError(f"{assignment} has no exercise with variants yet (these do: "
                          f"{', '.join(have)}).")
    return specs


def read_secret(path: Path) -> bytes:
    try:
        text = path.read_text(encoding="utf-8").strip()
    except UnicodeDecodeError:
        raise CourseError(f"the course secret {path} is not text: make one with `python3 -c "
                          "\"import secrets; print(secrets.token_hex(32))\"`.") from None
    except OSError as err:
        raise CourseError(f"cannot read the course secret {path} ({err.strerror}); make one "
                          "with `python3 -c \"import secrets; print(secrets.token_hex(32))\" "
                          f"> {path}` and keep it out of the repository.") from None
    return text.encode()


def freeze_command(assignment: str, roster: Path, secret_file: Path, manifest: Path | None) -> Path:
    """Write (or extend) the assignment's manifest; students already in it keep their variants."""
    path = manifest_path(assignment, manifest)
    students = [p.student for p in read_roster(roster)]
    try:
        earlier = load(path) if path.exists() else None
        frozen = freeze(specs_of(assignment), assignment, students, read_secret(secret_file),
                        earlier)
    except VariantError as err:
        raise CourseError(str(err)) from None
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(frozen, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return path


def show_command(assignment: str, student: str, manifest: Path | None) -> list[str]:
    """Lines saying which variant ``student`` has of each exercise, its expressions and the
    answers torch gives: reproduced from the manifest and the id alone."""
    specs = specs_of(assignment)
    path = manifest_path(assignment, manifest)
    if not path.exists():
        raise CourseError(f"no manifest at {path}: freeze one with `python -m autograder "
                          f"variants {assignment} --roster ROSTER --secret-file SECRET`.")
    try:
        data = load(path)
    except VariantError as err:
        raise CourseError(str(err)) from None
    if data["assignment"] != assignment:
        raise CourseError(f"{path} is the manifest of {data['assignment']}, not {assignment}: "
                          "give this assignment's (--manifest).")
    if student not in data["students"]:
        raise CourseError(f"{student!r} is not in {path}: add them to the roster and freeze "
                          "again (nobody else's variant changes).")
    lines = []
    for spec in specs:
        index, params = params_for(data, spec.exercise, student)
        lines.append(f"{spec.exercise}: variant {index}, x of shape {tuple(params['shape'])}")
        for expr, answer in zip(params["expressions"], spec.oracle(params)):
            lines.append(f"  {expr:<48} {answer}")
    return lines
