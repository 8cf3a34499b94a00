"""Read learners' submissions without trusting them: bounded, no symlinks, never written to.

Accepted layouts of the folder given to ``grade``:

* ``<student>/<assignment>/<notebook>.ipynb`` (what nbgrader's collect produces);
* ``<student>.zip`` holding ``<assignment>/<notebook>.ipynb`` or just
  ``<notebook>.ipynb`` (the notebook is named after its assignment).

Contract: :func:`collect` returns the notebooks found, as bytes in memory, with a problem line
for everything refused: a symlink anywhere (never followed), a file or zip over
:data:`MAX_NOTEBOOK_BYTES` / :data:`MAX_ZIP_BYTES`, a zip holding too many entries or too much
uncompressed data (a zip bomb), a name that is not a valid student, assignment or notebook.
Files are opened read-only with ``O_NOFOLLOW``; the folder is never modified. Whether the
bytes are a notebook is decided later (:mod:`autograder.judge.answers`), so an unreadable
notebook is still graded: 0 points, reported.
"""

from __future__ import annotations

import os
import stat
import zipfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from ..course import STUDENT_ID, CourseError, notebook_names
from ..course import assignments as course_assignments

MAX_NOTEBOOK_BYTES = 20 * 1024 * 1024     # a notebook with images stays far below this
MAX_ZIP_BYTES = 50 * 1024 * 1024
MAX_ZIP_ENTRIES = 1000
MAX_ZIP_UNCOMPRESSED = 100 * 1024 * 1024


@dataclass
class Collected:
    """What ``collect`` found: notebooks by (student, assignment) -> {notebook: bytes}."""

    found: dict[tuple[str, str], dict[str, bytes]] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    origin: dict[tuple[str, str, str], str] = field(default_factory=dict)  # where each was read
    # Notebooks of assignments not asked for, by assignment: one note, not a problem each
    # (a term grades one assignment at a time; the folder holds them all).
    skipped: dict[str, int] = field(default_factory=dict)
    present: set[str] = field(default_factory=set)   # every known assignment seen in the folder
    # When each (student, assignment) came in (autograder/pipeline/term.py decides which counts): the
    # text of nbgrader's timestamp.txt in a submission folder, and the newest file's time.
    stamps: dict[tuple[str, str], str] = field(default_factory=dict)
    mtimes: dict[tuple[str, str], float] = field(default_factory=dict)

    @property
    def pairs(self) -> list[tuple[str, str]]:
        return sorted(self.found)


def _read_file(path: Path, label: str, problems: list[str]) -> bytes | None:
    """The bytes of a regular file, refusing symlinks and oversized files."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError as err:
        why = "a symlink (never followed)" if path.is_symlink() else err.strerror
        problems.append(f"{label}: {why}; skipped.")
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            problems.append(f"{label}: not a regular file; skipped.")
            return None
        if info.st_size > MAX_NOTEBOOK_BYTES:
            problems.append(f"{label}: {info.st_size / 2**20:.1f} MiB, over the "
                            f"{MAX_NOTEBOOK_BYTES // 2**20} MiB limit for a notebook; graded as "
                            "missing. Ask the student to clear outputs and resubmit.")
            return b""
        with os.fdopen(fd, "rb", closefd=False) as fh:
            return fh.read(MAX_NOTEBOOK_BYTES + 1)[:MAX_NOTEBOOK_BYTES + 1]
    finally:
        os.close(fd)


def collect(source: Path, assignments: list[str], students: list[str] | None = None) -> Collected:
    """Every submitted notebook of ``assignments`` under ``source`` (see the module docstring).

    ``students``: only these students' folders and zips are read; nothing is said about the
    others. Notebooks of known assignments not in ``assignments`` are counted in
    :attr:`Collected.skipped`, not listed as problems."""
    if not source.is_dir():
        raise CourseError(f"Submissions folder {source} does not exist. Pass a folder laid out "
                          "<student>/<assignment>/<notebook>.ipynb, or holding <student>.zip files.")
    found = Collected()
    wanted, known = set(assignments), set(course_assignments())

    def accept(student: str, assignment: str, name: str, data: bytes | None, label: str,
               mtime: float = 0.0) -> None:
        if assignment in known:
            found.present.add(assignment)
        if assignment not in wanted:
            if assignment in known:
                found.skipped[assignment] = found.skipped.get(assignment, 0) + 1
            else:
                found.problems.append(f"{label}: {assignment!r} is not an assignment of this "
                                      "course; skipped.")
            return
        if name not in notebook_names(assignment):
            found.problems.append(f"{label}: {assignment} has no notebook named {name!r}; skipped.")
            return
        notebooks = found.found.setdefault((student, assignment), {})
        if data is not None and name in notebooks:
            # A folder and a zip (or two zip entries) for one notebook: which one the student
            # meant is not the grader's guess to make silently.
            found.problems.append(f"{label}: {student} submitted {assignment}/{name}.ipynb more "
                                  "than once (a folder and a zip?); the first one read, from "
                                  f"{found.origin[(student, assignment, name)]}, is graded.")
        elif data is not None:
            notebooks[name] = data
            found.origin[(student, assignment, name)] = label
            found.mtimes[(student, assignment)] = max(found.mtimes.get((student, assignment), 0.0),
                                                      mtime)

    for entry in sorted(os.scandir(source), key=lambda e: e.name):
        if entry.name.startswith("."):
            continue
        student = entry.name[:-4] if entry.name.endswith(".zip") else entry.name
        if students is not None and student not in students:
            continue
        if entry.is_symlink():
            found.problems.append(f"{entry.name}: a symlink (never followed); skipped.")
            continue
        if not STUDENT_ID.match(student):
            found.problems.append(f"{entry.name}: not a valid student id (letters, digits, "
                                  "'_', '.', '@', '+', '-'); skipped.")
            continue
        try:
            if entry.is_dir(follow_symlinks=False):
                _collect_folder(Path(entry.path), source, student, accept, found.problems)
                for key, text in _stamps(Path(entry.path), student).items():
                    if key in found.found:
                        found.stamps[key] = text
            elif entry.name.endswith(".zip") and entry.is_file(follow_symlinks=False):
                _collect_zip(Path(entry.path), student, accept, found.problems)
            else:
                found.problems.append(f"{entry.name}: expected a student folder or a .zip; skipped.")
        except Exception as err:  # noqa: BLE001 - one student's files never stop the class
            found.problems.append(f"{entry.name}: could not be read ({type(err).__name__}: "
                                  f"{str(err)[:200]}); what was read of it is graded, the rest "
                                  "is missing.")
    return found


def _collect_folder(folder: Path, source: Path, student: str, accept, problems: list[str]) -> None:
    for sub in sorted(os.scandir(folder), key=lambda e: e.name):
        if sub.name.startswith("."):
            continue
        if sub.is_symlink():
            problems.append(f"{student}/{sub.name}: a symlink (never followed); skipped.")
            continue
        if not sub.is_dir(follow_symlinks=False):
            continue
        for nb in sorted(os.scandir(sub.path), key=lambda e: e.name):
            if not nb.name.endswith(".ipynb"):
                continue
            label = f"{student}/{sub.name}/{nb.name}"
            accept(student, sub.name, nb.name[:-6], _read_file(Path(nb.path), label, problems), label,
                   _mtime(Path(nb.path)))


def _mtime(path: Path) -> float:
    try:
        return path.lstat().st_mtime
    except OSError:
        return 0.0


def _stamps(folder: Path, student: str) -> dict[tuple[str, str], str]:
    """``timestamp.txt`` of each assignment folder (what nbgrader's exchange writes on submit):
    a small regular file, never followed through a link; its text, undecoded bytes replaced."""
    out = {}
    for sub in os.scandir(folder):
        path = Path(sub.path) / "timestamp.txt"
        try:
            info = path.lstat()
        except OSError:
            continue
        if sub.is_dir(follow_symlinks=False) and stat.S_ISREG(info.st_mode) and info.st_size <= 200:
            out[(student, sub.name)] = path.read_bytes().decode("utf-8", "replace")
    return out


def _collect_zip(path: Path, student: str, accept, problems: list[str]) -> None:
    size = path.lstat().st_size
    if size > MAX_ZIP_BYTES:
        problems.append(f"{path.name}: {size / 2**20:.1f} MiB, over the {MAX_ZIP_BYTES // 2**20} "
                        "MiB limit for a zip; skipped. Ask the student to resubmit without outputs.")
        return
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError):
        problems.append(f"{path.name}: not a valid zip file; skipped. Ask the student to resubmit.")
        return
    with archive:
        infos = archive.infolist()
        total = sum(i.file_size for i in infos)
        if len(infos) > MAX_ZIP_ENTRIES or total > MAX_ZIP_UNCOMPRESSED:
            problems.append(f"{path.name}: {len(infos)} entries, {total / 2**20:.0f} MiB "
                            f"uncompressed (limits {MAX_ZIP_ENTRIES} entries, "
                            f"{MAX_ZIP_UNCOMPRESSED // 2**20} MiB): a zip bomb or the wrong "
                            "folder; skipped.")
            return
        for info in infos:
            parts = PurePosixPath(info.filename).parts
            if info.is_dir() or not info.filename.endswith(".ipynb") or "__MACOSX" in parts \
                    or ".ipynb_checkpoints" in parts:
                continue
            label = f"{path.name}:{info.filename}"
            if stat.S_ISLNK(info.external_attr >> 16):
                problems.append(f"{label}: a symlink inside the zip (never followed); skipped.")
                continue
            name = PurePosixPath(info.filename).stem
            assignment = parts[-2] if len(parts) >= 2 else name
            if info.file_size > MAX_NOTEBOOK_BYTES:
                problems.append(f"{label}: over the {MAX_NOTEBOOK_BYTES // 2**20} MiB limit for a "
                                "notebook; graded as missing.")
                accept(student, assignment, name, b"", label)
                continue
            try:
                with archive.open(info) as fh:
                    data = fh.read(MAX_NOTEBOOK_BYTES + 1)
            except Exception as err:  # noqa: BLE001 - zlib.error, lzma.LZMAError, EOFError...: the
                # student's archive, never a grader failure (red team of #29: one corrupt
                # deflate stream stopped the whole class)
                problems.append(f"{label}: cannot be extracted ({type(err).__name__}: "
                                f"{str(err)[:200]}); graded as missing.")
                data = b""
            if len(data) > MAX_NOTEBOOK_BYTES:
                problems.append(f"{label}: inflates past the {MAX_NOTEBOOK_BYTES // 2**20} MiB "
                                "limit (the zip lies about its size); graded as missing.")
                data = b""
            accept(student, assignment, name, data, label, _mtime(path))
