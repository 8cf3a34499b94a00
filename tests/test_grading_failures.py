"""A grader failure is never a grade: not graded, said so everywhere, regraded on request.

A real grading run (sandboxed kernels, nbgrader's gradebook) of three students on notebook 01,
where the kernel of one of them cannot start (as when the sandbox cannot read the environment).
Checked: that student is "not graded" in the run's results, the gradebook export (empty score)
and the feedback (no page); the others are exact; `--retry-failed` then grades only that
student, and `--student` only the one named. One assignment at a time (issue #30): alice also
handed in notebook 02, which nobody asked for; it is a note, not a problem, and neither the
gradebook nor the LMS file gets a column for it; `--retry-failed` with nothing left exits 0.
"""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from autograder.outputs import export, feedback
from autograder.pipeline import grading, unit
from autograder.sandbox.launch import Limits, unavailable
from coursefiles import REPO, read, release_path, solution_answers, with_replacements

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(unavailable() is not None, reason=f"no sandbox: {unavailable()}")]
A = "01-why-tensors"


def _write(nb, folder, student):
    path = folder / student / A / f"{A}.ipynb"
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, path)


def _rows(workdir):
    out = workdir / "grades.csv"
    export.export(workdir, out)
    return {r["student"]: r for r in csv.DictReader(out.open())}


def test_not_graded_is_never_a_score_and_can_be_regraded(tmp_path, monkeypatch):
    subs, workdir = tmp_path / "sub missions", tmp_path / "grading folder"  # spaces are fine
    # nbgrader runs `alembic` from this environment (the command line puts it on PATH too).
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    rel = read(release_path(A))
    solved = with_replacements(rel, solution_answers(A))
    for student in ("alice", "bob", "carol"):
        _write(solved, subs, student)
    other = sorted(p.name for p in (REPO / "notebooks").iterdir() if p.name[:2] == "02")[0]
    (subs / "alice" / other).mkdir()
    (subs / "alice" / other / f"{other}.ipynb").write_bytes(release_path(other).read_bytes())
    real = unit._execute

    def broken_for_bob(nb, job, *rest):
        if job.student == "bob":
            raise unit.GraderFailure("the kernel did not start (simulated)")
        return real(nb, job, *rest)

    monkeypatch.setattr(unit, "_execute", broken_for_bob)
    results, problems, _ = grading.grade(subs, workdir, [A], Limits(), jobs=1, progress=False)
    by = {r.student: r for r in results}
    assert by["bob"].status == "not graded" and by["alice"].status == by["carol"].status == "graded"
    assert by["alice"].score == by["alice"].max_score > 0
    assert any("bob" in p and "NOT GRADED" in p and "--retry-failed" in p for p in problems)
    assert not [p for p in problems if other in p], problems          # quiet scoping
    assert any(other in n and "not asked for" in n for n in grading.notes_seen), grading.notes_seen
    rows = _rows(workdir)
    assert rows["bob"]["status"] == "not graded" and rows["bob"]["score"] == ""
    assert rows["alice"]["status"] == "graded" and float(rows["alice"]["score"]) > 0
    pages = feedback.pages(workdir, [A])
    assert {p.parent.parent.name for p in pages} == {"alice", "carol"}

    # The machine is fixed: only what is not graded is graded again.
    monkeypatch.setattr(unit, "_execute", real)
    seen: list[str] = []
    real_grade = unit.grade_notebook

    def spy(job):
        seen.append(job.student)   # grading.REFERENCE too: the solution, graded as the oracle
        return real_grade(job)
    monkeypatch.setattr(grading, "grade_notebook", spy)
    results, _, _ = grading.grade(subs, workdir, [A], Limits(), jobs=1, progress=False,
                                  retry_failed=True)
    # The reference the first run used is kept (autograder/pipeline/reference_cache.py): no
    # solution runs again, and bob scores as alice did against it.
    assert seen == ["bob"] and [r.status for r in results] == ["graded"]
    assert any("1 of 1 kept" in n for n in grading.notes_seen), grading.notes_seen
    rows = _rows(workdir)
    assert rows["bob"]["status"] == "graded" and rows["bob"]["score"] == rows["alice"]["score"]

    seen.clear()
    results, _, _ = grading.grade(subs, workdir, [A], Limits(), jobs=1, progress=False,
                                  students=["carol"])
    assert seen == ["carol"] and len(_rows(workdir)) == 3
    assert {r["assignment"] for r in _rows(workdir).values()} == {A}
    canvas = tmp_path / "canvas.csv"
    export.export(workdir, canvas, fmt="canvas")
    header = next(csv.reader(canvas.open()))
    assert header[5:] == [A], header                                 # one column: what was graded

    # Nothing left to regrade: said so, exit 0, no "Next:" (nothing new to feed back).
    run = subprocess.run([sys.executable, "-m", "autograder", "grade", str(subs), A, "--retry-failed",
                          "--workdir", str(workdir), "--no-progress"],
                         cwd=REPO, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "nothing to regrade" in run.stdout and "Next:" not in run.stdout
    assert "Problems" not in run.stdout, run.stdout
