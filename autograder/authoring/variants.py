"""``python -m autograder variants``: freeze who gets which variant of an assignment, show
one student's variant (what they were asked, and torch's answers), or release one notebook
per student for a course without a hub (``--release DIR``).

The variants themselves are :mod:`tensorcourse.variants` (the learner's kernel reads the same
manifest on a JupyterHub); this module is the instructor's side: the roster, the course secret
and the manifest file.
"""

from __future__ import annotations

import json
from pathlib import Path

import nbformat

from tensorcourse.variants import SPECS, VariantError, freeze, load, params_for
from tensorcourse.variants.manifest import answer_stub

from ..course import NOTEBOOKS, STUDENT_ID, VARIANTS, CourseError, notebook_names
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


def _frozen(assignment: str, manifest: Path | None) -> tuple[Path, dict]:
    """The assignment's manifest, read and checked."""
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
    return path, data


def show_command(assignment: str, student: str, manifest: Path | None) -> list[str]:
    """Lines saying which variant ``student`` has of each exercise, its expressions and the
    answers torch gives: reproduced from the manifest and the id alone."""
    specs = specs_of(assignment)
    path, data = _frozen(assignment, manifest)
    if student not in data["students"]:
        raise CourseError(f"{student!r} is not in {path}: add them to the roster and freeze "
                          "again (nobody else's variant changes).")
    lines = []
    for spec in specs:
        index, params = params_for(data, spec.exercise, student)
        lines.append(f"{spec.exercise}: variant {index}" + (
            f", {spec.setup(params['shape'])}" if spec.setup(params["shape"]) else ""))
        for expr, answer in zip(params["expressions"], spec.oracle(params)):
            lines.append(f"  {expr:<48} {answer}")
    return lines


def _personal(nb: nbformat.NotebookNode, data: dict, student: str) -> nbformat.NotebookNode:
    """The released notebook as ``student`` gets it: each variant's cell passes it to
    ``tc.variants.yours`` (what the notebook shows), each answer stub lists its expressions."""
    out = nbformat.from_dict(nbformat.reads(nbformat.writes(nb), as_version=4))
    for spec in specs_of(data["assignment"]):
        index, params = params_for(data, spec.exercise, student)
        call = f"tc.variants.yours(tc.variants.{_spec_name(spec)}, answer="
        shown = [c for c in out.cells if c.cell_type == "code" and call in c.source]
        stub_id = spec.exercise.split("/", 1)[1] + "-answer"
        stubs = [c for c in out.cells if c.get("metadata", {}).get("nbgrader", {})
                 .get("grade_id") == stub_id]
        if len(shown) != 1 or len(stubs) != 1:
            raise CourseError(f"{spec.exercise}: the released notebook has {len(shown)} cell(s) "
                              f"calling {call}...) and {len(stubs)} answer cell(s) {stub_id}; "
                              "expected one of each: regenerate it (`python -m autograder "
                              "generate`).")
        head, _, rest = shown[0].source.partition(call)
        answer, close, tail = rest.partition(")")
        literal = json.dumps([index, params])   # JSON of str, int, list, dict: a Python literal
        shown[0].source = f"{head}{call}{answer}, given={literal}{close}{tail}"
        name = answer.strip().strip("\"'")
        body, brace, after = stubs[0].source.partition("\n}\n")
        if not brace or not body.startswith(f"{name} = {{"):
            raise CourseError(f"{stub_id}: its stub is not a `{name} = {{...}}` dict; regenerate "
                              "the release.")
        stubs[0].source = answer_stub(name, params["expressions"], spec.blank) + after
    return out


def _spec_name(spec) -> str:
    """The name the notebook uses for ``spec`` (``tc.variants.SHARING``)."""
    import tensorcourse.variants as module

    return next(n for n, v in vars(module).items() if v is spec and n.isupper())


def release_command(assignment: str, output: Path, manifest: Path | None) -> list[Path]:
    """One copy of each released notebook per student in the manifest, under
    ``output/<student>/<assignment>/``, showing that student's variants. Grading never reads
    them: it runs the release's own cells and takes each variant from the student's id."""
    _path, data = _frozen(assignment, manifest)
    written = []
    for name in notebook_names(assignment):
        release = nbformat.read(NOTEBOOKS / assignment / f"{name}.ipynb", as_version=4)
        for student in data["students"]:
            if not STUDENT_ID.match(student) or len(student) > 200:
                raise CourseError(f"the manifest lists {student!r}, which is not a student id "
                                  "(letters, digits, _ . @ + -): fix the roster and freeze again.")
            target = output / student / assignment / f"{name}.ipynb"
            target.parent.mkdir(parents=True, exist_ok=True)
            nbformat.write(_personal(release, data, student), target)
            written.append(target)
    if not written:
        raise CourseError(f"the manifest lists no students for {assignment}: freeze it with a "
                          "roster first.")
    return written
