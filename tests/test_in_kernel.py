"""The kernel's code (autograder/judge/in_kernel.py), imported and run directly in an IPython shell
of this process: what the grader sends as the bootstrap cell is a module like any other.

The full path (sent as text to a sandboxed kernel, decided outside) is what
test_grading_attacks.py and test_pipeline.py exercise; these tests pin the contract of the two
functions it returns.
"""

from __future__ import annotations

import ast
import contextlib
import io
import json

import pytest
from IPython.core.interactiveshell import InteractiveShell

from autograder.judge import in_kernel, integrity
from autograder.judge.rewrite import policy
from coursefiles import REPO


@pytest.fixture(scope="module")
def kernel():
    shell = InteractiveShell.instance()
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        guard, run_test = in_kernel._tio_make_guard(policy(), {})
    yield shell, guard, run_test, out
    InteractiveShell.clear_instance()


def _lines(out: io.StringIO) -> list[str]:
    text, _ = out.getvalue(), out.truncate(0)
    out.seek(0)
    return [line for line in text.splitlines() if line.startswith("TIO-")]


def _run(kernel, *args):
    shell, guard, run_test, out = kernel
    with contextlib.redirect_stdout(out):
        try:
            run_test(*args)
        except AssertionError:
            pass
    return _lines(out)


def test_a_passing_test_prints_its_pass_token(kernel):
    assert _run(kernel, "t1", "assert 1 + 1 == 2", {}) == ["TIO-PASS t1"]


def test_a_failing_test_reports_whose_error_it_was(kernel):
    (line,) = _run(kernel, "t2", "assert 1 == 2, 'one is not two'", {})
    kind, report = line.split(" ", 2)[0], json.loads(line.split(" ", 2)[2])
    assert kind == "TIO-FAIL" and report["kind"] == "ours" and report["first"] == "one is not two"


def test_a_check_records_its_values_for_the_grader(kernel):
    lines = _run(kernel, "t3", "tc.check.same_value(2, 2, name='two')", {"tc": "tensorcourse"})
    value = json.loads(next(line for line in lines if line.startswith("TIO-VALUE t3")).split(" ", 2)[2])
    assert value["actual"] == {"t": "builtins.int", "v": 2} == value["expected"]
    assert lines[-1] == "TIO-PASS t3"


def test_the_guard_sees_a_patched_builtin(kernel):
    shell, guard, _, out = kernel
    import builtins

    with contextlib.redirect_stdout(out):
        guard("ok1")
        real, builtins.divmod = builtins.divmod, lambda *a: (0, 0)
        try:
            guard("bad")
        finally:
            builtins.divmod = real
    assert _lines(out) == ["TIO-OK ok1", "TIO-TAMPER bad builtins.divmod"]


def test_the_file_defines_one_function_and_imports_nothing_of_the_grader():
    """It is sent as a cell: anything else at its top level would land in the notebook's
    globals, where answers can reach it; and `autograder` is not importable in the sandbox."""
    tree = ast.parse(integrity.IN_KERNEL.read_text(encoding="utf-8"))
    top = [type(node).__name__ for node in tree.body]
    assert top == ["Expr", "FunctionDef"], top      # the docstring, then _tio_make_guard
    imported = {a.name for node in ast.walk(tree) if isinstance(node, ast.Import) for a in node.names}
    imported |= {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert not {m for m in imported if m and m.split(".")[0] == "autograder"}


def test_no_module_of_the_grader_holds_kernel_code_in_a_string():
    """#32: the kernel's code is a file, linted like the rest, never a string spliced with
    str.replace. A string holding a `def` of the guard would mean it crept back."""
    for py in (REPO / "autograder").rglob("*.py"):
        for node in ast.walk(ast.parse(py.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                assert "def _tio_make_guard" not in node.value, py


def test_the_bootstrap_cell_is_the_file_and_a_call_with_data():
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("x = 1")]
    instrumented, plan = integrity.instrument(nb)
    boot = instrumented.cells[0].source
    assert boot.startswith(integrity.IN_KERNEL.read_text(encoding="utf-8"))
    call = boot[len(integrity.IN_KERNEL.read_text(encoding="utf-8")):]
    assert f"{plan.guard_name}, {plan.runner_name} = _tio_make_guard(" in call
    assert "del _tio_make_guard" in call


def test_the_grader_encodes_a_variants_answers_as_the_kernel_does(kernel):
    """autograder.judge.variants decides a variant's expected answers outside the kernel and
    encodes them as this file's recorder would: for every answer a spec gives (and the other
    types it promises to encode), the two encodings are equal."""
    import torch

    from autograder.judge.variants import _encoded
    from tensorcourse.variants import SPECS

    answers = [True, 3, "view", None, torch.float16, ((2, 3), torch.int64), [(1,), ()]]
    for spec in SPECS.values():
        for params in spec.pool(3, "encode"):
            answers += spec.oracle(params)
    shell = kernel[0]
    for i, answer in enumerate(answers):
        shell.user_ns["_answer"] = answer
        lines = _run(kernel, f"e{i}", "tc.check.same_value(_answer, _answer, name='a')",
                     {"tc": "tensorcourse"})
        record = json.loads(next(x for x in lines if x.startswith(f"TIO-VALUE e{i}")).split(" ", 2)[2])
        assert record["expected"] == _encoded(answer) == record["actual"], answer
