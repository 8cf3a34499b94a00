"""``solutions/`` -> ``notebooks/``: the student versions, produced by nbgrader.

nbgrader's ``generate_assignment`` replaces ``### BEGIN SOLUTION`` blocks with a
stub, removes ``### BEGIN HIDDEN TESTS`` blocks, locks the test cells, records
checksums and clears outputs. We run it into a scratch folder and then replace
``notebooks/<assignment>/`` as a whole, so a notebook deleted from ``solutions/``
disappears from ``notebooks/`` too. ``check`` regenerates into a scratch folder and
compares byte for byte with what is committed: CI uses it to fail on drift.
"""

from __future__ import annotations

import filecmp
import shutil
import tempfile
from pathlib import Path

import nbformat

from .course import NOTEBOOKS, CourseError, base_config

# Markers that must never reach a learner.
SECRET_MARKERS = ("BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS", "END HIDDEN TESTS")


def _run_nbgrader(assignment: str, release_root: Path) -> None:
    from nbgrader.converters import GenerateAssignment
    from nbgrader.coursedir import CourseDirectory

    config = base_config(release_root, release=release_root, db=None)
    config.GenerateAssignment.no_database = True
    config.SaveCells.enabled = False  # what nbgrader's --no-db flag sets too
    config.GenerateAssignment.force = True
    coursedir = CourseDirectory(config=config)
    coursedir.assignment_id = assignment
    converter = GenerateAssignment(coursedir=coursedir, config=config)
    try:
        converter.start()
    except Exception as err:  # nbgrader raises NbGraderException with details in its log
        raise CourseError(f"nbgrader could not generate {assignment}: {err}. "
                          "Check the nbgrader metadata of its cells (see CONTRIBUTING.md).") from err


def _normalise(folder: Path) -> None:
    """Make generated notebooks byte-stable and free of execution traces."""
    for path in sorted(folder.glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        for cell in nb.cells:
            if cell.cell_type == "code":
                cell.outputs = []
                cell.execution_count = None
            cell.metadata.pop("execution", None)
        text = nbformat.writes(nb)
        for marker in SECRET_MARKERS:
            if marker in text:
                raise CourseError(f"{path.name}: generated notebook still contains {marker!r}; "
                                  "a solution or hidden-test block is malformed in solutions/.")
        path.write_text(text + ("" if text.endswith("\n") else "\n"), encoding="utf-8")


def generate_into(assignment: str, target_root: Path) -> Path:
    """Generate one assignment into ``target_root/<assignment>/`` and return that folder."""
    with tempfile.TemporaryDirectory(prefix="tio-generate-") as scratch:
        scratch_root = Path(scratch)
        _run_nbgrader(assignment, scratch_root)
        produced = scratch_root / assignment
        if not produced.is_dir():
            raise CourseError(f"nbgrader produced nothing for {assignment}.")
        _normalise(produced)
        dest = target_root / assignment
        if dest.exists():
            shutil.rmtree(dest)
        shutil.copytree(produced, dest)
    return dest


def generate(assignments: list[str]) -> list[Path]:
    """Regenerate ``notebooks/<assignment>/`` for each assignment."""
    NOTEBOOKS.mkdir(exist_ok=True)
    return [generate_into(a, NOTEBOOKS) for a in assignments]


def drift(assignments: list[str]) -> list[str]:
    """Files in ``notebooks/`` that differ from a fresh generation (empty list: no drift)."""
    problems: list[str] = []
    with tempfile.TemporaryDirectory(prefix="tio-check-") as scratch:
        for assignment in assignments:
            fresh = generate_into(assignment, Path(scratch))
            committed = NOTEBOOKS / assignment
            if not committed.is_dir():
                problems.append(f"notebooks/{assignment}/ is missing")
                continue
            cmp = filecmp.dircmp(fresh, committed)
            _collect(cmp, f"notebooks/{assignment}", problems)
    return problems


def _collect(cmp: filecmp.dircmp, prefix: str, problems: list[str]) -> None:
    problems += [f"{prefix}/{n} differs" for n in cmp.diff_files]
    problems += [f"{prefix}/{n} is missing" for n in cmp.left_only]
    problems += [f"{prefix}/{n} is not generated from solutions/" for n in cmp.right_only
                 if n != ".ipynb_checkpoints"]
    # dircmp compares shallowly by stat; compare contents of same-named files too.
    for name in cmp.same_files:
        if (Path(cmp.left) / name).read_bytes() != (Path(cmp.right) / name).read_bytes():
            problems.append(f"{prefix}/{name} differs")
    for sub, subcmp in cmp.subdirs.items():
        _collect(subcmp, f"{prefix}/{sub}", problems)
