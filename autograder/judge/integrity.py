"""Tamper-evident tests: what the kernel must show for a test to count as passed.

Contract: :func:`instrument` takes the rebuilt notebook and returns the notebook to execute
and a :class:`Plan` of fresh random tokens (``secrets``, one set per run). :func:`verdicts`
reads the executed notebook and returns, per test grade id, whether it passed and why not.

The executed notebook gets, from the grader (never from the learner):

1. a bootstrap cell, first (the code of :mod:`autograder.judge.in_kernel`, sent as text, called with
   this run's values as data): imports the libraries the tests use and defines a guard under a
   random name, holding a snapshot of what tests rely on: the functions of ``builtins``,
   ``torch`` (and ``torch.Tensor``), ``torch.nn.functional``, ``numpy``, ``math``,
   ``tensorcourse.check``...; IPython's input transformers, AST transformers, custom exception
   handlers and the shell's methods; ``sys`` hooks (trace, profile, except, display, import
   machinery); torch's function and dispatch mode stacks, grad mode and default dtype;
2. at the end of every test cell, a line printing ``TIO-PASS <token>``: positive evidence that
   the test's code ran to its end. An error, however silenced, skips it; a test cell a hook
   skipped or rewrote never prints a token it was never shown before it ran;
3. after every test cell, an integrity cell calling the guard with another token: it prints
   ``TIO-OK <token>`` when nothing in the snapshot changed, ``TIO-TAMPER <token> <what>`` if
   something did.

A test counts as passed only when its cell has no error, printed its pass token, and the
integrity cell after it printed its OK token, all in a kernel that stayed alive. A tampered
state scores 0 for that test and every later one (the change can reach them all) and is
reported. Scores are computed here, outside the sandbox, from the executed notebook.

Limits (see autograder/README.md, "Threat model"): the tokens reach the kernel in the source
of the cells that print them, so code that controls IPython's input pipeline *and* hides
itself from the guard could forge them; the static screen (:mod:`autograder.judge.screen`) keeps
answers from reaching IPython, frames or native code in the first place.
"""

from __future__ import annotations

import ast
import json
import re
import secrets
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
from nbformat.notebooknode import NotebookNode

from . import learner_source
from .answers import is_answer, is_test, meta
from .rewrite import policy

ROLE = "tio_role"  # cell metadata key for the cells the grader adds
# The error name of a cell whose kernel died (written by pipeline.execute, read by verdicts).
KERNEL_DIED = "KernelDied"
IN_KERNEL = Path(__file__).with_name("in_kernel.py")  # the bootstrap cell's code (read, never imported)



@dataclass
class Plan:
    """The tokens of one run: ``pass_tokens`` and ``ok_tokens`` by test grade id."""

    guard_name: str
    runner_name: str = ""
    pass_tokens: dict[str, str] = field(default_factory=dict)
    ok_tokens: dict[str, str] = field(default_factory=dict)
    order: list[str] = field(default_factory=list)


def bound_names(source: str) -> set[str]:
    """Names a cell binds at its top level (also inside top-level if/for/with/try blocks)."""
    tree = learner_source.tree_or_none(source)  # bounded: never raises, None if unreadable
    if tree is None:
        return set()
    names: set[str] = set()
    todo = list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names if a.name != "*")
            continue
        for child in ast.walk(node):
            if isinstance(child, ast.Name) and isinstance(child.ctx, ast.Store):
                names.add(child.id)
        for part in ("body", "orelse", "finalbody", "handlers"):
            todo += [n for n in getattr(node, part, []) if isinstance(n, ast.stmt)]
    return names


def free_names(source: str) -> set[str] | None:
    """Names a course cell may read from the notebook's globals: those it loads and never
    binds (a function's parameters count as loads: more kept, never fewer). ``None`` when the
    cell cannot be read (IPython syntax): it may read anything."""
    tree = learner_source.tree_or_none(source)
    if tree is None:
        return None
    loads: set[str] = set()
    stores: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (loads if isinstance(node.ctx, ast.Load) else stores).add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            stores.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            stores.update((a.asname or a.name).split(".")[0] for a in node.names)
    return loads - stores


def later_reads(cells: list[NotebookNode]) -> set[str] | None:
    """What the course's cells after a test may read of what it leaves (answers are the
    learner's and never count): only these names go back to the notebook's globals after the
    test runs, so a later answer cannot read an earlier test's hidden inputs (red team of #29:
    one bit per regrade). ``None``: a cell that cannot be read, so everything is kept."""
    names: set[str] = set()
    for cell in cells:
        if cell.cell_type != "code" or is_answer(cell):
            continue
        found = free_names(cell.source)
        if found is None:
            return None
        names |= found
    return names


def release_names(nb: NotebookNode, answer_names: set[str]) -> dict[str, list[str]]:
    """``{sha256 of a release code cell: names it binds}``, less the answers' own names."""
    import hashlib

    found: dict[str, list[str]] = {}
    for cell in nb.cells:
        if cell.cell_type != "code" or is_answer(cell) or is_test(cell):
            continue
        names = sorted(bound_names(cell.source) - answer_names)
        if names:
            found[hashlib.sha256(cell.source.encode()).hexdigest()] = names
    return found


def trusted_aliases(nb: NotebookNode) -> dict[str, str]:
    """Names the release binds by importing, as ``{name: "module"}`` or ``"module:attr"``.

    Test cells see these names bound to what the release imported, whatever a learner's cell
    rebound them to (``tc = FakeChecks()``): they are resolved afresh when each test runs.
    Answer cells are the learner's and never count.
    """
    found: dict[str, str] = {}
    for cell in nb.cells:
        if cell.cell_type != "code" or is_answer(cell):
            continue
        tree = learner_source.tree_or_none(cell.source)
        if tree is None:
            continue
        for node in tree.body:
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname:
                        found[alias.asname] = alias.name
                    else:
                        top = alias.name.split(".")[0]
                        found[top] = top
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                for alias in node.names:
                    if alias.name != "*":
                        found[alias.asname or alias.name] = f"{node.module}:{alias.name}"
    return found


def _grader_cell(source: str, role: str, gid: str = "") -> NotebookNode:
    cell = nbformat.v4.new_code_cell(source)
    cell.metadata[ROLE] = {"role": role, "grade_id": gid}
    return cell


def instrument(nb: NotebookNode, answer_names: set[str] | None = None,
               variants: dict | None = None) -> tuple[NotebookNode, Plan]:
    """Add the bootstrap, pass lines and integrity cells (see module docstring). ``variants``:
    the submission's own (:func:`autograder.judge.variants.assigned`), passed to the kernel."""
    plan = Plan(guard_name=f"_tio_guard_{secrets.token_hex(12)}",
                runner_name=f"_tio_test_{secrets.token_hex(12)}")
    aliases = trusted_aliases(nb)
    # The kernel's code as it is in its file; this run's values go to it as data (JSON text).
    values = json.dumps([policy(), release_names(nb, answer_names or set()), variants or {}])
    cells = [_grader_cell(f"{IN_KERNEL.read_text(encoding='utf-8')}\n"
                          f"{plan.guard_name}, {plan.runner_name} = _tio_make_guard("
                          f"*__import__('json').loads({values!r}))\ndel _tio_make_guard\n",
                          "bootstrap")]
    for position, cell in enumerate(nb.cells):
        if not is_test(cell):
            cells.append(cell)
            continue
        gid = meta(cell)["grade_id"]
        plan.order.append(gid)
        plan.pass_tokens[gid] = secrets.token_hex(16)
        plan.ok_tokens[gid] = secrets.token_hex(16)
        test = nbformat.from_dict(dict(cell))
        keep = later_reads(nb.cells[position + 1:])
        test.source = (f"{plan.runner_name}({plan.pass_tokens[gid]!r}, {cell.source!r}, "
                       f"{aliases!r}, {None if keep is None else sorted(keep)!r})\n")
        test.metadata[ROLE] = {"role": "test", "grade_id": gid}
        cells.append(test)
        cells.append(_grader_cell(f"{plan.guard_name}('{plan.ok_tokens[gid]}')", "integrity", gid))
    out = nbformat.from_dict(dict(nb))
    out.cells = cells
    return out, plan


@dataclass
class Verdict:
    """One test's result: passed or not, and the reason shown to the instructor."""

    passed: bool
    reason: str = ""          # "", "failed", "timeout", "kernel died", "tampering: ..."
    tampered: str = ""        # what changed, when the integrity check caught something
    failure: dict = field(default_factory=dict)  # the runner's TIO-FAIL report, if any


def _stdout(cell: NotebookNode) -> list[str]:
    # One print can reach the notebook as several stream messages: join them before splitting.
    text = ""
    for out in cell.get("outputs", []):
        if out.get("output_type") == "stream" and out.get("name") == "stdout":
            piece = out.get("text", "")
            # Outputs are the learner's: only text is read (a forged message may carry other types).
            text += "".join(p for p in piece if isinstance(p, str)) if isinstance(piece, list) \
                else piece if isinstance(piece, str) else ""
    return text.splitlines()


def errors(cell: NotebookNode) -> list[NotebookNode]:
    return [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]


_TAMPER = re.compile(r"^TIO-TAMPER (\S+) ?(.*)$")
_FAIL = re.compile(r"^TIO-FAIL (\S+) (\{.*\})$")


def clean_text(text: str) -> str:
    """``text`` as valid UTF-8: JSON from the kernel can carry lone surrogates (``"\\ud800"``),
    which no file or page can hold; they become ``\\ud800`` escapes."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def failure_report(cell: NotebookNode, token: str) -> dict:
    """The test runner's account of why a test failed: where it was raised (``ours``: the test
    or ``tensorcourse.check``, by code identity; ``learner``; ``library``), its type and, for
    ours only, its first line and the misconception its last line names (unchecked here).
    Empty when the runner printed none (it never got that far)."""
    import json

    for line in _stdout(cell):
        m = _FAIL.match(line)
        if m and m.group(1) == token:
            try:  # printed in the learner's process: anything may be there
                data = json.loads(m.group(2))
                report: dict = {k: clean_text(str(data.get(k, "")))[:300]
                                for k in ("kind", "ename", "first", "misconception")}
                where = data.get("where", [])
                report["where"] = [(clean_text(w[0])[:80], w[1]) for w in where[:5]
                                   if type(w) is list and len(w) == 2 and type(w[0]) is str
                                   and type(w[1]) is int] if type(where) is list else []
                return report
            except Exception:  # noqa: BLE001 - unreadable (deep nesting, odd types): no report
                return {}
    return {}


def verdicts(executed: NotebookNode, plan: Plan) -> dict[str, Verdict]:
    """Per test grade id, whether it passed; tampering zeroes that test and every later one."""
    by_role: dict[tuple[str, str], NotebookNode] = {}
    for cell in executed.cells:
        role = cell.get("metadata", {}).get(ROLE)
        if role:
            by_role[(role["role"], role["grade_id"])] = cell
    result: dict[str, Verdict] = {}
    boot = by_role.get(("bootstrap", ""))
    if boot is None or errors(boot) or boot.get("execution_count") is None:
        # Runs before any learner code: its failure is the grader's, never tampering.
        what = errors(boot)[0].get("ename", "error") if boot is not None and errors(boot) else "not run"
        return {gid: Verdict(False, f"grader setup failed ({what})") for gid in plan.order}
    tamper = ""
    for gid in plan.order:
        test, check = by_role.get(("test", gid)), by_role.get(("integrity", gid))
        if test is None or check is None:
            result[gid] = Verdict(False, "not run")
            continue
        errs = errors(test) + errors(check)
        died = any(e.get("ename") == KERNEL_DIED for e in errs)
        if not tamper and not died and (test.get("execution_count") is None
                                        or check.get("execution_count") is None):
            result[gid] = Verdict(False, "not run")  # grading stopped before this cell
            continue
        if not tamper and not died:
            lines = _stdout(check)
            if f"TIO-OK {plan.ok_tokens[gid]}" not in lines:
                found = [m.group(2) for m in map(_TAMPER.match, lines)
                         if m and m.group(1) == plan.ok_tokens[gid]]
                tamper = found[0] if found else "the integrity check did not report"
        if tamper:
            result[gid] = Verdict(False, f"tampering: {tamper}", tamper)
        elif died:
            result[gid] = Verdict(False, "kernel died")
        elif errors(test):
            timeout = any(e.get("ename") == "CellTimeoutError" for e in errors(test))
            result[gid] = Verdict(False, "timeout" if timeout else "failed",
                                  failure=failure_report(test, plan.pass_tokens[gid]))
        elif f"TIO-PASS {plan.pass_tokens[gid]}" not in _stdout(test):
            result[gid] = Verdict(False, "tampering: the test did not run to its end, yet "
                                         "reported no error", "silenced error or skipped test")
            tamper = tamper or "silenced error or skipped test"
        else:
            result[gid] = Verdict(True)
    return result
