"""Issue #31's bar through the real pipeline: a class of 30 graded with per-student variants.

Notebook 01 (the quickest to grade; its Exercise 1 has variants), a manifest frozen for a
roster of 36 with a test secret, graded by ``python -m autograder grade --variants``:

  s01..s30   solved, Exercise 1 answered right for their own variant     -> full, every one
  c01..c04   s01..s04's graded-correct predictions copied, in order,
             onto their own variant's expressions                       -> copied_score, < full
  p01, p02   s01's and s02's answer cell pasted whole (their keys)     -> 0 on that exercise

tests/test_variants.py holds the figures over every pair of a class of 30, in this process;
tests/test_pipeline.py grades three students of notebook 03 beside the attacks. This file is
the whole class, end to end: the gradebook's scores, and the variant numbers the results and
the class report show, read back from the manifest and the id alone.
"""

from __future__ import annotations

import json
import subprocess
import sys

import nbformat
import pytest

from autograder.outputs import report
from autograder.pipeline.gradebook import cell_scores
from autograder.sandbox.launch import unavailable
from coursefiles import REPO, read, release_path, solution_answers, with_replacements
from tensorcourse.variants import SPECS, freeze, params_for
from variant_answers import answer_cell, answer_id, right

pytestmark = pytest.mark.slow
ASSIGNMENT = "01-why-tensors"
SPEC = next(s for s in SPECS.values() if s.exercise.startswith(f"{ASSIGNMENT}/"))
GID = SPEC.exercise.split("/", 1)[1]
CLASS = [f"s{i:02d}" for i in range(1, 31)]
COPIERS = {f"c{i:02d}": f"s{i:02d}" for i in range(1, 5)}   # copier -> whose answers
PASTERS = {"p01": "s01", "p02": "s02"}                      # answer cell pasted whole


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    subs, workdir = tmp_path_factory.mktemp("class"), tmp_path_factory.mktemp("grading")
    variants = tmp_path_factory.mktemp("variants")
    roster = [*CLASS, *COPIERS, *PASTERS]
    manifest = freeze([SPEC], ASSIGNMENT, roster, b"the class-of-30 test's secret, 32")
    (variants / f"{ASSIGNMENT}.json").write_text(json.dumps(manifest))
    given = {s: params_for(manifest, SPEC.exercise, s)[1] for s in roster}
    solved = with_replacements(read(release_path(ASSIGNMENT)), solution_answers(ASSIGNMENT))
    cells = {s: answer_cell(SPEC, given[s], right(SPEC, given[s])) for s in CLASS}
    cells |= {c: answer_cell(SPEC, given[c], right(SPEC, given[s])) for c, s in COPIERS.items()}
    cells |= {p: cells[s] for p, s in PASTERS.items()}
    for student, cell in cells.items():
        path = subs / student / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
        path.parent.mkdir(parents=True)
        nbformat.write(with_replacements(solved, {answer_id(SPEC): cell}), path)
    cmd = [sys.executable, "-m", "autograder", "grade", str(subs), ASSIGNMENT, "--workdir",
           str(workdir), "--variants", str(variants)]
    if unavailable():  # no bubblewrap here: the pipeline is still tested, unsandboxed
        cmd += ["--no-sandbox"]
    run = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=1800)
    return {"run": run, "workdir": workdir, "manifest": manifest, "given": given}


def _scores(graded, student):
    return cell_scores(graded["workdir"], ASSIGNMENT, student)


def test_everyone_is_graded(graded):
    assert graded["run"].returncode == 0, graded["run"].stdout[-3000:] + graded["run"].stderr[-3000:]
    assert "Problems:" not in graded["run"].stdout, graded["run"].stdout.split("Problems:")[1][:3000]


def test_the_reference_earns_full_marks_on_every_variant(graded):
    numbers = {params_for(graded["manifest"], SPEC.exercise, s)[0] for s in CLASS}
    assert len(numbers) == 30 and 0 not in numbers     # thirty variants, none the published one
    for student in CLASS:
        scores = _scores(graded, student)
        assert all(s == m for s, m in scores.values()), (student, scores)


def test_copies_earn_what_a_copy_is_worth(graded):
    given = graded["given"]
    for copier, source in COPIERS.items():
        scores = _scores(graded, copier)
        worth = SPEC.copied_score(given[source], given[copier])
        assert scores[GID][0] == pytest.approx(scores[GID][1] * worth) and worth < 1, (copier, scores)
        assert all(s == m for g, (s, m) in scores.items() if g != GID), scores   # the rest solved
    for paster in PASTERS:
        scores = _scores(graded, paster)
        assert scores[GID][0] == 0, (paster, scores)


def test_results_and_report_name_each_students_variant_from_the_manifest(graded):
    workdir, manifest = graded["workdir"], graded["manifest"]
    rep = report.build(workdir, assignments=[ASSIGNMENT])[0]
    for student in [*CLASS, *COPIERS, *PASTERS]:
        result = json.loads((workdir / "results" / student / ASSIGNMENT / f"{ASSIGNMENT}.json")
                            .read_text())
        number = params_for(manifest, SPEC.exercise, student)[0]
        assert [t["variant"] for t in result["tests"] if t["grade_id"] == GID] == [number]
        assert rep.variants[GID][student] == number
