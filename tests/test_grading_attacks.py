"""Attacks on the grader, graded for real (sandboxed) next to honest controls.

One ``python -m autograder grade`` run on notebook 01: every attack in ``tests/attacks.py``
(none solves an exercise, so any point is a forgery) and three honest controls (all solved,
some solved, none). Checked: every attack scores 0 and is reported where it can be; controls
score exactly; the submissions folder is byte-identical afterwards; nothing was planted in the
checkout or the environment, nothing the attacks wrote exists outside their sandbox, and no
process is left.

The attacks on single exercises of other notebooks (``OTHER_ATTACKS``) are graded with the
honest class in test_pipeline.py, whose students are their controls.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import subprocess
import sys
import sysconfig
import textwrap
import zipfile
from pathlib import Path

import nbformat
import pytest

from attacks import ATTACKS
from autograder.pipeline import gradebook
from autograder.pipeline.gradebook import cell_scores
from autograder.sandbox.launch import unavailable
from coursefiles import (
    REPO,
    exercises,
    outlived,
    read,
    release_path,
    solution_answers,
    solution_path,
    with_replacements,
)

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(unavailable() is not None, reason=f"no sandbox: {unavailable()}")]
A = "01-why-tensors"
SITE = Path(sysconfig.get_paths()["purelib"])


def _digest(*folders: Path) -> dict[str, tuple[str, int]]:
    out = {}
    for folder in folders:
        for p in sorted(folder.rglob("*")):
            if p.is_file() and "__pycache__" not in p.parts:
                out[str(p)] = (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mtime_ns)
    return out


def _state(subs: Path) -> dict:
    """What the attacks aim at. (In a shared working tree other files of the checkout may change
    while the test runs: the checkout is watched through the files the attacks target and through
    new files, which no one else adds under these names.)"""
    return {"subs": _digest(subs),
            "check.py": _digest(REPO / "tensorcourse")[str(REPO / "tensorcourse" / "check.py")],
            "planted": sorted(str(p) for folder in (REPO / "tensorcourse", REPO / "solutions", SITE)
                              for p in folder.rglob("*") if "evil" in p.name or "tio-" in p.name),
            "pth": sorted(p.name for p in SITE.glob("*.pth"))}


def _kernels_alive(tmp: Path) -> list[str]:
    """Processes of this run's sandboxes (their socket folders are under ``tmp``)."""
    found = []
    for pid in os.listdir("/proc"):
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if str(tmp) in cmd:
            found.append(cmd)
    return found


def _write(nb, folder: Path, student: str) -> None:
    path = folder / student / A / f"{A}.ipynb"
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, path)


@pytest.fixture(scope="module")
def attacked(tmp_path_factory):
    subs, workdir = tmp_path_factory.mktemp("attack-subs"), tmp_path_factory.mktemp("attack-grading")
    paths = {"subs": subs, "workdir": workdir, "site": SITE}
    rel, answers = read(release_path(A)), solution_answers(A)
    _write(with_replacements(rel, answers), subs, "control-full")
    _write(with_replacements(rel, dict(list(answers.items())[:2])), subs, "control-some")
    _write(rel, subs, "control-none")
    # Exercise 1 solved; exercise 2 solved only if exercise 1's hidden test left its inputs in
    # the notebook (red team of #29: a later answer read them, one bit per regrade).
    first, second = list(answers)[:2]
    reader = ("try:\n    _expressions\nexcept NameError:\n    def shares_storage(a, b):\n"
              "        return None\nelse:\n" + textwrap.indent(answers[second], "    "))
    _write(with_replacements(rel, {first: answers[first], second: reader}), subs, "a-read-hidden")
    for student, (_what, build) in ATTACKS.items():
        _write(build(rel, paths), subs, student)
    # Outside the notebook: a symlinked notebook, an oversized one, a zip bomb.
    (subs / "a-symlink" / A).mkdir(parents=True)
    (subs / "a-symlink" / A / f"{A}.ipynb").symlink_to(solution_path(A))
    (subs / "a-huge" / A).mkdir(parents=True)
    (subs / "a-huge" / A / f"{A}.ipynb").write_bytes(b" " * (21 * 2**20))
    with zipfile.ZipFile(subs / "a-zipbomb.zip", "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr(f"{A}/{A}.ipynb", b" " * (30 * 2**20))
    # JSON no parser can hold: nested 100,000 deep, an integer past Python's digit limit. Each
    # is the student's broken file (0, a problem line), never the grader's failure.
    (subs / "a-deep-json" / A).mkdir(parents=True)
    (subs / "a-deep-json" / A / f"{A}.ipynb").write_text('{"cells": ' + "[" * 100_000)
    big = nbformat.writes(rel).replace('"metadata": {', '"metadata": {"n": ' + "7" * 5000 + ", ", 1)
    (subs / "a-bigint" / A).mkdir(parents=True)
    (subs / "a-bigint" / A / f"{A}.ipynb").write_text(big)
    # Archives whose member cannot be inflated: a corrupt deflate stream raised zlib.error and a
    # corrupt LZMA one LZMAError while collecting, which stopped the whole class (red team).
    for student, method in (("a-corrupt-deflate", zipfile.ZIP_DEFLATED),
                            ("a-corrupt-lzma", zipfile.ZIP_LZMA)):
        member = f"{A}/{A}.ipynb"
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", method) as zf:
            zf.writestr(member, nbformat.writes(with_replacements(rel, answers)))
        data = bytearray(buffer.getvalue())
        start = 30 + len(member)                  # the member's data, after its local header
        for i in range(start + 10, start + 60):
            data[i] ^= 0xFF
        (subs / f"{student}.zip").write_bytes(bytes(data))
    # One student, a folder and a zip: the folder is read first and graded; the zip is named.
    _write(rel, subs, "a-twice")
    with zipfile.ZipFile(subs / "a-twice.zip", "w") as zf:
        zf.writestr(f"{A}/{A}.ipynb", nbformat.writes(with_replacements(rel, answers)))
    before = _state(subs)
    tmp = tmp_path_factory.mktemp("sockets")  # this run's sandboxes, told apart from others'
    run = subprocess.run([sys.executable, "-m", "autograder", "grade", str(subs), A, "--workdir",
                          str(workdir), "--timeout", "60", "--no-progress"],
                         cwd=REPO, capture_output=True, text=True, timeout=1800,
                         env=dict(os.environ, TMPDIR=str(tmp)))
    after = _state(subs)
    return {"run": run, "workdir": workdir, "before": before, "after": after, "tmp": tmp}


def _scores(attacked, student):
    return cell_scores(attacked["workdir"], A, student)


def test_grading_run_succeeds(attacked):
    assert attacked["run"].returncode == 0, attacked["run"].stdout + attacked["run"].stderr


SOLVING = {"a-hide-similarity"}  # solves honestly; attacks the report, not the score


@pytest.mark.parametrize("student", [*sorted(set(ATTACKS) - SOLVING), "a-symlink", "a-huge", "a-zipbomb",
                                     "a-twice", "a-deep-json", "a-bigint", "a-corrupt-deflate",
                                     "a-corrupt-lzma"])
def test_every_attack_scores_zero(attacked, student):
    scores = _scores(attacked, student)
    assert scores and all(s == 0 for s, _ in scores.values()), (ATTACKS.get(student), scores)


def test_a_later_answer_cannot_read_an_earlier_tests_hidden_names(attacked):
    scores = list(_scores(attacked, "a-read-hidden").values())
    assert scores[0][0] == scores[0][1] > 0 and scores[1][0] == 0, scores


def test_controls_score_exactly(attacked):
    full = _scores(attacked, "control-full")
    assert all(s == m > 0 for s, m in full.values()), full
    some = list(_scores(attacked, "control-some").values())
    assert [s == m for s, m in some] == [True, True] + [False] * (len(some) - 2), some
    assert all(s == 0 for s, _ in _scores(attacked, "control-none").values())


def test_attacks_are_reported(attacked):
    out = attacked["run"].stdout
    for student in ("a-custom-exc", "a-transformer", "a-magic", "a-patch-equal", "a-settrace",
                    "a-dunder-escape", "a-patch-check", "a-patch-alias", "a-wrapped",
                    "a-shadow-method", "a-lying-float", "a-def-eval", "a-getattr-alias",
                    "a-reduce-getattr", "a-type-class", "a-leak-tests", "a-torch-builtins",
                    "a-indirect-module", "a-np-runstring", "a-widgets-shell", "a-widgets-shell-alias",
                    "a-singledispatch-eval", "a-benchmark-timer",
                    "a-update-wrapper-code", "a-wraps-alias", "a-metaclass-float",
                    "a-annassign-shadow", "a-format-leak", "a-format-leak-dynamic",
                    "a-format-leak-unbound", "a-format-leak-map", "a-long-expression",
                    "a-deep-not", "a-indented-cell", "a-call-escape", "a-slow-transform"):
        assert f"{student}/{A}" in out.split("Tampering")[-1], (student, out)
    for student, words in (("a-symlink", "symlink"), ("a-huge", "limit"), ("a-zipbomb", "limit"),
                           ("a-locked-edit", "locked cell"), ("a-skip-tags", "locked cell"),
                           ("a-twice", "more than once"), ("a-corrupt-deflate", "cannot be extracted"),
                           ("a-corrupt-lzma", "cannot be extracted")):
        assert any(student in line and words in line for line in out.splitlines()), (student, out)
    assert "control-" not in out.split("Problems:")[-1] if "Problems:" in out else True


def test_a_course_cell_never_evaluates_what_an_answer_appended(attacked):
    """Red team of #31: a "Check yourself" cell after a test evaluates each expression the
    release listed. While the list was a list, an answer appended code to it, and the course's
    own cell ran it unscreened (it rewired the test runner; the values checked outside caught
    the forged passes). The release's lists are tuples now (test_release holds it), and this
    answer cell, Exercise 1's, has variants: only its predictions written out may run there
    (autograder.judge.variants.predictions_problem), so the attack is refused unrun."""
    out = attacked["run"].stdout
    assert not any("a-release-list" in line and "do not bear out" in line
                   for line in out.splitlines()), out
    results = attacked["workdir"] / "results" / "a-release-list" / A / f"{A}.json"
    ex1 = json.loads(results.read_text())["tests"][0]
    assert ex1["grade_id"] == "ex1-dtypes" and not ex1["passed"], ex1
    assert "your answer was not run" in ex1["message"] and "not code that computes" in ex1["message"]


def test_reports_are_printed_clean(attacked):
    """Escapes from a submission are printed escaped: nothing repaints the instructor's screen."""
    out = attacked["run"].stdout + attacked["run"].stderr
    assert "\x1b" not in out and "\\x1b[2J" in out, out[-2000:]
    assert not any(line.startswith("attacker") for line in out.splitlines())


def test_a_flood_of_error_text_is_bounded(attacked):
    """40 MB of exception text: the kept notebook stays small; everyone else is graded."""
    executed = attacked["workdir"] / "autograded" / "a-huge-error" / A / f"{A}.ipynb"
    assert executed.stat().st_size < 4 * 2**20, executed.stat().st_size
    results = attacked["workdir"] / "results"
    graded = {p.parent.parent.name for p in results.rglob("*.json")}
    assert {"control-full", "control-some", "control-none", "a-huge-error"} <= graded


def test_nothing_outside_the_sandbox_changed(attacked):
    assert attacked["after"] == attacked["before"]
    assert not Path("/tmp/tio-pwned").exists()
    assert not _kernels_alive(attacked["tmp"])
    # Nothing of the grading outlives it: kernel folders, sockets, the seccomp filter.
    assert outlived(attacked["tmp"]) == []


def test_unparsable_json_is_the_students_broken_file_not_a_grader_failure(attacked):
    for student in ("a-deep-json", "a-bigint"):
        assert gradebook.status(attacked["workdir"], student, A) == "graded", student
        assert any(student in line and "not a readable notebook" in line
                   for line in attacked["run"].stdout.splitlines()), attacked["run"].stdout[-3000:]


def test_an_answer_the_grader_cannot_parse_is_refused_not_a_grader_failure(attacked):
    for student in ("a-long-expression", "a-deep-not"):
        assert gradebook.status(attacked["workdir"], student, A) == "graded", student
        assert any(student in line and "not read by the grader" in line
                   for line in attacked["run"].stdout.splitlines()), attacked["run"].stdout[-3000:]


def test_learner_text_is_never_quoted_as_the_courses_message(attacked):
    """Feedback quotes only what the course's code raised with its own plain text: not a C-level
    error naming a learner's class, not an object's late __str__, not a checker the answer holds;
    and a misconception line they forge is not kept."""
    workdir = attacked["workdir"]
    for student in ("a-c-level-name", "a-late-str", "a-held-checker", "a-fake-builtin-exc",
                    "a-repr-in-message", "a-surrogate"):
        results = json.loads((workdir / "results" / student / A / f"{A}.json").read_text())
        text = json.dumps(results["tests"])
        assert not any(w in text for w in ("LEAKED-NAME", "LATE-TEXT", "HELD-NAME", "FAKE-NAME",
                                           "REPR-TEXT", "SURROGATE")), text
        assert all(t["misconception"] == "" for t in results["tests"]), text


def test_report_covers_an_attacked_class_and_sees_hidden_answers(attacked, tmp_path):
    from autograder.outputs.similarity import answers_of

    run = subprocess.run([sys.executable, "-m", "autograder", "report", "--workdir",
                          str(attacked["workdir"]), "--output", str(tmp_path)],
                         cwd=REPO, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    page = (tmp_path / f"{A}.html").read_text()
    assert "<script" not in page.split("</style>", 1)[1]
    # Marking answer cells `solution: false` hides nothing: the report reads what was graded.
    seen = answers_of(attacked["workdir"], A)
    assert seen["a-hide-similarity"] == seen["control-full"]


def test_feedback_never_shows_test_code(attacked):
    workdir = attacked["workdir"]
    run = subprocess.run([sys.executable, "-m", "autograder", "feedback", A, "--workdir", str(workdir)],
                         cwd=REPO, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    sol = read(solution_path(A))
    hidden = [line.strip() for _, t in exercises(sol) for line in sol.cells[t].source.splitlines()
              if len(line.strip()) > 25]
    pages = list((workdir / "feedback").rglob("*.html"))
    assert len(pages) >= len(ATTACKS)
    for page in pages:
        text = page.read_text()
        assert "TIO-" not in text and "BEGIN HIDDEN" not in text
        leaked = [line for line in hidden if line in text]
        assert not leaked, (page, leaked)
