"""Value checks are decided outside the sandbox, against the solution's own recorded run.

Unit tests of :func:`autograder.judge.values.decide` on recorded checks, then the design claim run
for real: with the static screen and the run-time guard both switched off (as if a way past
them had been found), an answer that forges every in-kernel check (patched checkers, a
replaced integrity guard, so the kernel reports every test passed) still scores 0, because
the values it recorded do not pass against the reference here. And names a release cell
defines reach tests as the release left them, whatever an answer rebinds.
"""

from __future__ import annotations

import nbformat
import pytest

from autograder.judge.values import decide
from autograder.pipeline import grading, unit
from autograder.sandbox.launch import Limits, unavailable
from coursefiles import REPO, read, release_path, solution_answers, solution_path, with_replacements


def _t(values, dtype="torch.float32", shape=None, device="cpu", t="torch.Tensor"):
    return {"t": t, "dtype": dtype, "shape": shape or [len(values)], "device": device, "v": values}


def _rec(kind, actual, expected, options=None):
    return {"kind": kind, "actual": actual, "expected": expected, "options": options or {}}


OPTS = {"rtol": None, "atol": None, "check_dtype": True, "check_device": True}


def test_tensor_checks_use_the_references_expected_value():
    ref = [_rec("same_tensor", _t([1.0, 2.0]), _t([1.0, 2.0]), OPTS)]
    assert decide(ref, [_rec("same_tensor", _t([1.0, 2.0000001]), _t([9.0, 9.0]), OPTS)]) == ""
    # The learner's kernel may claim any expected value: only the reference's counts.
    assert "differ" in decide(ref, [_rec("same_tensor", _t([9.0, 9.0]), _t([9.0, 9.0]), OPTS)])
    assert "dtype" in decide(ref, [_rec("same_tensor", _t([1.0, 2.0], "torch.float64"),
                                        _t([1.0, 2.0]), OPTS)])
    assert "device" in decide(ref, [_rec("same_tensor", _t([1.0, 2.0], device="meta"),
                                         _t([1.0, 2.0]), OPTS)])
    assert "not a tensor" in decide(ref, [_rec("same_tensor", {"t": "numpy.ndarray", "u": "x"},
                                               _t([1.0, 2.0]), OPTS)])
    assert "check(s)" in decide(ref, [])  # a check skipped or forged away
    loose = {**OPTS, "rtol": 0.5}
    assert "not the one" in decide(ref, [_rec("same_tensor", _t([1.0, 2.0]), _t([1.0, 2.0]), loose)])


def test_value_checks_follow_same_values_rules():
    true = {"t": "builtins.bool", "v": True}
    one = {"t": "builtins.int", "v": 1}
    ref = [_rec("same_value", true, true)]
    assert decide(ref, [_rec("same_value", true, true)]) == ""
    assert "type" in decide(ref, [_rec("same_value", one, true)])  # 1 is not True
    dtype = {"t": "torch.dtype", "v": "torch.float32"}
    table = {"t": "builtins.dict", "items": [[{"t": "builtins.str", "v": "a"}, dtype]]}
    assert decide([_rec("same_value", table, table)], [_rec("same_value", table, table)]) == ""
    wrong = {"t": "builtins.dict", "items": [[{"t": "builtins.str", "v": "a"},
                                              {"t": "torch.dtype", "v": "torch.int64"}]]}
    assert decide([_rec("same_value", table, table)], [_rec("same_value", wrong, table)])
    nan = {"t": "builtins.float", "v": "nan"}
    assert decide([_rec("same_value", nan, nan)], [_rec("same_value", nan, nan)])  # nan != nan


def test_raises_and_undecodable_checks():
    exc = {"t": "exception", "mro": ["builtins.ValueError", "builtins.Exception"], "message": "bad size 3"}
    ref = [_rec("raises", exc, {"t": "class", "v": "builtins.ValueError"}, {"match": "size"})]
    assert decide(ref, [_rec("raises", exc, {}, {"match": "size"})]) == ""
    other = {"t": "exception", "mro": ["builtins.TypeError"], "message": "size"}
    assert "expected builtins.ValueError" in decide(ref, [_rec("raises", other, {}, {"match": "size"})])
    returned = {"t": "builtins.int", "v": 3}
    assert "did not raise" in decide(ref, [_rec("raises", returned, {}, {"match": "size"})])
    # A reference value the grader cannot decode is left to the kernel's verdict.
    big = {"t": "torch.Tensor", "dtype": "torch.float32", "shape": [10**6], "device": "cpu", "u": "large"}
    assert decide([_rec("same_tensor", big, big, OPTS)], [_rec("same_tensor", big, {}, OPTS)]) == ""


FORGE = '''
import gc
# With the interpreter reached, even the tests' private copy of the checkers can be found.
chk = next(m for m in gc.get_objects()
           if type(m) is type(gc) and m.__name__ == "tensorcourse._tio_check")
ip = get_ipython()
for name in ("same_tensor", "same_value", "raises"):
    setattr(chk, name, lambda *a, **k: True)
for name in list(ip.user_ns):
    if name.startswith("_tio_guard_"):
        ip.user_ns[name] = lambda token: print("\\nTIO-OK", token, flush=True)


def center_rows(x):
    return x * 0
'''


@pytest.mark.slow
@pytest.mark.skipif(unavailable() is not None, reason=f"no sandbox: {unavailable()}")
def test_a_forged_pass_fails_outside_the_sandbox(monkeypatch):
    A = "01-why-tensors"
    monkeypatch.setattr(unit, "screen", lambda source, *protected: [])       # as if the screen were beaten
    monkeypatch.setattr(unit, "rewrite", lambda source: source)  # and the run-time guard too
    monkeypatch.setattr(unit, "predictions_problem", lambda *a: "")  # and the predictions rule
    refs = grading._references([(A, A)], Limits(), True, [str(REPO)], 1)[(A, A)]
    rel = read(release_path(A))
    answers = dict(solution_answers(A))
    gids = list(answers)
    answers[gids[2]] = FORGE  # exercise 3, center_rows, answered wrongly, every check forged
    nb = with_replacements(rel, answers)

    def grade(reference):
        return unit.grade_notebook(unit.Job("forger", A, A, nbformat.writes(nb).encode(),
                                            str(release_path(A)), str(solution_path(A)),
                                            hidden=[str(REPO)], reference=reference))

    without = grade(None)   # the kernel alone is fooled: the forgery works in-kernel
    assert [t.passed for t in without.tests] == [True] * len(without.tests), without.tests
    out = grade(refs)
    # One test per exercise in 01: the first two ran before the forgery, the rest after it.
    honest, forged = out.tests[:2], out.tests[2:]
    assert all(t.passed for t in honest), honest
    assert forged and all(not t.passed and "outside the sandbox" in t.reason for t in forged), forged
    assert any("outside the sandbox" in t for t in out.tampering), out.tampering
    # A prediction exercise (same_value only) forged the same way is caught too.
    answers = dict(solution_answers(A))
    answers[gids[0]] = FORGE + "\npredicted_dtypes = {e: torch.int64 for e in EXPRESSIONS}\n"
    nb = with_replacements(rel, answers)
    out = grade(refs)
    assert not out.tests[0].passed and "outside the sandbox" in out.tests[0].reason, out.tests[0]


def _cell(source, **nbgrader):
    cell = nbformat.v4.new_code_cell(source)
    if nbgrader:
        cell.metadata["nbgrader"] = {"schema_version": 3, "locked": False, "task": False,
                                     "solution": False, "grade": False, **nbgrader}
    return cell


@pytest.mark.slow
@pytest.mark.skipif(unavailable() is not None, reason=f"no sandbox: {unavailable()}")
def test_tests_see_release_names_as_the_release_left_them():
    """A release cell defines a helper the test uses; the learner's answer rebinds it. The
    test still sees the release's helper."""
    from autograder.judge.integrity import instrument, verdicts

    nb = nbformat.v4.new_notebook()
    nb.cells = [
        _cell("class Counter:\n    limit = 1\n\n\ndef helper():\n    return 1\n"),
        _cell("def answer():\n    return 2\n\n\ndef helper():\n    return 2\n",
              solution=True, grade_id="ex-answer"),
        _cell("assert helper() == 1, 'the learner rebound helper'\nassert Counter.limit == 1\n",
              grade=True, grade_id="ex-test", points=1),
    ]
    executed, plan = instrument(nb, {"answer"})
    executed, cut = unit._execute(executed, unit.Job("x", "none", "none", b"", "", "", Limits(),
                                                     True, [str(REPO)]))
    assert not cut
    assert verdicts(executed, plan)["ex-test"].passed
    # Without protection (no release names), the learner's helper is what the test sees.
    unprotected, plan = instrument(nb, {"answer", "helper", "Counter"})
    unprotected, _ = unit._execute(unprotected, unit.Job("x", "none", "none", b"", "", "",
                                                         Limits(), True, [str(REPO)]))
    assert not verdicts(unprotected, plan)["ex-test"].passed
