"""Feedback that names the real cause of a beginner's mistake (autograder/judge/causes.py, issue #30).

Also: an error raised in the learner's own function is placed there ("in median_time, line 3
of your answer: ..."), quoted from their answer as the grader holds it.

Before: a syntax error in an answer cell, or a misnamed function, read "NameError was raised
inside a library the test called with your result"; an endless loop "the test ran past the time
limit". Now each says what the learner did, worked out from their own text, on a real graded
notebook (01) in the sandbox.
"""

from __future__ import annotations

import nbformat
import pytest

from autograder.judge import causes
from autograder.pipeline import unit
from autograder.sandbox.launch import Limits, unavailable
from coursefiles import REPO, read, release_path, solution_answers, solution_path, with_replacements

A = "01-why-tensors"


def test_a_syntax_error_names_the_line_and_pythons_message():
    said = causes.answer_cause("def f(x):\n    y = (x +\n    return y\n", "def f(x):\n    pass\n")
    assert said.startswith("your answer cell has a syntax error, so nothing in it ran: line 2")
    assert "`y = (x +`" in said and "never closed" in said and "<answer>" not in said


def test_a_name_never_written_is_named_with_the_close_spelling():
    said = causes.answer_cause("def hiden_grad(x):\n    return x\n", "def hidden_grad(x):\n    pass\n")
    assert "does not define `hidden_grad`" in said and "you wrote `hiden_grad`" in said
    assert causes.answer_cause("def other(x):\n    return x\n", "def hidden_grad(x):\n    pass\n") \
        .endswith("name 'hidden_grad' is not defined")        # nothing close: no guess
    # Defined in any way the answer writes it (an assignment, an import alias): no cause.
    assert causes.answer_cause("hidden_grad = lambda x: x\n", "def hidden_grad(x):\n    pass\n") == ""
    assert causes.answer_cause("from math import sqrt as hidden_grad\n", "def hidden_grad(x): pass") == ""


def test_unreadable_input_never_raises():
    for source in ("x" * 300_000, "not " * 20_000 + "1", "\x00", "\ud800", "(" * 5000):
        assert isinstance(causes.answer_cause(source, "def f(x): pass"), str)


def test_the_time_limit_is_named():
    said = causes.timeout_cause(7)
    assert "7 s" in said and "your code was still running" in said


@pytest.mark.slow
@pytest.mark.skipif(unavailable() is not None, reason=f"no sandbox: {unavailable()}")
def test_each_cause_on_a_real_graded_notebook():
    answers = dict(solution_answers(A))
    gids = list(answers)            # ex1 dtypes, ex2 shares_storage, ex3 center_rows, ex4 hidden_grad
    answers[gids[1]] = ("def shares_storage(a, b):\n    while True:\n        pass\n")
    answers[gids[2]] = ("def center_rows(x):\n    return x - x.mean(dim=1, keepdim=True\n")
    answers[gids[3]] = answers[gids[3]].replace("def hidden_grad(", "def hiden_grad(")
    answers[gids[4]] = ("def median_time(fn, repeats=5, warmup=1):\n    times = []\n"
                        "    return sorted(times)[len(times) // 2]\n")      # IndexError, theirs
    nb = with_replacements(read(release_path(A)), answers)
    out = unit.grade_notebook(unit.Job("beginner", A, A, nbformat.writes(nb).encode(),
                                       str(release_path(A)), str(solution_path(A)),
                                       Limits(cell_timeout=8), hidden=[str(REPO)]))
    assert out.status == "graded", out.failure
    by = {t.grade_id: t for t in out.tests}
    first, loop, syntax, name, raised = (by[g] for g in list(by)[:5])
    assert first.passed
    assert not loop.passed and loop.reason == "timeout"
    assert "stopped after 8 s" in loop.message and "still running" in loop.message, loop.message
    assert not syntax.passed and "syntax error" in syntax.message and "line 2" in syntax.message
    assert "`return x - x.mean(dim=1, keepdim=True`" in syntax.message, syntax.message
    assert not name.passed and "does not define `hidden_grad`" in name.message, name.message
    assert "you wrote `hiden_grad`" in name.message
    # an error in their own function: where, quoted from their answer (never the test's code)
    assert not raised.passed and "IndexError" in raised.message, raised.message
    assert "in median_time, line 3 of your answer: `return sorted(times)[len(times) // 2]`" \
        in raised.message, raised.message
    for t in (loop, syntax, name):   # never the old, misleading wording
        assert "inside a library" not in t.message and "ran past" not in t.message
