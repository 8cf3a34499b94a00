"""Autograde, feedback and export, on nbgrader's gradebook in the working folder.

Every (student, assignment) is autograded on its own, so one broken submission
never stops the others. After a run every submission has a recorded score: if
nbgrader could not grade a notebook at all, its grades are recorded as 0 and
the problem is reported for the instructor to look at.
"""

from __future__ import annotations

import csv
import logging
from dataclasses import dataclass
from pathlib import Path

from .course import DEFAULT_CELL_TIMEOUT, CourseError, base_config
from .submissions import collect

log = logging.getLogger("autograder")


@dataclass
class GradeResult:
    student: str
    assignment: str
    score: float
    max_score: float
    problem: str = ""


def _api(workdir: Path, cell_timeout: int = DEFAULT_CELL_TIMEOUT):
    from nbgrader.apps import NbGraderAPI

    workdir.mkdir(parents=True, exist_ok=True)
    config = base_config(workdir, release=workdir / "release", db=workdir / "gradebook.db",
                         cell_timeout=cell_timeout)
    return NbGraderAPI(config=config)


def db_url(workdir: Path) -> str:
    return f"sqlite:///{workdir / 'gradebook.db'}"


def _zero_ungraded(workdir: Path, assignment: str, student: str) -> None:
    """Record 0 for every autograded cell nbgrader left without a score."""
    from nbgrader.api import Gradebook, MissingEntry

    with Gradebook(db_url(workdir)) as gb:
        gb.update_or_create_student(student)
        try:
            submission = gb.find_submission(assignment, student)
        except MissingEntry:
            submission = gb.add_submission(assignment, student)
        for notebook in submission.notebooks:
            for grade in notebook.grades:
                if grade.auto_score is None and grade.manual_score is None:
                    grade.auto_score = 0
                    grade.needs_manual_grade = False
        gb.db.commit()


def _first_error(log_text: str) -> str:
    for line in log_text.splitlines():
        if "Error" in line or "error" in line:
            return line.strip()[:300]
    return "see the nbgrader log"


def grade(submissions: Path, workdir: Path, assignments: list[str],
          cell_timeout: int = DEFAULT_CELL_TIMEOUT) -> tuple[list[GradeResult], list[str]]:
    """Autograde every submission under ``submissions``; return results and problems."""
    api = _api(workdir, cell_timeout)
    for assignment in assignments:
        result = api.generate_assignment(assignment, force=True, create=True)
        if not result["success"]:
            raise CourseError(f"Could not prepare {assignment} for grading:\n{result['log']}")
    found = collect(submissions, workdir, assignments)
    problems = list(found.problems)
    if not found.pairs:
        problems.append(f"No submissions found in {submissions} for "
                        f"{', '.join(assignments)}.")
    results = []
    for student, assignment in found.pairs:
        log.info("Grading %s / %s", student, assignment)
        try:
            outcome = api.autograde(assignment, student, force=True, create=True)
        except Exception as err:  # noqa: BLE001 - one submission must never stop the others
            outcome = {"success": False, "log": f"Error: {type(err).__name__}: {err}"}
        problem = ""
        if not outcome["success"]:
            problem = (f"{student}/{assignment}: nbgrader could not grade it "
                       f"({_first_error(outcome['log'])}); ungraded cells recorded as 0. "
                       "Open the submission to check it by hand.")
            problems.append(problem)
            _zero_ungraded(workdir, assignment, student)
        elif "Kernel died" in outcome["log"] or "KernelDied" in outcome["log"]:
            problem = (f"{student}/{assignment}: the kernel died during grading; cells that "
                       "did not run score 0.")
            problems.append(problem)
        score, max_score = submission_score(workdir, assignment, student)
        results.append(GradeResult(student, assignment, score, max_score, problem))
    return results, problems


def submission_score(workdir: Path, assignment: str, student: str) -> tuple[float, float]:
    from nbgrader.api import Gradebook

    with Gradebook(db_url(workdir)) as gb:
        sub = gb.find_submission(assignment, student)
        return float(sub.score), float(sub.max_score)


def cell_scores(workdir: Path, assignment: str, student: str) -> dict[str, tuple[float, float]]:
    """``{grade_id: (score, max_score)}`` for one submission (all its notebooks)."""
    from nbgrader.api import Gradebook

    with Gradebook(db_url(workdir)) as gb:
        sub = gb.find_submission(assignment, student)
        return {g.name: (float(g.score), float(g.max_score))
                for nb in sub.notebooks for g in nb.grades}


def feedback(workdir: Path, assignments: list[str]) -> list[Path]:
    """HTML feedback for every graded submission; returns the files written."""
    api = _api(workdir)
    autograded = workdir / "autograded"
    if not autograded.is_dir():
        raise CourseError(f"Nothing graded in {workdir} yet: run `python -m autograder grade` first.")
    written: list[Path] = []
    for student_dir in sorted(p for p in autograded.iterdir() if p.is_dir()):
        for assignment in assignments:
            if not (student_dir / assignment).is_dir():
                continue
            outcome = api.generate_feedback(assignment, student_dir.name, force=True)
            if not outcome["success"]:
                log.error("Feedback for %s/%s failed:\n%s", student_dir.name, assignment,
                          outcome["log"])
                continue
            written += sorted((workdir / "feedback" / student_dir.name / assignment).glob("*.html"))
    return written


def export(workdir: Path, output: Path, *, by_cell: bool = False) -> int:
    """Write a CSV of scores per student and assignment (or per graded cell); return row count."""
    from nbgrader.api import Gradebook, MissingEntry

    if not (workdir / "gradebook.db").exists():
        raise CourseError(f"No gradebook in {workdir}: run `python -m autograder grade` first.")
    rows = []
    with Gradebook(db_url(workdir)) as gb:
        for assignment in sorted(gb.assignments, key=lambda a: a.name):
            for student in sorted(gb.students, key=lambda s: s.id):
                try:
                    sub = gb.find_submission(assignment.name, student.id)
                except MissingEntry:
                    rows.append([student.id, assignment.name, "", 0.0,
                                 float(assignment.max_score), "not submitted"])
                    continue
                status = "needs manual grading" if sub.needs_manual_grade else "graded"
                if by_cell:
                    for nb in sub.notebooks:
                        for g in nb.grades:
                            rows.append([student.id, assignment.name, g.name, float(g.score),
                                         float(g.max_score), status])
                else:
                    rows.append([student.id, assignment.name, "", float(sub.score),
                                 float(sub.max_score), status])
    output.parent.mkdir(parents=True, exist_ok=True)
    with output.open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["student", "assignment", "cell", "score", "max_score", "status"])
        writer.writerows(rows)
    return len(rows)
