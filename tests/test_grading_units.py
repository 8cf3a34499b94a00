"""The grader's parts, without running a kernel: screen, answers, integrity verdicts,
submission limits, command line, feedback, and the checkers' exact-class rule."""

from __future__ import annotations

import copy
import stat
import zipfile
from pathlib import Path

import nbformat
import pytest
import torch

import tensorcourse as tc
from autograder.cli import parse
from autograder.course import publication
from autograder.judge.answers import NotANotebook, read_answers, rebuild
from autograder.judge.integrity import ROLE, Plan, instrument, verdicts
from autograder.judge.screen import screen
from autograder.outputs.feedback import render
from autograder.pipeline.submissions import MAX_NOTEBOOK_BYTES, collect
from autograder.pipeline.unit import TestResult as Result
from autograder.pipeline.unit import learner_message, named_misconception
from coursefiles import assignments, exercises, nbgrader_meta, read, release_path, solution_path

FIRST = "01-why-tensors"


@pytest.mark.parametrize("assignment", assignments())
def test_screen_accepts_every_solution_answer(assignment):
    sol = read(solution_path(assignment))
    for s, _ in exercises(sol):
        assert screen(sol.cells[s].source) == [], nbgrader_meta(sol.cells[s])["grade_id"]


@pytest.mark.parametrize("source", [
    "get_ipython().set_custom_exc((Exception,), None)",
    "%timeit 1",
    "!ls",
    "import sys\nsys.settrace(None)",
    "import os",
    "import ctypes",
    "import gc\ngc.get_objects()",
    "from torch.overrides import TorchFunctionMode",
    "import torch.utils._python_dispatch",
    "torch.equal = lambda *a: True",
    "tc.check.same_tensor = None",
    "F = torch.nn.functional\nF.relu = None",
    "checks = tc.check\nchecks.same_value = None",
    "del torch.allclose",
    "x = ().__class__.__base__.__subclasses__()",
    "f = center_rows.__globals__",
    "getattr(torch, 'eq' + 'ual')",
    "setattr(torch, 'equal', None)",
    "exec('1')",
    "eval('1')",
    "open('/proc/self/mem', 'r+b')",
    "f = open",
    "print(In[1])",
    "print(_i3)",
    "globals()['x'] = 1",
    "torch.load('x.pt', weights_only=False)",
    "import numpy as np\nnp.load('x.npy', allow_pickle=True)",
    "from torch import load",
    "def f():\n    return f.__code__",
    "from os import *",
])
def test_screen_rejects_escape_hatches(source):
    assert screen(source), source


def test_a_magic_is_reported_once_as_a_magic():
    for source in ("%timeit 1", "x = 1\n!ls"):
        assert screen(source) == ["uses an IPython magic or shell escape (% or !): answers are "
                                  "graded as plain Python"], source
    # get_ipython written by the learner is still reported, next to the magic.
    both = screen("%timeit 1\nget_ipython()")
    assert both[0].startswith("uses an IPython magic") and any(
        p.startswith("line 2: uses `get_ipython`") for p in both), both


def test_screen_allows_ordinary_code():
    src = ("import math\nimport torch.nn.functional as F\nfrom collections import Counter\n"
           "class M(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
           "        self.w = torch.nn.Parameter(torch.ones(2))\n"
           "def f(x):\n    y = x._base\n    return F.relu(x).sum() + x._version + math.pi\n")
    assert screen(src) == []
    assert screen("def broken(:\n") == []  # fails by itself when run


def _release():
    return read(release_path(FIRST))


def _answers_of(nb):
    return [nbgrader_meta(c)["grade_id"] for c in nb.cells if nbgrader_meta(c).get("solution")]


def test_untouched_release_reads_with_no_notes():
    rel = _release()
    found = read_answers(nbformat.writes(rel).encode(), rel)
    assert found.notes == [] and set(found.sources) == set(_answers_of(rel))


def test_only_answer_sources_are_taken_and_the_rest_reported():
    rel = _release()
    student = copy.deepcopy(rel)
    gids = _answers_of(rel)
    tests = [c for c in student.cells if nbgrader_meta(c).get("grade")]
    tests[0].source = "pass"                                  # edited locked cell
    student.cells.remove(tests[1])                            # deleted test cell
    student.cells.append(nbformat.v4.new_code_cell("x = 1"))  # extra cell
    dup = copy.deepcopy(next(c for c in student.cells if nbgrader_meta(c).get("grade_id") == gids[1]))
    dup.source, dup.id = "second copy", "dup-cell"
    student.cells.append(dup)                                 # duplicated answer
    student.cells = [c for c in student.cells if nbgrader_meta(c).get("grade_id") != gids[2]]
    student.metadata["kernelspec"] = {"name": "evil"}
    found = read_answers(nbformat.writes(student).encode(), rel)
    text = " | ".join(found.notes)
    assert "edited" in text and "deleted" in text and "ignored" in text, text
    assert "more than once" in text and gids[2] in text, text
    assert found.sources[gids[1]] != "second copy"
    built = rebuild(rel, read(solution_path(FIRST)), found.sources)
    assert "BEGIN HIDDEN TESTS" in nbformat.writes(built)
    assert built.metadata["kernelspec"]["name"] == "python3"
    assert len(built.cells) == len(rel.cells)


@pytest.mark.parametrize("data", [b"{ not json", b"[]", b'{"cells": 3}', b"\xff\xfe",
                                  b'{"nbformat": 3, "cells": []}',
                                  b'{"nbformat": 4, "cells": [1]}',
                                  b'{"nbformat": 4, "cells": [{"metadata": [1], "source": ""}]}',
                                  b'{"nbformat": 4, "cells": [{"metadata": {}, "source": [1]}]}',
                                  b'{"nbformat": 4, "cells": [{"metadata": {"nbgrader": '
                                  b'{"grade_id": 3}}, "source": ""}]}'])
def test_unreadable_notebooks_raise_a_clear_error(data):
    with pytest.raises(NotANotebook):
        read_answers(data, _release())


def _executed(plan_outputs):
    """An instrumented notebook whose test and integrity cells have the given outputs."""
    nb, plan = instrument(rebuild(_release(), read(solution_path(FIRST)), {}))
    by_gid = {}
    nb.cells[0].execution_count = 1  # the bootstrap ran
    for cell in nb.cells:
        role = cell.metadata.get(ROLE)
        if role and role["grade_id"]:
            by_gid.setdefault(role["grade_id"], {})[role["role"]] = cell
    for i, gid in enumerate(plan.order):
        test_out, check_out = plan_outputs(i, plan, gid)
        by_gid[gid]["test"].outputs, by_gid[gid]["test"].execution_count = test_out, 2 * i + 2
        by_gid[gid]["integrity"].outputs, by_gid[gid]["integrity"].execution_count = check_out, 2 * i + 3
    return nb, plan


def _out(text):
    return nbformat.v4.new_output("stream", name="stdout", text=text)


def _err(ename):
    return nbformat.v4.new_output("error", ename=ename, evalue="", traceback=[])


def _honest(i: int, plan: Plan, gid: str):
    return [_out(f"TIO-PASS {plan.pass_tokens[gid]}\n")], [_out(f"TIO-OK {plan.ok_tokens[gid]}\n")]


def test_verdicts_need_both_tokens_and_no_error():
    nb, plan = _executed(_honest)
    assert all(v.passed for v in verdicts(nb, plan).values())

    def split(i, plan, gid):  # one line may arrive in pieces
        pieces = [_out("TIO-"), _out(f"PASS {plan.pass_tokens[gid]}\n")]
        return pieces, [_out(f"TIO-OK {plan.ok_tokens[gid]}")]
    nb, plan = _executed(split)
    assert all(v.passed for v in verdicts(nb, plan).values())

    def failing_first(i, plan, gid):
        test, check = _honest(i, plan, gid)
        return ([_err("AssertionError")] if i == 0 else test), check
    nb, plan = _executed(failing_first)
    v = verdicts(nb, plan)
    assert [x.passed for x in v.values()] == [False] + [True] * (len(v) - 1)
    assert v[plan.order[0]].reason == "failed"


def test_silenced_error_or_tamper_zeroes_that_test_and_every_later_one():
    def silenced(i, plan, gid):
        test, check = _honest(i, plan, gid)
        return ([] if i == 1 else test), check
    nb, plan = _executed(silenced)
    v = verdicts(nb, plan)
    assert [x.passed for x in v.values()] == [True] + [False] * (len(v) - 1)
    assert all(x.reason.startswith("tampering") for x in list(v.values())[1:])

    def tampered(i, plan, gid):
        test, _check = _honest(i, plan, gid)
        report = _out(f"TIO-TAMPER {plan.ok_tokens[gid]} torch.equal\n")
        return test, [report] if i >= 2 else _honest(i, plan, gid)[1]
    nb, plan = _executed(tampered)
    v = verdicts(nb, plan)
    assert [x.passed for x in v.values()] == [True, True] + [False] * (len(v) - 2)
    assert v[plan.order[2]].tampered == "torch.equal"

    def forged(i, plan, gid):  # someone else's tokens
        return [_out("TIO-PASS " + "0" * 32 + "\n")], [_out("TIO-OK " + "0" * 32 + "\n")]
    nb, plan = _executed(forged)
    assert not any(x.passed for x in verdicts(nb, plan).values())


def test_a_failed_bootstrap_is_the_graders_failure_not_tampering():
    nb, plan = _executed(_honest)
    nb.cells[0].outputs = [_err("CellTimeoutError")]
    v = verdicts(nb, plan)
    assert all(not x.passed and x.reason.startswith("grader setup failed") and not x.tampered
               for x in v.values())


def test_dead_kernel_is_not_tampering():
    def died(i, plan, gid):
        test, check = _honest(i, plan, gid)
        return (test, check) if i == 0 else ([_err("KernelDied")], [_err("KernelDied")])
    nb, plan = _executed(died)
    v = verdicts(nb, plan)
    assert [x.reason for x in v.values()] == [""] + ["kernel died"] * (len(v) - 1)


def test_learner_message_quotes_only_the_courses_own_errors():
    # The runner in the kernel reports where the error was raised, judged by code identity
    # (the test's own code objects and tensorcourse.check's): only "ours" shows its text.
    ours = {"kind": "ours", "ename": "AssertionError", "first": "center_rows: wrong"}
    assert learner_message(ours, "failed", "") == "AssertionError: center_rows: wrong"
    learner = {"kind": "learner", "ename": "AssertionError", "first": ""}
    assert learner_message(learner, "failed", "") == "your code raised AssertionError"
    library = {"kind": "library", "ename": "RuntimeError", "first": ""}
    assert learner_message(library, "failed", "").startswith("RuntimeError was raised inside a library")
    assert "not run" in learner_message(ours, "failed", "uses `sys`")
    # A text that reached the report anyway is never shown unless the kind is ours.
    sneaky = {"kind": "learner", "ename": "AssertionError", "first": "assert f(secret_input)"}
    assert "secret" not in learner_message(sneaky, "failed", "")
    assert learner_message({}, "failed", "") == "failed"


def test_feedback_shows_results_only():
    tests = [Result("ex1", True, "", "passed"),
             Result("ex2", False, "failed", "AssertionError: <script>x</script>")]
    page = render("alice", FIRST, FIRST, tests, {"ex1": 2.0, "ex2": 3.0})
    assert "2 / 5" in page and "&lt;script&gt;" in page and "<script>" not in page


def test_a_named_misconception_is_kept_only_from_our_code_and_our_catalog(monkeypatch):
    from tensorcourse import misconceptions
    from tensorcourse.misconceptions import Misconception

    known = Misconception("keeps-dim", "a reduction keeps the dimension it reduces",
                          "4.3 Broadcasting stretches dimensions, silently", FIRST)
    monkeypatch.setattr(misconceptions, "catalog", lambda: {known.id: known})
    ours = {"kind": "ours", "ename": "AssertionError", "first": "x", "misconception": known.id}
    assert named_misconception(ours, "failed", "") == known.id
    assert named_misconception({**ours, "misconception": "01/made-up"}, "failed", "") == ""
    assert named_misconception({**ours, "kind": "learner"}, "failed", "") == ""
    assert named_misconception(ours, "tampering: x", "") == ""
    assert named_misconception(ours, "failed", "uses `sys`") == ""
    # The feedback page shows the belief and links the website's section.
    page = render("alice", FIRST, FIRST, [Result("ex3", False, "failed", "AssertionError: x",
                                                 known.id)], {"ex3": 3.0})
    assert "Likely misconception:</b> a reduction keeps the dimension it reduces." in page
    assert (f'href="{publication().site}notebooks/{FIRST}/{FIRST}.html'
            '#broadcasting-stretches-dimensions-silently"') in page


def _tree(folder: Path) -> dict[str, tuple[int, int]]:
    return {str(p): (p.lstat().st_size, p.lstat().st_mtime_ns) for p in sorted(folder.rglob("*"))}


def test_collect_refuses_symlinks_bombs_and_oversized_files(tmp_path):
    subs = tmp_path / "subs"
    rel = nbformat.writes(_release()).encode()
    (subs / "ok" / FIRST).mkdir(parents=True)
    (subs / "ok" / FIRST / f"{FIRST}.ipynb").write_bytes(rel)
    (subs / "link" / FIRST).mkdir(parents=True)
    (subs / "link" / FIRST / f"{FIRST}.ipynb").symlink_to(solution_path(FIRST))
    (subs / "dirlink").symlink_to(subs / "ok")
    (subs / "big" / FIRST).mkdir(parents=True)
    (subs / "big" / FIRST / f"{FIRST}.ipynb").write_bytes(b" " * (MAX_NOTEBOOK_BYTES + 1))
    with zipfile.ZipFile(subs / "bomb.zip", "w", zipfile.ZIP_DEFLATED) as zf:
        for i in range(4):
            zf.writestr(f"{FIRST}/junk{i}.bin", b"\0" * (30 * 2**20))
    with zipfile.ZipFile(subs / "zlink.zip", "w") as zf:
        info = zipfile.ZipInfo(f"{FIRST}/{FIRST}.ipynb")
        info.external_attr = (stat.S_IFLNK | 0o777) << 16
        zf.writestr(info, str(solution_path(FIRST)))
    (subs / "bad id!").mkdir()
    before = _tree(subs)
    found = collect(subs, [FIRST])
    assert _tree(subs) == before
    text = "\n".join(found.problems)
    assert found.found[("ok", FIRST)] == {FIRST: rel}
    assert found.found[("link", FIRST)] == {}            # graded as missing: 0, reported
    assert "symlink" in text and "dirlink" in text and "zip bomb" in text
    assert "big/" in text and "limit" in text and "zlink.zip" in text and "bad id!" in text
    assert found.found[("big", FIRST)] == {FIRST: b""}


def test_options_and_assignments_in_any_order():
    for argv in (["grade", "SUBS", "--workdir", "W", FIRST],
                 ["grade", "--workdir", "W", "SUBS", FIRST, "--jobs", "2"],
                 ["-v", "grade", "SUBS", FIRST, "--workdir", "W"]):
        args = parse(argv)
        assert (args.submissions, args.assignments, args.workdir) == (Path("SUBS"), [FIRST], Path("W"))
    assert parse(["feedback", "--workdir", "W", FIRST]).assignments == [FIRST]


def test_checkers_want_exact_tensor_classes(monkeypatch):
    class Liar(torch.nn.Parameter):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            if func in (torch.allclose, torch.equal):
                return True
            return super().__torch_function__(func, types, args, kwargs or {})

    expected = torch.ones(3)
    with pytest.raises(AssertionError, match="expected a torch.Tensor"):
        tc.check.same_tensor(Liar(torch.zeros(3)), expected)
    assert tc.check.same_tensor(torch.nn.Parameter(torch.ones(3)), expected)
    monkeypatch.setattr(torch, "allclose", lambda *a, **k: True)
    monkeypatch.setattr(torch, "equal", lambda *a, **k: True)
    with pytest.raises(AssertionError):
        tc.check.same_tensor(torch.zeros(3), expected)
    with pytest.raises(AssertionError):
        tc.check.same_tensor(torch.zeros(3, dtype=torch.long), torch.ones(3, dtype=torch.long))



def test_a_student_id_cannot_end_in_a_newline():
    from autograder.pipeline.submissions import STUDENT_ID

    assert STUDENT_ID.match("eve") and not STUDENT_ID.match("eve\n")


def test_an_oversized_answer_is_not_run_and_said_so():
    from autograder.judge.answers import MAX_ANSWER_CHARS

    rel = read(release_path(FIRST))
    nb = copy.deepcopy(rel)
    answer = next(c for c in nb.cells if nbgrader_meta(c).get("solution"))
    answer.source = "x = 1\n" * (MAX_ANSWER_CHARS // 6 + 10)
    found = read_answers(nbformat.writes(nb).encode(), rel)
    gid = nbgrader_meta(answer)["grade_id"]
    assert gid not in found.sources and any("KiB limit" in n and gid in n for n in found.notes)


def test_messages_show_learner_values_without_running_their_code():
    """tc.check.shown / the checkers' type names: a learner's class may claim torch's module and
    any name, define __repr__, or have a metaclass whose __eq__ runs code; none of it shows."""
    from tensorcourse.check import _kind, shown

    class Claims:
        __module__ = "torch"

        def __repr__(self):
            return "CHOSEN TEXT"
    Claims.__name__ = Claims.__qualname__ = "Tensor"

    class Meta(type):
        def __eq__(cls, other):
            raise AssertionError("CHOSEN TEXT from a metaclass")
        __hash__ = type.__hash__

    class Odd(metaclass=Meta):
        pass
    for value in (Claims(), [Claims()], {"k": (Claims(),)}, Odd(), Claims, Odd):
        assert "CHOSEN" not in shown(value) and "class defined in your code" in shown(value)
    assert _kind(Claims()) == "an object of a class defined in your code"
    assert shown((1, "a", None, torch.float32)) == "(1, 'a', None, torch.float32)"
    assert shown(ValueError("bad size")) == "ValueError" and shown(torch.Tensor) == "Tensor"
    assert shown(10 ** 5000) == "a very large int"


@pytest.mark.parametrize("pieces", [
    # A line and its newline in two messages, past 1000 fragments beyond the output limit:
    # the lone newline was dropped and the next line joined this one (red team of the flood
    # change: 11/14 for a right answer that printed 60,000 lines, called tampering).
    ["\nTIO-VALUE tok {\"a\": 2}", "\n", "\nTIO-PASS tok", "\n"],
    # A learner's line without its end, then the grader's line.
    ["flood 59999", "\nTIO-PASS tok\n"],
    ["TIO-not-the-graders", "\nTIO-PASS tok\n"],
])
def test_lines_kept_beyond_the_output_limit_keep_their_line_ends(pieces):
    from autograder.pipeline.unit import _LimitedExecute

    ep = _LimitedExecute()
    ep.output_limit, ep._fragments = 0, 1000
    outs: list = []
    for text in pieces:
        ep.output(outs, {"msg_type": "stream", "content": {"name": "stdout", "text": text}}, None, 0)
    ep._flush_kept()
    lines = "".join(o.text for o in outs if o.get("name") == "stdout").splitlines()
    assert "TIO-PASS tok" in lines, lines
    assert lines.count("TIO-PASS tok") == 1
    if "TIO-VALUE" in pieces[0]:
        assert 'TIO-VALUE tok {"a": 2}' in lines, lines


def test_a_new_gradebook_is_stamped_with_nbgrader_s_own_schema_head(tmp_path):
    """The head revision is read in-process (autograder/pipeline/gradebook.py): the same one
    nbgrader's own `alembic heads` subprocess gives, and what a new gradebook records."""
    import sqlite3
    import subprocess
    import sys

    from nbgrader.api import Gradebook
    from nbgrader.dbutil import _temp_alembic_ini

    from autograder.pipeline import gradebook

    with _temp_alembic_ini("sqlite:///:memory:") as ini:
        heads = subprocess.run([str(Path(sys.executable).parent / "alembic"), "-c", ini, "heads"],
                               capture_output=True, text=True, check=True).stdout
    assert gradebook._alembic_head() == heads.split()[0]
    with Gradebook(gradebook.db_url(tmp_path)) as gb:
        gb.update_or_create_student("alice")
    with sqlite3.connect(tmp_path / "gradebook.db") as db:
        assert db.execute("select version_num from alembic_version").fetchall() == [
            (gradebook._alembic_head(),)]
