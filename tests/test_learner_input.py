"""Learner input is never a grader failure: the grader's own code on pathological input.

Every host-side function that reads what a submission supplies (answer source, notebook JSON,
the kernel's printed records) is fed inputs that break Python's parser or a recursive walk
(a 60,000-term sum raised RecursionError in the grader and left the notebook "not graded",
a 0 dodged at will: issue #29). None may raise; an answer the grader cannot read is refused
with a reason, its exercise scores 0 and the notebook stays graded (the last test runs one
for real, with a kernel and no sandbox: the refused answer never runs).
"""

from __future__ import annotations

import json

import nbformat
import pytest

from autograder.judge import learner_source
from autograder.judge.answers import NotANotebook, read_answers
from autograder.judge.integrity import bound_names, failure_report, trusted_aliases
from autograder.judge.rewrite import NOT_RUN, rewrite
from autograder.judge.screen import screen
from autograder.judge.values import decide, records
from autograder.pipeline.unit import REJECTED_STUB, prepare_answer

# name -> source; each is refused (Rejected) by the bounded parser.
REFUSED = {
    "60,000-term sum": "x = " + " + ".join(["1"] * 60_000),
    "10,000-deep not": "x = " + "not " * 10_000 + "1",
    "deep unary minus": "x = " + "-" * 100_000 + "1",
    "deep lambdas": "f = " + "lambda: " * 5_000 + "1",
    "deep conditional": "x = " + "1 if y else " * 20_000 + "1",
    "long attribute chain": "x" + ".a" * 60_000,
    "long call chain": "f" + "()" * 60_000,
    "lists 150 deep": "x = " + "[" * 150 + "]" * 150,
    "calls 150 deep": "x = " + "f(" * 150 + "1" + ")" * 150,
    "60,000 comparisons": "x = " + " < ".join(["1"] * 60_000),
    "40,000 and": "x = " + " and ".join(["y"] * 40_000),
    "thousands of names": "\n".join(f"v{i} = w{i}" for i in range(20_000)),
    "over the size cap": "x = 1\n" * 50_000,
    "NUL byte": "x = 1\x00\n",
    "lone surrogate in a string": 'x = "\ud800"\n',
    "lone surrogate as a name": "\udc80 = 1\n",
    "indented cell": "  import os\n  os.system('id')\n",
    "call escape": '/exec "import os"\n',
    "leading blank lines, then an indented cell": "\n\n  import gc\n",
    "quote escape": ",exec import os\n",
    "prompt": ">>> import gc\n",
    "help": "torch.os??\n",
    # IPython re-tokenizes the cell after each of up to 500 rewrites: 84 s here before the bound.
    "501 magics before a long list": "%time 1\n" * 501 + "x = [" + ",".join(["1"] * 20_000) + "]\n",
    # ... and separated by the other line breaks IPython splits on (str.splitlines)
    **{f"501 magics split by {sep!r}": sep.join(["%time 1"] * 501) + sep + "x = ["
       + ",".join(["1"] * 20_000) + "]\n" for sep in ("\r", "\x0b", "\x0c", "\x1c", "\x85", "\u2028")},
    # Valid Python that IPython changes: `...: ` is stripped as a prompt (a dict becomes a set).
    "continuation prompt": "d = {\n    ...: 1}\n",
}
# Syntax errors in the kernel too: run as written, they run nothing there.
NOT_PYTHON = {
    "5,000 brackets": "x = " + "(" * 5_000 + ")" * 5_000,
    "huge integer literal": "x = " + "9" * 100_000,
    "deep indentation": "".join(" " * i + "if 1:\n" for i in range(120)) + " " * 120 + "pass\n",
}
# Fine as answers: read, screened, rewritten.
READ = {
    "huge string literal": 'x = "' + "a" * 200_000 + '"\n',
    "odd Unicode names": "λ = 1\nπ = λ * 2\nℌ = π\n",
    "bidi controls in a string": 'x = "\u202e\u2066"  # \u2069\n',
    "top-level await": "async def g():\n    return 1\n\n\nawait g()\n",
    "many short lines": "x = 1\n" * 10_000,
}


def test_reading_ipython_syntax_is_bounded_in_time():
    """The worst a cell under the bound can cost: its candidate lines times its size."""
    import time

    lines = learner_source.MAX_IPYTHON_LINES
    size = learner_source.MAX_IPYTHON_WORK // lines
    worst = "%time 1\n" * lines + "x = [" + ",".join(["1"] * (size // 2)) + "]\n"
    start = time.monotonic()
    learner_source.parse(worst)
    assert time.monotonic() - start < 10
    start = time.monotonic()
    assert isinstance(learner_source.parse(REFUSED["501 magics before a long list"]),
                      learner_source.Rejected)
    assert time.monotonic() - start < 1


@pytest.mark.parametrize("name", list(REFUSED))
def test_unreadable_answers_are_refused_with_a_reason(name):
    source = REFUSED[name]
    found = learner_source.parse(source)
    problems = screen(source)
    assert problems and all(isinstance(p, str) and p for p in problems), name
    if isinstance(found, learner_source.Rejected):
        assert found.reason
        assert rewrite(source) == NOT_RUN  # never returned unguarded
    else:  # IPython syntax: the kernel would run IPython's translation; the screen refuses it
        assert isinstance(found, learner_source.Parsed) and found.ipython, name
        assert "plain Python" in problems[0]
    code, why = prepare_answer(source)
    assert code == REJECTED_STUB and why, name
    assert isinstance(bound_names(source), set)


@pytest.mark.parametrize("name", list(NOT_PYTHON))
def test_syntax_errors_run_as_written(name):
    source = NOT_PYTHON[name]
    found = learner_source.parse(source)
    assert isinstance(found, learner_source.NotPython) and found.reason, found
    assert screen(source) == [] and rewrite(source) == source
    assert prepare_answer(source) == (source, "")


@pytest.mark.parametrize("name", list(READ))
def test_large_but_ordinary_answers_are_read(name):
    source = READ[name]
    found = learner_source.parse(source)
    assert isinstance(found, learner_source.Parsed) and not found.ipython, found
    code, why = prepare_answer(source)
    assert code != REJECTED_STUB and not why, why


def test_any_exception_while_parsing_is_a_rejection(monkeypatch):
    def boom(*_args, **_kwargs):
        raise OverflowError("parser bug")
    monkeypatch.setattr(learner_source, "compile", boom, raising=False)
    found = learner_source.parse("x = 1\n")
    assert isinstance(found, learner_source.Rejected) and "OverflowError" in found.reason
    assert learner_source.parse(b"x = 1") == learner_source.Rejected("not text (bytes)")


def test_a_screen_or_rewrite_failure_refuses_the_answer(monkeypatch):
    from autograder.pipeline import unit

    monkeypatch.setattr(unit, "screen", lambda source, *protected: 1 / 0)
    code, why = prepare_answer("x = 1\n")
    assert code == REJECTED_STUB and "ZeroDivisionError" in why
    monkeypatch.setattr(unit, "screen", lambda source, *protected: [])
    monkeypatch.setattr(unit, "rewrite", lambda source: NOT_RUN)
    code, why = prepare_answer("x = 1\n")
    assert code == REJECTED_STUB and "could not rewrite" in why


def _release():
    nb = nbformat.v4.new_notebook()
    answer = nbformat.v4.new_code_cell("def f():\n    raise NotImplementedError()\n")
    answer.metadata["nbgrader"] = {"solution": True, "grade": False, "grade_id": "ex-answer",
                                   "locked": False, "schema_version": 3, "task": False}
    test = nbformat.v4.new_code_cell("assert f() == 1\n")
    test.metadata["nbgrader"] = {"solution": False, "grade": True, "grade_id": "ex-test",
                                 "points": 1, "locked": True, "schema_version": 3, "task": False}
    nb.cells = [nbformat.v4.new_code_cell("import math\n"), answer, test]
    return nb


@pytest.mark.parametrize("data", [
    b'{"cells": ' + b"[" * 100_000 + b"]" * 100_000 + b', "nbformat": 4}',
    json.dumps({"nbformat": 4, "cells": [{"metadata": {"nbgrader": {"grade_id": "ex-answer"}},
                                          "cell_type": "code", "source": "x\x00"}]}).encode(),
    b'{"nbformat": 4, "cells": [{"metadata": {}, "source": "\\ud800", "cell_type": "code"}]}',
    b'{"nbformat": 4, "cells": [{"metadata": {"nbgrader": {"grade_id": "' + b"a" * 100_000 + b'"}}}]}',
    b'{"nbformat": 4, "cells": [{"metadata": {"nbgrader": {"grade_id": 1e999}}}]}',
    b'{"nbformat": 4, "cells": [{"metadata": {"nbgrader": {"grade_id": ["x"]}}}]}',
    b"\xff\xfe\x00",
    b'{"nbformat": 4, "cells": [' + b'{"metadata": {}, "source": "x"},' * 20_000 + b"{}]}",
])
def test_any_notebook_bytes_are_read_or_refused(data):
    try:
        read_answers(data, _release())
    except NotANotebook as err:
        assert str(err)


def test_printed_records_of_any_shape_are_judged_never_raised():
    cell = nbformat.v4.new_code_cell("")
    deep = "[" * 100_000 + "]" * 100_000
    lines = [f"TIO-VALUE tok {deep}", "TIO-VALUE tok [1, 2]", "TIO-VALUE tok " + "9" * 10_000,
             "TIO-FAIL tok " + '{"a":' * 5_000 + "1" + "}" * 5_000, "TIO-FAIL tok {\"kind\": 1}"]
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text="\n".join(lines)),
                    {"output_type": "stream", "name": "stdout", "text": [1, None, {"x": 2}]},
                    {"output_type": "stream", "name": "stdout", "text": 7}]
    found = records(cell, "tok")
    assert found and all(r == {"kind": "unreadable"} for r in found[:3]), found
    assert failure_report(cell, "tok") == {}
    nested: object = 1
    for _ in range(5_000):
        nested = {"t": "builtins.list", "items": [nested]}
    ref = [{"kind": "same_value", "options": {}, "expected": {"t": "builtins.int", "v": 1}}]
    assert decide(ref, [{"kind": "same_value", "options": {}, "actual": nested}])
    assert decide(ref, [{"kind": "same_value", "options": {}, "actual": 5}])
    assert decide([{"kind": "same_value", "options": {}, "expected": nested}],
                  [{"kind": "same_value", "options": {}, "actual": nested}]).startswith(
        "the recorded values could not be judged")


def test_release_names_skip_what_cannot_be_read():
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(REFUSED["60,000-term sum"]),
                nbformat.v4.new_code_cell("import numpy as np\n")]
    assert trusted_aliases(nb) == {"np": "numpy"}


@pytest.mark.slow
def test_an_unreadable_answer_scores_0_and_is_reported_never_not_graded(tmp_path):
    """Graded for real (a kernel, no sandbox: the refused answer never runs): the notebook is
    graded, the exercise scores 0, Tampering says why. Before issue #29 this was not graded."""
    from autograder.pipeline.unit import Job, grade_notebook
    from autograder.sandbox.launch import Limits

    release = _release()
    solution = _release()
    solution.cells[1].source = "def f():\n    return 1\n"
    submission = _release()
    submission.cells[1].source = "def f():\n    return 1\n\n\nx = " + " + ".join(["1"] * 60_000)
    job = Job("eve", "00-tiny", "00-tiny", nbformat.writes(submission).encode(), "", "",
              Limits(), sandboxed=False, release_text=nbformat.writes(release),
              solution_text=nbformat.writes(solution))
    out = grade_notebook(job)
    assert out.status == "graded", out.failure
    assert [t.passed for t in out.tests] == [False], out.tests
    assert any("ex-answer not run" in t and "too deeply nested" in t for t in out.tampering), out
    # The same notebook answered plainly passes: the 0 above is the refusal, nothing else.
    submission.cells[1].source = "def f():\n    return 1\n"
    job.data = nbformat.writes(submission).encode()
    assert [t.passed for t in grade_notebook(job).tests] == [True]
