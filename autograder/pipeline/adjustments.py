"""Manual adjustments that last: a cell's score, or points on a notebook, each with a reason.

Why: ``grade`` rewrites every automatic score, and used to clear ``Grade.manual_score`` with
it, so what an instructor set in formgrader vanished at the next regrade, silently, and never
reached the feedback page.

The source of truth is ``<workdir>/adjustments.json``: one record per (student, assignment,
notebook, cell), ``cell`` a test's grade id, or ``""`` for the notebook as a whole. A record
sets a cell's ``score`` and/or adds ``points`` (negative allowed), with a ``reason``. What the
records make lives in nbgrader's gradebook fields, which its ``Grade.score`` adds up and
formgrader shows and edits: a score as ``Grade.manual_score``, points as ``Grade.extra_credit``
(a notebook's on its first graded cell: nbgrader has no notebook-level field).

* :func:`record` (``python -m autograder adjust``) writes a record and the gradebook;
* :func:`harvest` runs before ``grade`` rewrites a notebook's scores: a manual score or extra
  credit in the gradebook that the records do not explain was set in formgrader, and becomes a
  record (reason: formgrader's comment on that cell, else "set in formgrader");
* :func:`apply` runs after: the records, written back into the gradebook.

So an adjustment survives every regrade, whichever tool made it.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass
from pathlib import Path

from ..course import CourseError

FILE = "adjustments.json"


@dataclass
class Adjustment:
    student: str
    assignment: str
    notebook: str
    cell: str                    # a test's grade id, or "" for the notebook
    score: float | None = None   # the cell's score (a cell only)
    points: float | None = None  # added on top
    reason: str = ""
    source: str = "command line"

    @property
    def key(self) -> tuple[str, str, str, str]:
        return self.student, self.assignment, self.notebook, self.cell

    def describe(self, max_score: float | None = None) -> str:
        what = self.cell or "the notebook"
        parts = []
        if self.score is not None:
            parts.append(f"{what} set to {self.score:g}" + (f" of {max_score:g}" if max_score else ""))
        if self.points:
            parts.append(f"{self.points:+g} point(s) on {what}")
        return "; ".join(parts) + (f": {self.reason}" if self.reason else "")


def load(workdir: Path) -> list[Adjustment]:
    path = workdir / FILE
    if not path.is_file():
        return []
    try:
        return [Adjustment(**row) for row in json.loads(path.read_text(encoding="utf-8"))]
    except (ValueError, TypeError) as err:
        raise CourseError(f"{path} is not an adjustments file ({err}); restore it from a "
                          "backup or delete it (the gradebook keeps what it made).") from None


def save(workdir: Path, adjustments: list[Adjustment]) -> None:
    path = workdir / FILE
    rows = [asdict(a) for a in sorted(adjustments, key=lambda a: a.key)]
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(rows, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    tmp.replace(path)   # never a half-written file


def _notebook(gb, student: str, assignment: str, notebook: str):
    from nbgrader.api import MissingEntry

    try:
        return gb.find_submission_notebook(notebook, assignment, student)
    except MissingEntry:
        return None


def _expected(mine: list[Adjustment], grades) -> dict[str, tuple[float | None, float | None]]:
    """``{cell: (manual_score, extra_credit)}`` the records make for one notebook."""
    out: dict[str, tuple[float | None, float | None]] = {g.name: (None, None) for g in grades}
    first = grades[0].name if grades else ""
    for a in mine:
        cell = a.cell or first
        if cell not in out:
            continue
        score, extra = out[cell]
        if a.cell and a.score is not None:
            score = a.score
        if a.points:
            extra = (extra or 0.0) + a.points
        out[cell] = (score, extra)
    return out


def _graded_cells(nb) -> list:
    return sorted(nb.grades, key=lambda g: g.name) if nb is not None else []


def harvest(workdir: Path, gb, student: str, assignment: str, notebook: str) -> int:
    """Turn what formgrader changed in this notebook into records; returns how many."""
    nb = _notebook(gb, student, assignment, notebook)
    if nb is None:
        return 0
    records = load(workdir)
    mine = [a for a in records if a.key[:3] == (student, assignment, notebook)]
    grades = _graded_cells(nb)
    expected = _expected(mine, grades)
    comments = {c.name: (c.manual_comment or "").strip() for c in getattr(nb, "comments", [])}
    found = 0
    for g in grades:
        want_score, want_extra = expected[g.name]
        changed_score = g.manual_score is not None and g.manual_score != want_score
        changed_extra = (g.extra_credit or 0.0) != (want_extra or 0.0)
        if not (changed_score or changed_extra):
            continue
        found += 1
        reason = comments.get(g.name) or "set in formgrader"
        cell = next((a for a in mine if a.cell == g.name), None)
        if cell is None:
            cell = Adjustment(student, assignment, notebook, g.name, source="formgrader")
            records.append(cell)
            mine.append(cell)
        if changed_score:
            cell.score = float(g.manual_score)
        if changed_extra:
            # formgrader shows one extra credit per cell: the notebook's own points stay theirs
            notebook_points = sum(a.points or 0.0 for a in mine if not a.cell) if g is grades[0] else 0.0
            cell.points = float(g.extra_credit or 0.0) - notebook_points or None
        cell.reason, cell.source = reason, "formgrader"
    if found:
        save(workdir, records)
    return found


def apply(workdir: Path, gb, student: str, assignment: str, notebook: str) -> list[Adjustment]:
    """Write this notebook's records into the gradebook (after its automatic scores); returns
    them. A notebook that was not graded keeps no manual score (it has no score to adjust)."""
    nb = _notebook(gb, student, assignment, notebook)
    mine = [a for a in load(workdir) if a.key[:3] == (student, assignment, notebook)]
    if nb is None:
        return mine
    graded = all(g.auto_score is not None for g in nb.grades)
    for g in nb.grades:
        score, extra = _expected(mine, _graded_cells(nb))[g.name] if graded else (None, None)
        g.manual_score = score
        g.extra_credit = extra
    gb.db.commit()
    return mine


def record(workdir: Path, adjustment: Adjustment, *, remove: bool = False) -> str:
    """Add, replace or remove one record (``python -m autograder adjust``); writes the gradebook
    when the notebook is graded. Returns what was done, in words."""
    from nbgrader.api import Gradebook

    from ..course import notebook_names
    from .gradebook import db_url

    a = adjustment
    if a.notebook not in notebook_names(a.assignment):
        raise CourseError(f"{a.assignment} has no notebook {a.notebook!r}.")
    for value, name in ((a.score, "--score"), (a.points, "--points")):
        if value is not None and not math.isfinite(value):
            raise CourseError(f"{name} must be a number.")
    if not remove and a.score is None and not a.points:
        raise CourseError("say what to change: --score X (a cell's score) or --points P (added).")
    if not remove and not a.reason.strip():
        raise CourseError("give a --reason: it is shown to the student on the feedback page.")
    if a.score is not None and not a.cell:
        raise CourseError("--score sets one cell's score: name it with --cell GRADE_ID (or use "
                          "--points for the notebook as a whole).")
    if not (workdir / "gradebook.db").exists():
        raise CourseError(f"No gradebook in {workdir}: grade the assignment first.")
    with Gradebook(db_url(workdir)) as gb:
        nb = _notebook(gb, a.student, a.assignment, a.notebook)
        if nb is None:
            raise CourseError(f"{a.student} has no graded submission of {a.assignment} in {workdir}.")
        cells = {g.name: g for g in nb.grades}
        if a.cell and a.cell not in cells:
            raise CourseError(f"{a.assignment} has no graded cell {a.cell!r}; its cells: "
                              f"{', '.join(sorted(cells))}.")
        if a.score is not None and not 0 <= a.score <= float(cells[a.cell].max_score):
            raise CourseError(f"--score must be between 0 and {cells[a.cell].max_score:g} "
                              f"(the cell's points); use --points for extra credit.")
        harvest(workdir, gb, a.student, a.assignment, a.notebook)   # keep formgrader's first
        records = [r for r in load(workdir) if r.key != a.key]
        if not remove:
            records.append(a)
        save(workdir, records)
        apply(workdir, gb, a.student, a.assignment, a.notebook)
    return (f"removed the adjustment of {a.cell or 'the notebook'}" if remove
            else f"adjusted: {a.describe()}")
