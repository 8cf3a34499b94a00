"""The gradebook as files: this course's CSV, and Canvas's or Moodle's import file.

Contract: a score is a number only where a submission was graded; not graded (a grader
failure) and not submitted leave it empty and say which in ``status``, in every format, and
are listed for the instructor's attention. Every cell is written through
:func:`autograder.outputs.spreadsheet.cell` (no text runs as a formula).
"""

from __future__ import annotations

from pathlib import Path

from ..course import CourseError
from ..pipeline.gradebook import NOT_GRADED, db_url, status
from . import lms, spreadsheet

# score: after the late penalty (nbgrader's export does the same); late_penalty: the points a
# late submission lost (autograder/pipeline/term.py), empty per cell.
GRADE_COLUMNS = ["student", "assignment", "cell", "score", "max_score", "status", "late_penalty"]


def grade_rows(workdir: Path, *, by_cell: bool = False,
               assignments: list[str] | None = None) -> list[dict]:
    """The gradebook, one row per student and assignment (or per graded cell): the columns
    of :data:`GRADE_COLUMNS`, for ``assignments`` (default: every one the gradebook holds;
    one it does not hold is an error). No score means no score, in every export: not graded
    (a grader failure) and not submitted both leave the score empty and say which in
    ``status``; whether a missing notebook is a 0 is the instructor's policy, not ours."""
    from nbgrader.api import Gradebook, MissingEntry

    if not (workdir / "gradebook.db").exists():
        raise CourseError(f"No gradebook in {workdir}: run `python -m autograder grade` first.")
    rows = []

    def row(*values: object) -> None:
        rows.append(dict(zip(GRADE_COLUMNS, values)))
    with Gradebook(db_url(workdir)) as gb:
        held = sorted(gb.assignments, key=lambda a: a.name)
        if assignments:
            missing = sorted(set(assignments) - {a.name for a in held})
            if missing:
                raise CourseError(f"{', '.join(missing)}: not in the gradebook of {workdir} (graded: "
                                  f"{', '.join(a.name for a in held) or 'nothing yet'}); grade it "
                                  "first, or leave it out.")
            held = [a for a in held if a.name in assignments]
        for assignment in held:
            for student in sorted(gb.students, key=lambda s: s.id):
                try:
                    sub = gb.find_submission(assignment.name, student.id)
                except MissingEntry:
                    row(student.id, assignment.name, "", "", float(assignment.max_score),
                        "not submitted", "")
                    continue
                state = status(workdir, student.id, assignment.name)
                if state != "graded":
                    # A grader failure is not a score: the score column stays empty.
                    row(student.id, assignment.name, "", "", float(sub.max_score), NOT_GRADED, "")
                    continue
                state = "needs manual grading" if sub.needs_manual_grade else "graded"
                if by_cell:
                    for nb in sub.notebooks:
                        for g in nb.grades:
                            row(student.id, assignment.name, g.name, float(g.score),
                                float(g.max_score), state, "")
                else:
                    penalty = float(sub.late_submission_penalty or 0.0)
                    row(student.id, assignment.name, "", float(sub.score) - penalty,
                        float(sub.max_score), state, penalty)
    return rows


EXPORT_FORMATS = ("csv", "canvas", "moodle")


def export(workdir: Path, output: Path, *, by_cell: bool = False, fmt: str = "csv",
           roster: Path | None = None, assignments: list[str] | None = None,
           ) -> tuple[int, list[str]]:
    """Write the grades as ``fmt``; return the number of rows and what needs attention.

    ``csv``: this course's own columns (:data:`GRADE_COLUMNS`). ``canvas`` / ``moodle``: the
    LMS's import file (autograder/outputs/lms.py), one row per roster student; not-graded and missing
    notebooks get an empty cell, never a 0, and are listed in what needs attention.
    """
    if fmt not in EXPORT_FORMATS:
        raise CourseError(f"Unknown export format {fmt!r}: choose one of {', '.join(EXPORT_FORMATS)}.")
    if by_cell and fmt != "csv":
        raise CourseError("--by-cell is for the csv format only: an LMS imports one score per "
                          "assignment.")
    people = lms.read_roster(roster) if roster is not None else None
    rows = grade_rows(workdir, by_cell=by_cell, assignments=assignments)
    output.parent.mkdir(parents=True, exist_ok=True)
    if fmt == "csv":
        with output.open("w", newline="", encoding="utf-8") as fh:
            # Every cell through spreadsheet.cell: scores stay numbers, no text runs as a formula.
            writer = spreadsheet.writer(fh)
            writer.writerow(GRADE_COLUMNS)
            writer.writerows([r.get(c, "") for c in GRADE_COLUMNS] for r in rows)
        flagged = [f"{r['student']}: {r['assignment']}: {r['status']}" for r in rows
                   if r["status"] in (NOT_GRADED, "not submitted")]
        return len(rows), flagged
    table = lms.lms_rows(rows, people)
    max_scores = {r["assignment"]: float(r["max_score"]) for r in rows}
    (lms.write_canvas if fmt == "canvas" else lms.write_moodle)(table, max_scores, output)
    return len(table), lms.attention(table)
