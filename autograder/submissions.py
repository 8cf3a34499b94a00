"""Bring learners' submissions into the grading folder, read-only, with clear errors.

Accepted layouts of the folder given to ``grade``:

* ``<student>/<assignment>/<notebook>.ipynb`` (what nbgrader's collect produces);
* ``<student>.zip`` holding ``<assignment>/<notebook>.ipynb`` or just
  ``<notebook>.ipynb`` (the notebook is named after its assignment).

Submissions are *copied* into ``<workdir>/submitted/``; the originals are never
opened for writing. A file that is not a readable notebook is not copied, so
nbgrader records it as missing (0 points), and the problem is reported.
"""

from __future__ import annotations

import json
import re
import shutil
import zipfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

import nbformat

from .course import CourseError, notebook_names

STUDENT_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@+-]*$")


@dataclass
class Collected:
    """What ``collect`` found: the (student, assignment) pairs to grade and the problems."""

    pairs: list[tuple[str, str]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def _readable_notebook(data: bytes, label: str, problems: list[str]) -> bool:
    try:
        nb = nbformat.reads(data.decode("utf-8"), as_version=4)
        nbformat.validate(nb)
    except (UnicodeDecodeError, json.JSONDecodeError, nbformat.ValidationError, Exception) as err:
        first_line = str(err).splitlines()[0] if str(err) else type(err).__name__
        problems.append(f"{label}: not a readable notebook ({first_line}); it is graded as "
                        "missing (0 points). Ask the student to re-download and resubmit it.")
        return False
    return True


def _store(data: bytes, dest: Path) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_bytes(data)


def collect(source: Path, workdir: Path, assignments: list[str]) -> Collected:
    """Copy gradable notebooks from ``source`` into ``workdir/submitted``."""
    if not source.is_dir():
        raise CourseError(f"Submissions folder {source} does not exist. Pass a folder laid out "
                          "<student>/<assignment>/<notebook>.ipynb, or holding <student>.zip files.")
    submitted = workdir / "submitted"
    if submitted.exists():
        shutil.rmtree(submitted)  # our own copies from a previous run, never the originals
    found = Collected()
    wanted = set(assignments)
    seen: set[tuple[str, str]] = set()

    def accept(student: str, assignment: str, name: str, data: bytes, label: str) -> None:
        if assignment not in wanted:
            found.problems.append(f"{label}: assignment {assignment!r} is not being graded "
                                  f"(known: {', '.join(sorted(wanted))}); skipped.")
            return
        if name not in notebook_names(assignment):
            found.problems.append(f"{label}: {assignment} has no notebook named {name!r}; skipped.")
            return
        seen.add((student, assignment))  # graded even if unreadable: it then scores 0
        if _readable_notebook(data, label, found.problems):
            _store(data, submitted / student / assignment / f"{name}.ipynb")

    for entry in sorted(source.iterdir()):
        if entry.name.startswith("."):
            continue
        student = entry.stem if entry.suffix == ".zip" else entry.name
        if not STUDENT_ID.match(student):
            found.problems.append(f"{entry.name}: not a valid student id (letters, digits, "
                                  "'_', '.', '@', '+', '-'); skipped.")
            continue
        if entry.is_dir():
            for nb_path in sorted(entry.glob("*/*.ipynb")):
                if ".ipynb_checkpoints" in nb_path.parts:
                    continue
                accept(student, nb_path.parent.name, nb_path.stem, nb_path.read_bytes(),
                       str(nb_path.relative_to(source)))
        elif entry.suffix == ".zip":
            _collect_zip(entry, student, accept, found.problems)
        else:
            found.problems.append(f"{entry.name}: expected a student folder or a .zip; skipped.")
    found.pairs = sorted(seen)
    return found


def _collect_zip(path: Path, student: str, accept, problems: list[str]) -> None:
    try:
        archive = zipfile.ZipFile(path)
    except zipfile.BadZipFile:
        problems.append(f"{path.name}: not a valid zip file; skipped. Ask the student to resubmit.")
        return
    with archive:
        for info in archive.infolist():
            parts = PurePosixPath(info.filename).parts
            if info.is_dir() or not info.filename.endswith(".ipynb") or "__MACOSX" in parts \
                    or ".ipynb_checkpoints" in parts:
                continue
            name = PurePosixPath(info.filename).stem
            assignment = parts[-2] if len(parts) >= 2 else name
            accept(student, assignment, name, archive.read(info), f"{path.name}:{info.filename}")
