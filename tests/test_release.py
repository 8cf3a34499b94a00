"""Static checks of every notebook: generated, clean, well-formed exercises. Fast."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys

import pytest
from verdict_rules import bound_names, check_calls, module_names, touched_expectations

from autograder.authoring.generate import LAUNCH_CELL_IDS, is_launch_cell
from coursefiles import (
    NOTEBOOKS,
    REPO,
    SOLUTIONS,
    assignments,
    exercises,
    is_solution,
    is_test,
    nbgrader_meta,
    read,
    release_path,
    solution_path,
)

ALL = assignments()
SECRET_MARKERS = ("BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS", "END HIDDEN TESTS")


def test_there_are_assignments():
    assert ALL and ALL[0].startswith("01-")


def test_notebooks_match_solutions():
    """Regenerating notebooks/ from solutions/ changes nothing (CI fails on drift)."""
    result = subprocess.run([sys.executable, "-m", "autograder", "generate", "--check"],
                            cwd=REPO, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_release_folder_has_a_solution():
    released = sorted(p.name for p in NOTEBOOKS.iterdir() if p.is_dir())
    assert released == ALL


def test_no_notebook_stores_outputs():
    offenders = []
    for path in sorted(list(SOLUTIONS.rglob("*.ipynb")) + list(NOTEBOOKS.rglob("*.ipynb"))):
        if ".ipynb_checkpoints" in path.parts:
            continue
        nb = json.loads(path.read_text())
        for cell in nb["cells"]:
            if cell["cell_type"] == "code" and (cell.get("outputs") or cell.get("execution_count")):
                offenders.append(str(path.relative_to(REPO)))
                break
    assert not offenders, f"notebooks with stored outputs: {offenders}"


@pytest.mark.parametrize("assignment", ALL)
def test_release_holds_no_solution_or_hidden_test(assignment):
    text = release_path(assignment).read_text()
    for marker in SECRET_MARKERS:
        assert marker not in text, f"{assignment}: student notebook contains {marker!r}"
    sol = read(solution_path(assignment))
    rel = read(release_path(assignment))
    # The solution bodies themselves must be gone from the student's cell, not only the markers.
    released = {nbgrader_meta(c).get("grade_id"): c.source for c in rel.cells if nbgrader_meta(c)}
    for cell in sol.cells:
        if is_solution(cell) and "### BEGIN SOLUTION" in cell.source:
            student_cell = released[nbgrader_meta(cell)["grade_id"]]
            stub, rest = cell.source.split("### BEGIN SOLUTION", 1)
            body = rest.split("### END SOLUTION")[0]
            given = {line.strip() for line in stub.splitlines()}   # the stub's own lines
            for line in body.strip().splitlines():
                if len(line.strip()) > 25 and line.strip() not in given:
                    assert line.strip() not in student_cell, \
                        f"{assignment}: solution line leaked: {line}"
    # generate adds the launch cells (badges, Colab setup) on top and nothing else: the
    # course's own cells match the solution's one to one.
    launch = [c for c in rel.cells if is_launch_cell(c)]
    assert [c.get("id") for c in rel.cells[:len(launch)]] == list(LAUNCH_CELL_IDS), \
        f"{assignment}: the student notebook must start with the launch cells"
    assert len(rel.cells) - len(launch) == len(sol.cells)


@pytest.mark.parametrize("assignment", ALL)
def test_exercise_structure(assignment):
    """Each exercise: a solution cell, then a test cell with points, visible and hidden asserts."""
    nb = read(solution_path(assignment))
    pairs = exercises(nb)
    minimum_exercises, minimum_points = (4, 10) if assignment.startswith("01-") else (5, 15)
    assert len(pairs) >= minimum_exercises, f"{assignment}: {len(pairs)} exercises"
    points = sum(nbgrader_meta(nb.cells[t])["points"] for _, t in pairs)
    assert points >= minimum_points, f"{assignment}: {points} points"
    ids = [nbgrader_meta(c).get("grade_id") for c in nb.cells if nbgrader_meta(c)]
    assert len(ids) == len(set(ids)), f"{assignment}: duplicate grade_ids"
    for s, t in pairs:
        test_src = nb.cells[t].source
        gid = nbgrader_meta(nb.cells[t])["grade_id"]
        assert "### BEGIN HIDDEN TESTS" in test_src, f"{gid}: no hidden tests"
        visible = test_src.split("### BEGIN HIDDEN TESTS")[0]
        assert "assert" in visible, f"{gid}: no visible assert for the learner"
        assert nbgrader_meta(nb.cells[t]).get("locked"), f"{gid}: test cell must be locked"
        task = nb.cells[s - 1] if s > 0 else None
        while task is not None and task.cell_type != "markdown":
            s -= 1
            task = nb.cells[s - 1] if s > 0 else None
        assert task is not None and "<details>" in task.source, \
            f"{gid}: the task's markdown needs a hint in a <details> block"


@pytest.mark.parametrize("assignment", ALL)
def test_test_cells_use_assert_never_a_bare_expression(assignment):
    """nbgrader reads a test cell's last expression as partial credit: only asserts allowed."""
    nb = read(solution_path(assignment))
    for cell in nb.cells:
        if not is_test(cell):
            continue
        tree = ast.parse(cell.source)
        bare = [n for n in tree.body if isinstance(n, ast.Expr)
                and not (isinstance(n.value, ast.Constant) and isinstance(n.value.value, str))]
        assert not bare, (f"{nbgrader_meta(cell)['grade_id']}: bare expression at line "
                          f"{bare[0].lineno}; wrap checks in `assert`")


@pytest.mark.parametrize("assignment", ALL)
def test_notebook_opens_with_goals_and_ends_with_recap(assignment):
    nb = read(solution_path(assignment))
    first = nb.cells[0].source
    assert first.startswith(f"# {assignment[:2]}"), "title must start with the notebook number"
    for needed in ("you will be able to", "Prerequisites", "Time"):
        assert needed in first, f"{assignment}: opening cell lacks {needed!r}"
    assert any("tc.setup()" in c.source for c in nb.cells[:4]), "setup cell with banner missing"
    last = nb.cells[-1].source
    assert "Recap" in last and "Next" in last


def test_the_learners_package_imports_nothing_of_the_graders():
    """tensorcourse runs on learners' machines (and in the GPU check's bundle) without the
    grader; what both need lives in tensorcourse (e.g. tensorcourse/headless.py)."""
    import ast

    found = []
    for py in sorted((REPO / "tensorcourse").rglob("*.py")):
        for node in ast.walk(ast.parse(py.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level
                     else [])
            found += [f"{py.relative_to(REPO)}: {n}" for n in names
                      if n == "autograder" or n.startswith("autograder.")]
    assert not found, found


def test_ruff_is_clean():
    result = subprocess.run([sys.executable, "-m", "ruff", "check", "."], cwd=REPO,
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("assignment", ALL)
def test_test_messages_never_run_a_learners_repr(assignment):
    """Feedback quotes a test's own message: a value interpolated with `!r`, or a type's
    `__name__`, would run (or show) text of the learner's; tc.check.shown does neither."""
    nb = read(solution_path(assignment))
    for cell in nb.cells:
        if is_test(cell):
            bad = re.findall(r"\{[^{}]*!r\}|\{type\([^{}]*\)\.__name__\}", cell.source)
            assert not bad, f"{nbgrader_meta(cell)['grade_id']}: use tc.check.shown(...) in {bad}"


@pytest.mark.parametrize("assignment", ALL)
def test_test_cells_judge_numbers_of_exact_built_in_types(assignment):
    """`isinstance(t, float)` admits a subclass whose comparisons all answer True (one can
    inherit them from an allowed library class, torch.fx.Proxy, without defining any special
    method): a test that then compares `t` itself must first check `type(t) is float`."""
    nb = read(solution_path(assignment))
    for cell in nb.cells:
        if is_test(cell):
            bad = re.findall(r"isinstance\([^()]*,\s*\(?\s*(?:float|int|complex)\b[^)]*\)", cell.source)
            assert not bad, f"{nbgrader_meta(cell)['grade_id']}: use type(x) is float (or int) in {bad}"


# -- every verdict decided outside the kernel (issue #29; tests/verdict_rules.py) ------------

def _graded_cells():
    for assignment in ALL:
        nb = read(solution_path(assignment))
        modules = module_names([c.source for c in nb.cells if c.cell_type == "code"])
        for s, t in exercises(nb):
            yield assignment, nb.cells[s], nb.cells[t], modules


def test_every_test_cell_records_a_value_check():
    """Rule 1: each test cell calls tc.check.same_value / same_tensor / raises itself, so the
    grader records its checks and decides them again against the reference run. (The grading
    run holds the records; tests/test_grading_values.py shows them decided outside.)"""
    cells = list(_graded_cells())
    missing = [nbgrader_meta(t)["grade_id"] for _, _, t, _ in cells if not check_calls(ast.parse(t.source))]
    assert not missing, f"test cells with no recorded tc.check call: {missing}"
    assert len(cells) >= 72


def test_no_test_cell_compares_against_what_the_learner_touched():
    """Rule 2, for all 72 graded test cells: expected values are computed before the learner's
    code receives the objects they derive from, or the learner gets copies
    (tests/verdict_rules.py says what is read, and what it cannot see)."""
    found, cells = [], 0
    for assignment, answer, test, modules in _graded_cells():
        cells += 1
        gid = nbgrader_meta(test)["grade_id"]
        flags = touched_expectations(test.source, bound_names(answer.source), modules)
        if flags:
            found.append(f"{assignment}/{gid}:\n      " + "\n      ".join(flags))
    assert cells >= 72
    assert not found, "checks comparing against what the learner's code received:\n  " + "\n  ".join(found)


def test_the_touched_expectation_rule_catches_the_known_attack():
    """06 Ex4 as it was: the test handed `data` to the learner, then derived the expected losses
    from it. Computed first, or with the learner given copies, it is clean."""
    before = ("spy = _Spy()\ndata = [(torch.randn(4, 3), torch.randn(4, 1))]\n"
              "result = validation_losses(spy, data)\n"
              "_expected = [F.mse_loss(spy.lin(x), y).item() for x, y in data]\n"
              "assert tc.check.same_value(result, _expected)\n")
    learner = {"validation_losses"}
    assert touched_expectations(before, learner, frozenset({"torch", "F"}))
    # ... and so is one computed after the model itself was handed over
    handed_model = before.replace("(spy, data)", "(spy, [(x.clone(), y.clone()) for x, y in data])")
    assert touched_expectations(handed_model, learner, frozenset({"torch", "F"}))
    first = ("spy = _Spy()\ndata = [(torch.randn(4, 3), torch.randn(4, 1))]\n"
             "_expected = [F.mse_loss(spy.lin(x), y).item() for x, y in data]\n"
             "result = validation_losses(spy, data)\n"
             "assert tc.check.same_value(result, _expected)\n")
    assert not touched_expectations(first, learner, frozenset({"torch", "F"}))
    copies = before.replace("validation_losses(spy, data)", "validation_losses(copy.deepcopy(spy), "
                            "[(x.clone(), y.clone()) for x, y in data])")
    assert not touched_expectations(copies, learner, frozenset({"torch", "F"}))
    # the same call, the expected value an alias of what the learner got, or via a helper
    alias = "x = torch.ones(3)\nv = x[0]\nassert tc.check.same_tensor(f(x), v * 2)\n"
    assert touched_expectations(alias, {"f"}, frozenset({"torch"}))
    helper = ("def _check(a, want):\n    assert tc.check.same_tensor(f(a), want)\n\n"
              "x = torch.ones(3)\n_check(x, x)\n")
    assert touched_expectations(helper, {"f"}, frozenset({"torch"}))
    assert not touched_expectations(helper.replace("_check(x, x)", "_check(x, x.clone())"),
                                    {"f"}, frozenset({"torch"}))


@pytest.mark.parametrize("clean, touched", [
    # a float given to the learner and the reference links nothing; a list would
    ("x = torch.ones(3)\nn = 2.0\nwant = ref(x, n)\ngot = f(x.clone(), n)\n"
     "assert tc.check.same_tensor(got, want)\n",
     "x = torch.ones(3)\nn = [2.0]\ngot = f(x.clone(), n)\nwant = ref(x, n)\n"
     "assert tc.check.same_tensor(got, want)\n"),
    # zip: each loop name takes its own iterable's elements; the original handed is still seen
    ("x = torch.ones(3)\nr = f(x.clone())\nfor got, want in zip(r, (x,)):\n"
     "    assert tc.check.same_tensor(got, want)\n",
     "x = torch.ones(3)\nr = f(x)\nfor got, want in zip(r, (x,)):\n"
     "    assert tc.check.same_tensor(got, want)\n"),
    # computed first: a helper whose result is new tensors shares nothing with what the learner
    # gets next; one that returns its argument does
    ("def _ref(m, x):\n    m = copy.deepcopy(m)\n    return torch.stack([m(x)])\n\n"
     "net = torch.nn.Linear(2, 2)\nx = torch.ones(2)\nwant = _ref(net, x)\nf(net, x)\n"
     "assert tc.check.same_tensor(g(), want)\n",
     "def _ref(m, x):\n    return m\n\n"
     "net = torch.nn.Linear(2, 2)\nx = torch.ones(2)\nwant = _ref(net, x)\nf(net, x)\n"
     "assert tc.check.same_tensor(g(), want.weight)\n"),
    # a name bound again in a loop is a new object, unless the new value reads the old one
    ("for k in range(2):\n    pool = [torch.ones(1)]\n    out_ = pool[-1].sum()\n"
     "    _want = len(oracle(out_))\n    assert tc.check.same_value(f(out_), _want)\n",
     "out_ = torch.ones(2)\nfor k in range(2):\n    out_ = out_[0:]\n"
     "    assert tc.check.same_value(f(out_), oracle(out_))\n"),
])
def test_the_rules_reader_is_precise_where_cells_needed_it_and_still_sees_the_attack(clean, touched):
    """The refinements the 72 cells needed (tests/verdict_rules.py): each clean shape next to
    the same shape where the learner really got what the expectation is made of."""
    modules = frozenset({"torch", "copy"})
    assert not touched_expectations(clean, {"f"}, modules), touched_expectations(clean, {"f"}, modules)
    assert touched_expectations(touched, {"f"}, modules)


def test_what_course_cells_evaluate_is_a_tuple_no_answer_can_change():
    """A course cell that evaluates listed expressions (the "Check yourself" cells) runs after
    learners' answers: the list it reads must be one no answer can append to or edit (red
    team of #31). Each such name is bound by a course cell to a tuple literal, or to the
    expressions of `tc.variants.yours(...)` (a read-only mapping of tuples)."""
    import ast

    from coursefiles import assignments, nbgrader_meta, read, solution_path

    checked = 0
    for a in assignments():
        cells = [c for c in read(solution_path(a)).cells if c.cell_type == "code"]
        bound: dict[str, ast.expr] = {}
        for cell in cells:
            if nbgrader_meta(cell).get("grade") or nbgrader_meta(cell).get("solution"):
                continue
            tree = ast.parse(cell.source)
            for node in tree.body:
                if isinstance(node, ast.Assign) and len(node.targets) == 1 \
                        and isinstance(node.targets[0], ast.Name):
                    bound[node.targets[0].id] = node.value
            if "eval(" not in cell.source:
                continue
            for node in ast.walk(tree):
                if isinstance(node, (ast.For, ast.comprehension)) and isinstance(node.iter, ast.Name) \
                        and node.iter.id.isupper():
                    value = bound.get(node.iter.id)
                    ok = isinstance(value, ast.Tuple) or (
                        isinstance(value, ast.Subscript) and isinstance(value.value, ast.Name)
                        and "tc.variants.yours(" in ast.unparse(bound.get(value.value.id, value)))
                    assert ok, f"{a}: {node.iter.id} is evaluated by a course cell; bind it to a tuple"
                    checked += 1
    assert checked >= 9
