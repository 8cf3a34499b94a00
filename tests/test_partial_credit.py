"""Partial credit where an exercise's parts are separate questions (issue #30).

Notebook 01's first exercise predicts seven dtypes: each prediction is worth 2/7 of its 2 points
(``tensorcourse.check.parts``). In the kernel the test still fails unless all are right; the
grader awards each passing check's points, decided outside the kernel against the reference
run (``autograder.judge.values.partial``). Every other predict exercise gives its predictions equal shares
the same way (CONTRIBUTING.md lists them); the static test below holds that each such cell's parts sum
to its points. Function exercises stay all-or-nothing.
"""

from __future__ import annotations

import ast
import os
import sys
from pathlib import Path

import nbformat
import pytest
import torch
from verdict_rules import CHECKERS

from autograder.judge.values import partial
from autograder.outputs import feedback
from autograder.pipeline import gradebook, grading
from autograder.sandbox.launch import Limits, unavailable
from coursefiles import (
    assignments,
    is_test,
    nbgrader_meta,
    read,
    release_path,
    solution_answers,
    solution_path,
    with_replacements,
)
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
    cells = gradebook.cell_scores(workdir, A, "five-of-seven")
    test = next(g for g in cells if g.startswith("ex1"))
    assert cells[test] == (pytest.approx(5 * 2 / 7), 2.0)
    full = gradebook.cell_scores(workdir, A, "all-right")
    by = {r.student: r for r in results}
    assert by["five-of-seven"].score == pytest.approx(by["all-right"].score - 2 * 2 / 7)
    assert full[test] == (2.0, 2.0)
    page = feedback.pages(workdir, [A])
    text = next(p for p in page if "five-of-seven" in str(p)).read_text()
    assert "2 of 7 parts wrong" in text and "partial credit" in text and "1.42857" in text


# -- every test cell with parts: its parts' points sum to the cell's points -------------------

def _is_check_call(node, attr):
    """``<...>.check.<attr>(...)``, as the course's test cells write it (``tc.check.parts()``)."""
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == attr
            and isinstance(node.func.value, ast.Attribute) and node.func.value.attr == "check")


def _points_of(call):
    return next((k.value for k in call.keywords if k.arg == "points"), None)


def _iterated_name(loop):
    """``xs`` for ``for ... in xs``, ``xs.items()`` or ``xs.keys()``; else None."""
    it = loop.iter
    if isinstance(it, ast.Call) and isinstance(it.func, ast.Attribute) and it.func.attr in ("items", "keys") \
            and not it.args:
        it = it.func.value
    return it.id if isinstance(it, ast.Name) else None


def _parts_problems(source, cell_points):
    """What keeps a test cell's parts from summing to its points: each ``with tc.check.parts() as
    p:`` block holds one ``for`` loop over a name ``xs`` (or ``xs.items()``), whose body has one
    ``with p.part():``, holding one recorded check with ``points=<cell points> / len(xs)``; no check
    with points outside a part. An empty list: the parts sum to the cell's points."""
    tree = ast.parse(source)
    problems, in_parts = [], set()
    blocks = [(n, item.optional_vars.id) for n in ast.walk(tree) if isinstance(n, ast.With)
              for item in n.items if _is_check_call(item.context_expr, "parts")
              and isinstance(item.optional_vars, ast.Name)]
    for block, name in blocks:
        loops = [s for s in block.body if isinstance(s, ast.For)]
        if len(block.body) != 1 or len(loops) != 1:
            problems.append(f"line {block.lineno}: the parts block must hold a single for loop")
            continue
        loop = loops[0]
        parts = [s for s in loop.body if isinstance(s, ast.With) and any(
            isinstance(i.context_expr, ast.Call) and isinstance(i.context_expr.func, ast.Attribute)
            and i.context_expr.func.attr == "part" and isinstance(i.context_expr.func.value, ast.Name)
            and i.context_expr.func.value.id == name for i in s.items)]
        if len(parts) != 1:
            problems.append(f"line {loop.lineno}: one `with {name}.part():` per iteration, "
                            f"found {len(parts)}")
            continue
        calls = [n for n in ast.walk(parts[0]) if any(_is_check_call(n, k) for k in CHECKERS)
                 and _points_of(n) is not None]
        in_parts.update(id(c) for c in calls)
        if len(calls) != 1:
            problems.append(f"line {parts[0].lineno}: one check with points= per part, found {len(calls)}")
            continue
        points, over = _points_of(calls[0]), _iterated_name(loop)
        share = (isinstance(points, ast.BinOp) and isinstance(points.op, ast.Div)
                 and isinstance(points.left, ast.Constant) and isinstance(points.right, ast.Call)
                 and isinstance(points.right.func, ast.Name) and points.right.func.id == "len"
                 and len(points.right.args) == 1 and isinstance(points.right.args[0], ast.Name))
        if not share or over is None or points.right.args[0].id != over \
                or points.left.value != cell_points:
            problems.append(f"line {calls[0].lineno}: points= must be {cell_points} / len(<what the "
                            f"loop iterates>), is {ast.unparse(points)} (the loop iterates "
                            f"{ast.unparse(loop.iter)})")
    stray = [n for n in ast.walk(tree) if any(_is_check_call(n, k) for k in CHECKERS)
             and _points_of(n) is not None and id(n) not in in_parts]
    problems += [f"line {n.lineno}: a check with points= outside a part" for n in stray]
    return problems


def _cells_with_parts():
    for assignment in assignments():
        nb = read(solution_path(assignment))
        for cell in nb.cells:
            if is_test(cell) and "points=" in cell.source:
                yield assignment, nbgrader_meta(cell), cell.source


def test_every_predict_exercise_gives_parts_that_sum_to_its_points():
    """The contract in CONTRIBUTING.md: the predict exercises give partial credit, each prediction
    an equal share; their parts' points sum to the cell's points, so a learner with every
    prediction right earns exactly the cell's points (and the grader never caps a part away)."""
    cells = list(_cells_with_parts())
    assert len(cells) >= 19, [f"{a}/{m['grade_id']}" for a, m, _ in cells]
    found = []
    for assignment, meta, source in cells:
        hidden = source.split("### BEGIN HIDDEN TESTS")[-1]
        problems = _parts_problems(source, meta["points"])
        if "check.parts()" not in hidden:
            problems.append("points= without tc.check.parts() in the hidden tests")
        found += [f"{assignment}/{meta['grade_id']}: {p}" for p in problems]
    assert not found, "\n".join(found)


@pytest.mark.parametrize("source, problem", [
    ("with tc.check.parts() as p:\n    for e in es:\n        with p.part():\n"
     "            assert tc.check.same_value(a[e], b[e], points=2 / len(es))\n", "must be 3 / len"),
    ("with tc.check.parts() as p:\n    for e in es:\n        with p.part():\n"
     "            assert tc.check.same_value(a[e], b[e], points=3 / len(fs))\n", "must be 3 / len"),
    ("with tc.check.parts() as p:\n    for e in es:\n        with p.part():\n"
     "            assert tc.check.same_value(a[e], b[e], points=1)\n", "must be 3 / len"),
    ("with tc.check.parts() as p:\n    for e in es:\n        with p.part():\n"
     "            assert tc.check.same_value(a[e], b[e], points=3 / len(es))\n"
     "            assert tc.check.same_value(a[e], b[e], points=3 / len(es))\n", "one check with points="),
    ("assert tc.check.same_value(a, b, points=3)\n", "outside a part"),
])
def test_the_parts_reader_sees_points_that_do_not_sum(source, problem):
    right = ("with tc.check.parts() as p:\n    for e, v in es.items():\n        x = v\n"
             "        with p.part():\n"
             "            assert tc.check.same_value(a[e], x, name=e, points=3 / len(es))\n")
    assert _parts_problems(right, 3) == []
    assert any(problem in p for p in _parts_problems(source, 3)), _parts_problems(source, 3)
