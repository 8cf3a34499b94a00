"""The real nbgrader pipeline (python -m autograder) on fixture submissions.

Like nbgrader's own tests: build submissions, run the command a teacher runs,
and check the scores recorded in the gradebook and the exported CSV.

Fixture students, for every assignment:
  full-marks  the release with the solution answers -> every graded cell full
  untouched   the student notebook as released    -> every graded cell 0
  mistaken    each exercise's first wrong variant -> every graded cell below full
and, for the first assignment only (they test the pipeline, not the content):
  no-tests    full solution with a test cell deleted        -> still graded, full
  loops       an exercise replaced by an infinite loop      -> that exercise 0, rest full
  exits       an exercise calls exit() (the kernel stops)   -> earlier full, later 0, recorded
  garbled     not a notebook at all                        -> 0, reported, others unaffected
  zipped      full solution submitted as <student>.zip      -> full
and, for notebook 03, per-student variants (a manifest frozen for these three alone; the
others are graded on the published exercises, with a note):
  variant-own        solved, its own variants of Ex2 and Ex5 answered right -> full
  variant-copies     variant-own's predictions copied, in order            -> copied_score
  variant-published  the published solution's predictions, re-keyed       -> at most 1 - min_from_0/10
and, where the sandbox is available, the attacks on single exercises of other notebooks
(``OTHER_ATTACKS`` in tests/attacks.py: 06, 09, 10), each submitting only its notebook ->
every cell 0. They are graded in the same run as the honest students, whose full-marks and
untouched notebooks are their controls: one reference run and one set of controls per
notebook, not two, and the honest scores are proved beside attackers.

The attack corpus on notebook 01, with its checks that nothing outside the sandbox changed,
is in test_grading_attacks.py.
"""

from __future__ import annotations

import csv
import hashlib
import json
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import nbformat
import pytest

from attacks import OTHER_ATTACKS
from autograder.outputs import report
from autograder.pipeline.gradebook import cell_scores
from autograder.sandbox.launch import unavailable
from coursefiles import (
    REPO,
    assignments,
    exercises,
    nbgrader_meta,
    read,
    release_path,
    solution_answers,
    solution_path,
    with_replacements,
)
from tensorcourse.variants import SPECS, freeze, params_for
from variant_answers import answer_cell, answer_id, right
from wrong_answers import wrong_answers

pytestmark = pytest.mark.slow
SITE = Path(sysconfig.get_paths()["purelib"])
# Attacks run only in the sandbox: without bubblewrap the pipeline is tested unsandboxed and
# the attacks are skipped (test_grading_attacks.py says why).
ATTACKERS = {} if unavailable() else {a: students for a, students in OTHER_ATTACKS.items()
                                      if release_path(a).exists()}
# Assignments with a generated release (one being written may not have it yet; test_release
# checks that every assignment has one).
ALL = [a for a in assignments() if release_path(a).exists()]
FIRST = ALL[0]
# The main run uses the default per-cell timeout, which the slowest solution cell must fit
# (a cold torch.compile included). The edge-case run uses a short one so the infinite loop
# costs seconds, not a minute.
EDGE_CELL_TIMEOUT = 15
VARIANT = "03-indexing-and-views"
VARIANT_STUDENTS = ("variant-own", "variant-copies", "variant-published")
VARIANT_SPECS = [s for s in SPECS.values() if s.exercise.startswith(f"{VARIANT}/")]


def _tests_of(assignment: str) -> list[str]:
    sol = read(solution_path(assignment))
    return [nbgrader_meta(sol.cells[t])["grade_id"] for _, t in exercises(sol)]


def _answers_of(assignment: str) -> list[str]:
    sol = read(solution_path(assignment))
    return [nbgrader_meta(sol.cells[s])["grade_id"] for s, _ in exercises(sol)]


def _write(nb, folder: Path, student: str, assignment: str) -> None:
    path = folder / student / assignment / f"{assignment}.ipynb"
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, path)


def _digest(folder: Path) -> dict[str, tuple[str, int]]:
    return {str(p.relative_to(folder)): (hashlib.sha256(p.read_bytes()).hexdigest(),
                                         p.stat().st_mtime_ns)
            for p in sorted(folder.rglob("*")) if p.is_file()}


def _solved(assignment: str):
    """What an honest student who solved everything submits: the release, answers filled in."""
    return with_replacements(read(release_path(assignment)), solution_answers(assignment))


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    subs = tmp_path_factory.mktemp("submissions")      # every assignment, three students
    edge = tmp_path_factory.mktemp("edge-submissions")  # the first assignment's edge cases
    workdir = tmp_path_factory.mktemp("grading")
    for a in ALL:
        rel = read(release_path(a))
        _write(_solved(a), subs, "full-marks", a)
        _write(rel, subs, "untouched", a)
        table = wrong_answers(a)
        _write(with_replacements(rel, {gid: table[gid][0].source for gid in _answers_of(a) if gid in table}),
               subs, "mistaken", a)

    variants = tmp_path_factory.mktemp("variants")
    manifest = freeze(VARIANT_SPECS, VARIANT, VARIANT_STUDENTS, b"the pipeline test's secret, 32 B")
    (variants / f"{VARIANT}.json").write_text(json.dumps(manifest))
    given = {s: {spec.exercise: params_for(manifest, spec.exercise, s)[1] for spec in VARIANT_SPECS}
             for s in VARIANT_STUDENTS}
    own = given["variant-own"]
    for student, source in (("variant-own", lambda spec: right(spec, own[spec.exercise])),
                            ("variant-copies", lambda spec: right(spec, own[spec.exercise])),
                            ("variant-published", lambda spec: spec.answers0)):
        cells = {answer_id(spec): answer_cell(spec, given[student][spec.exercise], source(spec))
                 for spec in VARIANT_SPECS}
        _write(with_replacements(_solved(VARIANT), cells), subs, student, VARIANT)

    for a, students in ATTACKERS.items():
        rel = read(release_path(a))
        for student, (_what, build) in students.items():
            _write(build(rel, {"subs": subs, "workdir": workdir, "site": SITE}), subs, student, a)

    sol = _solved(FIRST)
    answers = _answers_of(FIRST)
    no_tests = nbformat.from_dict(dict(sol))
    deleted = _tests_of(FIRST)[0]
    no_tests.cells = [c for c in sol.cells if nbgrader_meta(c).get("grade_id") != deleted]
    _write(no_tests, edge, "no-tests", FIRST)
    _write(with_replacements(sol, {answers[2]: "while True:\n    pass\n"}), edge, "loops", FIRST)
    _write(with_replacements(sol, {answers[2]: "exit()\n"}), edge, "exits", FIRST)
    garbled = edge / "garbled" / FIRST / f"{FIRST}.ipynb"
    garbled.parent.mkdir(parents=True)
    garbled.write_text("{ this is not json")
    with zipfile.ZipFile(edge / "zipped.zip", "w") as zf:
        zf.writestr(f"{FIRST}/{FIRST}.ipynb", nbformat.writes(sol))

    before = {"main": _digest(subs), "edge": _digest(edge)}
    runs = []
    for folder, names, timeout in ((subs, ALL, None), (edge, [FIRST], EDGE_CELL_TIMEOUT)):
        # Options before the assignments on purpose: any order must be accepted.
        cmd = [sys.executable, "-m", "autograder", "grade", str(folder), "--workdir", str(workdir),
               *names]
        if timeout:
            cmd += ["--timeout", str(timeout)]
        else:
            cmd += ["--variants", str(variants)]
        if unavailable():  # no bubblewrap here: the pipeline is still tested, unsandboxed
            cmd += ["--no-sandbox"]
        runs.append(subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=3000))
    return {"subs": subs, "edge": edge, "workdir": workdir, "runs": runs, "before": before,
            "manifest": manifest, "given": given}


def _scores(graded, assignment, student):
    return cell_scores(graded["workdir"], assignment, student)


def test_grade_command_succeeds_and_reports_problems(graded):
    for run in graded["runs"]:
        assert run.returncode == 0, run.stdout + run.stderr
    edge_out = graded["runs"][1].stdout
    assert "garbled" in edge_out and "not a readable notebook" in edge_out
    assert "kernel died" in edge_out, edge_out.split("Problems:")[-1][-3000:]


def test_untouched_and_honest_notebooks_raise_no_problems(graded):
    out = graded["runs"][0].stdout
    problems = out.split("Problems:", 1)[1] if "Problems:" in out else ""
    honest = ("full-marks", "untouched", "mistaken")
    assert not any(f"{s}/" in problems for s in honest), out
    # The attackers in the same run may be reported for tampering; an honest student never is.
    for line in out.splitlines():
        if "TAMPERING" in line or "checksum" in line.lower():
            assert not any(s in line for s in honest), line
    if not ATTACKERS:
        assert "TAMPERING" not in out and "checksum" not in out.lower(), out


def test_submissions_are_never_modified(graded):
    assert {"main": _digest(graded["subs"]), "edge": _digest(graded["edge"])} == graded["before"]


@pytest.mark.parametrize("assignment", ALL)
def test_solution_scores_full_marks(graded, assignment):
    scores = _scores(graded, assignment, "full-marks")
    assert set(scores) == set(_tests_of(assignment))
    assert all(s == m for s, m in scores.values()), scores


@pytest.mark.parametrize("assignment", ALL)
def test_untouched_release_scores_zero_everywhere(graded, assignment):
    scores = _scores(graded, assignment, "untouched")
    assert scores and all(s == 0 for s, _ in scores.values()), scores


@pytest.mark.parametrize("assignment", ALL)
def test_wrong_answers_score_below_full(graded, assignment):
    scores = _scores(graded, assignment, "mistaken")
    assert all(s < m for s, m in scores.values()), scores


@pytest.mark.parametrize("assignment", sorted(ATTACKERS))
def test_attacks_on_other_notebooks_score_zero(graded, assignment):
    """Their controls, in the same run: full-marks full, untouched 0 (the tests above)."""
    for student, (what, _build) in ATTACKERS[assignment].items():
        scores = _scores(graded, assignment, student)
        assert scores and all(s == 0 for s, _ in scores.values()), (student, what, scores)


def test_deleted_test_cell_is_restored_and_graded(graded):
    scores = _scores(graded, FIRST, "no-tests")
    assert set(scores) == set(_tests_of(FIRST))
    assert all(s == m for s, m in scores.values()), scores


def test_infinite_loop_is_interrupted(graded):
    scores = _scores(graded, FIRST, "loops")
    tests = _tests_of(FIRST)
    assert scores[tests[2]][0] == 0
    assert all(scores[t][0] == scores[t][1] for t in tests if t != tests[2]), scores


def test_dead_kernel_still_records_a_grade(graded):
    scores = _scores(graded, FIRST, "exits")
    tests = _tests_of(FIRST)
    assert all(scores[t][0] == scores[t][1] for t in tests[:2]), scores
    assert all(scores[t][0] == 0 for t in tests[2:]), scores


def test_unreadable_notebook_scores_zero(graded):
    scores = _scores(graded, FIRST, "garbled")
    assert scores and all(s == 0 for s, _ in scores.values())


def test_zip_submission_is_graded(graded):
    scores = _scores(graded, FIRST, "zipped")
    assert all(s == m for s, m in scores.values()), scores


def test_feedback_and_export(graded):
    workdir = graded["workdir"]
    fb = subprocess.run([sys.executable, "-m", "autograder", "feedback", "--workdir", str(workdir)],
                        cwd=REPO, capture_output=True, text=True)
    assert fb.returncode == 0, fb.stdout + fb.stderr
    html = workdir / "feedback" / "mistaken" / FIRST / f"{FIRST}.html"
    assert html.is_file() and "AssertionError" in html.read_text()
    out = workdir / "grades.csv"
    ex = subprocess.run([sys.executable, "-m", "autograder", "export", "--workdir", str(workdir),
                         "--output", str(out)], cwd=REPO, capture_output=True, text=True)
    assert ex.returncode == 0, ex.stdout + ex.stderr
    rows = list(csv.DictReader(out.open()))
    by_key = {(r["student"], r["assignment"]): r for r in rows}
    full = by_key[("full-marks", FIRST)]
    assert float(full["score"]) == float(full["max_score"]) > 0
    assert float(by_key[("untouched", FIRST)]["score"]) == 0
    assert by_key[("exits", FIRST)]["status"] == "graded"
    assert by_key[("no-tests", FIRST)]["status"] == "graded"
    if len(ALL) > 1:  # edge-case students submitted only the first assignment
        assert by_key[("loops", ALL[1])]["status"] == "not submitted"


def test_each_student_is_graded_on_their_own_variant(graded):
    """Issue #31's bar, through the real pipeline: right answers to one's own variant earn full
    marks; the same predictions copied, in order, onto a classmate's variant earn exactly what
    the spec says a copy is worth (decided outside the sandbox, against torch's answers for
    that variant); the published solution's, at most 1 - min_from_0/10. The results, the
    feedback page and the class report say which variant each student had."""
    if "Problems:" in graded["runs"][0].stdout:
        problems = graded["runs"][0].stdout.split("Problems:", 1)[1]
        assert not any(f"{s}/" in problems for s in VARIANT_STUDENTS), problems
    # The others were graded on the published exercises, and the run says so.
    assert "full-marks" in graded["runs"][0].stdout.split("not in its manifest")[1].split("\n")[0]
    given, own = graded["given"], graded["given"]["variant-own"]
    full = _scores(graded, VARIANT, "variant-own")
    assert all(s == m for s, m in full.values()), full
    for student, source in (("variant-copies", own), ("variant-published", None)):
        scores = _scores(graded, VARIANT, student)
        for spec in VARIANT_SPECS:
            gid = spec.exercise.split("/")[1]
            copied = spec.copied_score(source[spec.exercise] if source else spec.variant0,
                                        given[student][spec.exercise])
            assert scores[gid][0] == pytest.approx(scores[gid][1] * copied), (student, gid, scores)
            assert scores[gid][0] < scores[gid][1]
            if source is None:
                assert copied <= 1 - spec.min_from_0 / len(spec.answers0)
        # Their other exercises are solved: only the predictions differ.
        assert all(s == m for g, (s, m) in scores.items()
                   if g not in {x.exercise.split("/")[1] for x in VARIANT_SPECS}), scores
    workdir = graded["workdir"]
    result = json.loads((workdir / "results" / "variant-copies" / VARIANT / f"{VARIANT}.json").read_text())
    numbers = {t["grade_id"]: t["variant"] for t in result["tests"] if t.get("variant") is not None}
    assert numbers == {spec.exercise.split("/")[1]: params_for(graded["manifest"], spec.exercise,
                                                               "variant-copies")[0]
                       for spec in VARIANT_SPECS} and all(numbers.values())
    fb = subprocess.run([sys.executable, "-m", "autograder", "feedback", VARIANT, "--workdir",
                         str(workdir)], cwd=REPO, capture_output=True, text=True)
    assert fb.returncode == 0, fb.stdout + fb.stderr
    page = (workdir / "feedback" / "variant-copies" / VARIANT / f"{VARIANT}.html").read_text()
    assert all(f"your variant: {n}" in page for n in numbers.values())
    assert "your variant" not in (workdir / "feedback" / "full-marks" / VARIANT /
                                  f"{VARIANT}.html").read_text()
    rep = report.build(workdir, assignments=[VARIANT])[0]
    assert {g: v["variant-copies"] for g, v in rep.variants.items()} == numbers
    assert all("full-marks" not in v for v in rep.variants.values())
    html = report.assignment_page(rep)
    assert "<h2>Variants</h2>" in html and '<td class="msg">variant-copies</td>' in html


def test_bad_input_gets_a_clear_error(tmp_path):
    run = subprocess.run([sys.executable, "-m", "autograder", "grade", str(tmp_path / "nope")],
                         cwd=REPO, capture_output=True, text=True)
    assert run.returncode == 2 and "does not exist" in run.stderr and "Traceback" not in run.stderr
    run = subprocess.run([sys.executable, "-m", "autograder", "generate", "99-nothing"],
                         cwd=REPO, capture_output=True, text=True)
    assert run.returncode == 2 and "Unknown assignment" in run.stderr
    run = subprocess.run([sys.executable, "-m", "autograder", "export", "--workdir", str(tmp_path)],
                         cwd=REPO, capture_output=True, text=True)
    assert run.returncode == 2 and "grade` first" in run.stderr
