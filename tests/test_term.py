"""A term, scripted (issue #30): two assignments, a due date, late work, an extension, a
formgrader adjustment that survives a regrade, and per-assignment exports.

Everything through the instructor's commands, on real sandboxed grading of notebooks 01 and 02,
scores read from the gradebook's exports. The late policy is nbgrader's plugin contract
(autograder/pipeline/term.py); formgrader's edit is made the way formgrader makes it, a manual score on
the gradebook's Grade row, and formgrader's own API is shown to open this grading folder.
"""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from autograder.course import assignments
from autograder.pipeline import term
from autograder.sandbox.launch import unavailable
from coursefiles import REPO, read, release_path, solution_answers, with_replacements

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(unavailable() is not None, reason=f"no sandbox: {unavailable()}")]
ALL = assignments()
A1, A2 = ALL[0], ALL[1]
DUE = "2027-01-10 12:00:00 UTC"
STAMPS = {"ontime": "2027-01-10 11:00:00 UTC",
          "late": "2027-01-11 18:00:00 UTC",         # 30 h late: two days started
          "extended": "2027-01-11 18:00:00 UTC"}     # 30 h late, with 48 h more: on time
LATE_CELL = "ex3-center-rows"                        # formgrader's edit lands here


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "autograder", *args], cwd=REPO,
                          capture_output=True, text=True, timeout=1800)


def _submit(subs: Path, student: str, assignment: str, stamp: str | None) -> None:
    folder = subs / student / assignment
    folder.mkdir(parents=True)
    nbformat.write(with_replacements(read(release_path(assignment)), solution_answers(assignment)),
                   folder / f"{assignment}.ipynb")
    if stamp:
        (folder / "timestamp.txt").write_text(stamp + "\n")   # what nbgrader's exchange writes


def _rows(path: Path) -> list[list[str]]:
    with path.open(newline="") as fh:
        return list(csv.reader(fh))


def _scores(workdir: Path, *assignments: str) -> dict[tuple[str, str], dict[str, str]]:
    out = workdir / "grades.csv"
    done = _cli("export", *assignments, "--workdir", str(workdir), "--output", str(out))
    assert done.returncode == 0, done.stdout + done.stderr
    return {(r["student"], r["assignment"]): r for r in csv.DictReader(out.open())}


@pytest.fixture(scope="module")
def term_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("a term")
    subs, workdir = root / "submissions", root / "grading"
    for student, stamp in STAMPS.items():
        _submit(subs, student, A1, stamp)
    _submit(subs, "ontime", A2, STAMPS["ontime"])
    log = {}
    log["grade A1"] = _cli("grade", str(subs), A1, "--workdir", str(workdir), "--no-progress")
    log["due"] = _cli("due", A1, DUE, "--workdir", str(workdir))
    config = workdir / term.CONFIG
    config.write_text(config.read_text().replace('penalty_method = "none"', 'penalty_method = "per_day"'))
    log["extend"] = _cli("extend", "extended", A1, "--hours", "48", "--workdir", str(workdir))
    before = _scores(workdir, A1)
    # formgrader's edit: a manual score and a comment on one cell (what its grade API writes)
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{workdir / 'gradebook.db'}") as gb:
        grade = gb.find_grade(LATE_CELL, A1, A1, "ontime")
        grade.manual_score = 1.0
        cell_max = float(grade.max_score)
        gb.db.commit()
    log["adjust"] = _cli("adjust", "late", A1, "--points", "1", "--reason", "tidy code",
                         "--workdir", str(workdir))
    log["regrade"] = _cli("grade", str(subs), A1, "--workdir", str(workdir), "--no-progress")
    log["grade A2"] = _cli("grade", str(subs), A2, "--student", "ontime", "--workdir", str(workdir),
                           "--no-progress")
    log["feedback"] = _cli("feedback", A1, "--workdir", str(workdir))
    return {"workdir": workdir, "log": log, "before": before, "subs": subs, "cell_max": cell_max}


def test_every_command_succeeds(term_run):
    for step, done in term_run["log"].items():
        assert done.returncode == 0, (step, done.stdout + done.stderr)


def test_late_work_loses_what_the_policy_says_and_the_extension_saves_it(term_run):
    rows = term_run["before"]
    full = float(rows[("ontime", A1)]["max_score"])
    assert float(rows[("ontime", A1)]["score"]) == full and rows[("ontime", A1)]["late_penalty"] == "0"
    assert float(rows[("extended", A1)]["score"]) == full
    # 30 h late: two days started, 10% each, of the notebook's score
    assert float(rows[("late", A1)]["late_penalty"]) == pytest.approx(0.2 * full)
    assert float(rows[("late", A1)]["score"]) == pytest.approx(0.8 * full)


def test_adjustments_survive_a_regrade_and_the_penalty_follows_the_score(term_run):
    rows = _scores(term_run["workdir"], A1)
    full = float(rows[("ontime", A1)]["max_score"])
    # formgrader's 1 point on one cell, kept by the regrade that rewrote every automatic score
    assert float(rows[("ontime", A1)]["score"]) == full - term_run["cell_max"] + 1
    # +1 point by the command line, then 20% off the adjusted score
    assert float(rows[("late", A1)]["late_penalty"]) == pytest.approx(0.2 * (full + 1))
    assert float(rows[("late", A1)]["score"]) == pytest.approx(0.8 * (full + 1))
    kept = (term_run["workdir"] / "adjustments.json").read_text()
    assert "formgrader" in kept and "tidy code" in kept


def test_feedback_says_what_changed_the_score(term_run):
    folder = term_run["workdir"] / "feedback"
    late = (folder / "late" / A1 / f"{A1}.html").read_text()
    assert "late penalty" in late and "30.0 h late" in late and "tidy code" in late
    ontime = (folder / "ontime" / A1 / f"{A1}.html").read_text()
    assert "set in formgrader" in ontime and "on time" in ontime
    extended = (folder / "extended" / A1 / f"{A1}.html").read_text()
    assert "48 h extension" in extended and "on time" in extended


def test_exports_have_a_column_per_graded_assignment_only(term_run):
    workdir = term_run["workdir"]
    for names, columns in (((A1,), [A1]), ((), [A1, A2])):
        out = workdir / "canvas.csv"
        done = _cli("export", *names, "--format", "canvas", "--workdir", str(workdir), "--output", str(out))
        assert done.returncode == 0, done.stdout + done.stderr
        assert _rows(out)[0][5:] == columns
    assert set(ALL) - {A1, A2}, "the course has more assignments than this term graded"


def test_formgrader_opens_on_this_gradebook(term_run):
    """nbgrader's own API (what formgrader's pages call), configured by the grading folder's
    nbgrader_config.py alone, sees our assignments, students and scores."""
    from nbgrader.apps import NbGraderAPI

    workdir = term_run["workdir"]
    api = NbGraderAPI(config=term.load_config(workdir))
    assert {a["name"] for a in api.get_assignments()} >= {A1, A2}
    subs = {s["student"]: s for s in api.get_submissions(A1)}
    assert set(STAMPS) <= set(subs) and subs["late"]["autograded"]
    notebooks = api.get_student_notebook_submissions("ontime", A1)   # the manual-grading list
    assert notebooks and notebooks[0]["id"] and notebooks[0]["score"] == pytest.approx(
        float(_scores(workdir, A1)[("ontime", A1)]["score"]))


def test_bad_input_to_the_term_commands_gets_a_clear_error(term_run, tmp_path):
    workdir = str(term_run["workdir"])
    for args, words in ((("due", "99-nothing", DUE), "Unknown assignment"),
                        (("due", A1, "next tuesday-ish", "--workdir", workdir), "not a time"),
                        (("due", A1, DUE, "--workdir", str(tmp_path)), "No gradebook"),
                        (("extend", "late", A1, "--hours", "-3", "--workdir", workdir), "--hours"),
                        (("adjust", "late", A1, "--points", "1", "--workdir", workdir), "--reason"),
                        (("adjust", "late", A1, "--cell", "nope", "--score", "1", "--reason", "x",
                          "--workdir", workdir), "no graded cell"),
                        (("adjust", "nobody", A1, "--points", "1", "--reason", "x", "--workdir", workdir),
                         "no graded submission"),
                        (("adjust", "late", A1, "--cell", LATE_CELL, "--score", "99", "--reason", "x",
                          "--workdir", workdir), "between 0 and")):
        done = _cli(*args)
        assert done.returncode == 2 and words in done.stderr, (args, done.stdout, done.stderr)
        assert "Traceback" not in done.stderr
