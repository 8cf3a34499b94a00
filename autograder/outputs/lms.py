"""Grades for a learning-management system: a roster and Canvas's and Moodle's import CSVs.

Contract:

* :func:`read_roster` reads the instructor's roster CSV: columns ``student`` (the id of the
  submission folders; required and unique), ``name``, ``lms_id``, ``email``, ``section``,
  ``sis_user_id``, ``sis_login_id`` (all but ``student`` may be empty or absent).
  Anything else is a :class:`CourseError` that says which line and what to fix.
* :func:`lms_rows` turns the gradebook's per-assignment rows into one row per roster
  student (and any graded student the roster lacks, flagged): a score where there is one; an
  empty cell where the notebook was **not graded** (a grader failure is never a 0) or not
  submitted; and what needs the instructor's attention, said in words.
* :func:`write_canvas` / :func:`write_moodle` write the files those systems import.

Formats, as their documentation describes them:

* **Canvas** (Grades > Import): the gradebook export's columns ``Student``, ``ID``,
  ``SIS User ID``, ``SIS Login ID``, ``Section``, then one column per assignment, and a
  second row ``Points Possible``. Canvas matches a row by ``ID`` (its user id) or the SIS
  columns; a blank score changes nothing. A column named after no existing assignment
  creates one. We fill ``ID`` from ``lms_id`` and the SIS columns from ``sis_user_id`` and
  ``sis_login_id`` (Canvas's own gradebook export has all three); a login id is not an email,
  so the email never goes there.
* **Moodle** (Grades > Import > CSV file): any header row; on import the instructor maps a
  user column ("Map from": ``Email address`` or ``ID number``) and each grade column to a
  grade item. Empty grades are skipped. We write ``ID number`` (``lms_id``), ``Email address``,
  ``Full name``, ``Section``, one column per assignment and its ``... feedback`` column
  (which says "not graded" or "not submitted" where there is no score).
"""

from __future__ import annotations

import csv
from dataclasses import dataclass, field
from pathlib import Path

from ..course import CourseError
from . import spreadsheet

ROSTER_COLUMNS = ("student", "name", "lms_id", "email", "section", "sis_user_id", "sis_login_id")
CANVAS_HEADER = ("Student", "ID", "SIS User ID", "SIS Login ID", "Section")
MOODLE_HEADER = ("ID number", "Email address", "Full name", "Section")


@dataclass(frozen=True)
class Person:
    student: str
    name: str = ""
    lms_id: str = ""
    email: str = ""
    section: str = ""
    sis_user_id: str = ""
    sis_login_id: str = ""


@dataclass
class LmsRow:
    person: Person
    scores: dict[str, float | None] = field(default_factory=dict)  # assignment -> score
    notes: dict[str, str] = field(default_factory=dict)            # assignment -> why none
    on_roster: bool = True


def read_roster(path: Path) -> list[Person]:
    """The roster's people, in file order; a clear error for a file that is not one."""
    if not path.is_file():
        raise CourseError(f"No roster at {path}: pass --roster a CSV with a header row "
                          f"{','.join(ROSTER_COLUMNS)} (only `student` is required).")
    try:
        return _people(path)
    except UnicodeDecodeError:
        raise CourseError(f"{path} is not UTF-8 text: save the roster as UTF-8 CSV (Excel: "
                          "\"CSV UTF-8\").") from None


def _people(path: Path) -> list[Person]:
    with path.open(newline="", encoding="utf-8-sig") as fh:
        reader = csv.DictReader(fh)
        header = [h.strip() for h in (reader.fieldnames or [])]
        if "student" not in header:
            raise CourseError(f"{path}: the first line must be a header naming the column "
                              f"`student` (found {header or 'an empty file'}); columns: "
                              f"{', '.join(ROSTER_COLUMNS)}.")
        unknown = [h for h in header if h not in ROSTER_COLUMNS]
        if unknown:
            raise CourseError(f"{path}: unknown column(s) {unknown}; a roster has "
                              f"{', '.join(ROSTER_COLUMNS)}.")
        people, seen = [], set()
        for line, raw in enumerate(reader, start=2):
            row = {k.strip(): (v or "").strip() for k, v in raw.items() if k is not None}
            if None in raw:
                raise CourseError(f"{path}, line {line}: more cells than the header has columns.")
            if not row.get("student"):
                raise CourseError(f"{path}, line {line}: empty `student` (the submission "
                                  "folder's name); every row needs one.")
            if row["student"] in seen:
                raise CourseError(f"{path}, line {line}: student {row['student']!r} is listed twice.")
            seen.add(row["student"])
            people.append(Person(**{k: row.get(k, "") for k in ROSTER_COLUMNS}))
    return people


def lms_rows(grades: list[dict], roster: list[Person] | None) -> list[LmsRow]:
    """One row per roster student, then any graded student missing from the roster.

    ``grades``: the gradebook's per-assignment rows (``student``, ``assignment``, ``score``,
    ``max_score``, ``status``), as :func:`autograder.outputs.export.grade_rows` returns them.
    """
    assignments = sorted({g["assignment"] for g in grades})
    people = list(roster) if roster is not None else []
    known = {p.student for p in people}
    extra = sorted({g["student"] for g in grades} - known)
    rows = [LmsRow(p) for p in people] + [LmsRow(Person(s), on_roster=roster is None)
                                          for s in extra]
    by_key = {(g["student"], g["assignment"]): g for g in grades}
    for row in rows:
        for a in assignments:
            g = by_key.get((row.person.student, a))
            status = g["status"] if g else "not submitted"
            if status in ("graded", "needs manual grading") and g["score"] != "":
                row.scores[a] = float(g["score"])
                if status != "graded":
                    row.notes[a] = status
            else:
                row.scores[a] = None
                row.notes[a] = status
        if not row.on_roster:
            row.notes["(roster)"] = "in the gradebook but not on the roster: add them or check the id"
    return rows


def write_canvas(rows: list[LmsRow], max_scores: dict[str, float], output: Path) -> None:
    """Canvas's import file; every cell through :func:`autograder.outputs.spreadsheet.cell` (scores
    stay numbers; text that a spreadsheet would run as a formula gets a leading ``'``)."""
    assignments = sorted(max_scores)
    output.parent.mkdir(parents=True, exist_ok=True)
    with output.open("w", newline="", encoding="utf-8") as fh:
        w = spreadsheet.writer(fh)
        w.writerow([*CANVAS_HEADER, *assignments])
        w.writerow(["Points Possible", "", "", "", "", *(max_scores[a] for a in assignments)])
        for r in rows:
            p = r.person
            w.writerow([p.name or p.student, p.lms_id, p.sis_user_id, p.sis_login_id, p.section,
                        *(r.scores.get(a) for a in assignments)])


def write_moodle(rows: list[LmsRow], max_scores: dict[str, float], output: Path) -> None:
    """Moodle's import file; every cell through :func:`autograder.outputs.spreadsheet.cell`."""
    assignments = sorted(max_scores)
    output.parent.mkdir(parents=True, exist_ok=True)
    with output.open("w", newline="", encoding="utf-8") as fh:
        w = spreadsheet.writer(fh)
        w.writerow([*MOODLE_HEADER, *(c for a in assignments for c in (a, f"{a} feedback"))])
        for r in rows:
            p = r.person
            cells: list[object] = []
            for a in assignments:
                cells += [r.scores.get(a), r.notes.get(a, "")]
            w.writerow([p.lms_id, p.email, p.name or p.student, p.section, *cells])


def attention(rows: list[LmsRow]) -> list[str]:
    """What the instructor must look at before importing, one line per student."""
    lines = []
    for r in rows:
        notes = [f"{a}: {why}" for a, why in r.notes.items()]
        if notes:
            lines.append(f"{r.person.student}: " + "; ".join(notes))
    return lines
