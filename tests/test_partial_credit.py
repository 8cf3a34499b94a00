"""Partial credit where an exercise's parts are separate questions (issue #30).

Notebook 01's first exercise predicts seven dtypes: each prediction is worth 2/7 of its 2 points
(``tensorcourse.check.parts``). In the kernel the test still fails unless all are right; the
grader awards each passing check's points, decided outside the kernel against the reference
run (``autograder.values.partial``). Function exercises stay all-or-nothing.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import nbformat
import pytest
import torch

from autograder import grading
from autograder.sandbox import Limits, unavailable
from autograder.values import partial
from coursefiles import read, release_path, solution_answers, with_replacements
from tensorcourse import check

A = "01-why-tensors"


def test_parts_go_on_after_a_wrong_one_and_fail_the_test_at_the_end():
    seen = []
    with pytest.raises(AssertionError) as caught:
        with check.parts() as p:
            for value in (1, 2, 3):
                with p.part():
                    seen.append(value)
                    assert check.same_value(value, 2, name=f"part {value}", points=1)
    assert seen == [1, 2, 3]
    text = str(caught.value)
    assert text.startswith("2 of 3 parts wrong; the first: part 1")


def test_a_learners_error_in_a_part_shows_its_type_only():
    def learners(_):
        raise KeyError("the hidden test's inputs, quoted")

    with pytest.raises(AssertionError) as caught:
        with check.parts() as p:
            with p.part():
                learners(1)
    assert "your code raised KeyError" in str(caught.value) and "quoted" not in str(caught.value)


def test_all_parts_right_pass_and_bad_points_are_refused():
    with check.parts() as p:
        with p.part():
            assert check.same_value(torch.int64, torch.int64, points=0.5)
    with pytest.raises(ValueError):
        check.same_value(1, 1, points=float("nan"))


def _rec(actual, expected, points=1.0, name="p"):
    enc = {"t": "builtins.int"}
    return {"kind": "same_value", "actual": {**enc, "v": actual}, "expected": {**enc, "v": expected},
            "options": {"points": points, "name": name}}


def test_partial_uses_the_references_points_and_decides_each_part_here():
    reference = [_rec(1, 1, name="a"), _rec(2, 2, name="b"), _rec(3, 3, name="c")]
    # the learner's own records claim their expected values: ignored, the reference decides
    learner = [_rec(1, 1, name="a"), _rec(5, 5, name="b"), _rec(3, 3, name="c")]
    assert partial(reference, learner) == 2.0
    # a part that never ran (the learner's code raised first) is skipped, not shifted
    assert partial(reference, [learner[0], learner[2]]) == 2.0
    # points claimed by the learner's records are not the reference's: no match, nothing earned
    assert partial(reference, [_rec(1, 1, points=100.0, name="a")]) == 0.0
    assert partial([{"kind": "same_value", "options": {}}], []) is None   # no parts: all or nothing
    assert partial(reference, [{"kind": "unreadable"}, "x"]) == 0.0       # learner junk: nothing


@pytest.mark.slow
@pytest.mark.skipif(unavailable() is not None, reason=f"no sandbox: {unavailable()}")
def test_a_real_class_gets_points_per_right_prediction(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    subs, workdir = tmp_path / "subs", tmp_path / "grading"
    rel = read(release_path(A))
    answers = dict(solution_answers(A))
    gid = next(g for g in answers if g.startswith("ex1"))
    body = answers[gid].split("### BEGIN SOLUTION")[1].split("### END SOLUTION")[0]
    for expr in ("torch.arange(5) / 2", "torch.Tensor([1, 2, 3])"):   # two of seven wrong
        body = body.replace(f'"{expr}": torch.float32', f'"{expr}": torch.int64')
    answers[gid] = body
    for student, nb in (("all-right", with_replacements(rel, solution_answers(A))),
                        ("five-of-seven", with_replacements(rel, answers))):
        path = subs / student / A / f"{A}.ipynb"
        path.parent.mkdir(parents=True)
        nbformat.write(nb, path)
    results, problems, _ = grading.grade(subs, workdir, [A], Limits(), jobs=1, progress=False)
    assert [r.status for r in results] == ["graded", "graded"], problems
    cells = grading.cell_scores(workdir, A, "five-of-seven")
    test = next(g for g in cells if g.startswith("ex1"))
    assert cells[test] == (pytest.approx(5 * 2 / 7), 2.0)
    full = grading.cell_scores(workdir, A, "all-right")
    by = {r.student: r for r in results}
    assert by["five-of-seven"].score == pytest.approx(by["all-right"].score - 2 * 2 / 7)
    assert full[test] == (2.0, 2.0)
    page = grading.feedback(workdir, [A])
    text = next(p for p in page if "five-of-seven" in str(p)).read_text()
    assert "2 of 7 parts wrong" in text and "partial credit" in text and "1.42857" in text
