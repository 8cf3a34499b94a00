"""Every exercise has plausible wrong answers, each naming a misconception the course knows.

The wrong answers live in ``tests/wrong_answers/``; each notebook's run in
tests/test_notebooks.py (the probe notebook, tests/probes.py) swaps every one in after its
exercise and holds that the hidden tests reject it and that the rejection names its
misconception. The real nbgrader pipeline grades a wrong answer per exercise in
test_pipeline.py.
"""

from __future__ import annotations

import pytest

from coursefiles import assignments, exercises, nbgrader_meta, read, solution_path
from tensorcourse.misconceptions import catalog
from wrong_answers import wrong_answers

ALL = assignments()


@pytest.mark.parametrize("assignment", ALL)
def test_every_exercise_has_at_least_two_wrong_variants(assignment):
    sol = read(solution_path(assignment))
    table = wrong_answers(assignment)
    for s, _ in exercises(sol):
        gid = nbgrader_meta(sol.cells[s])["grade_id"]
        assert len(table.get(gid, [])) >= 2, f"{assignment}/{gid}: write at least two wrong variants"
    unknown = set(table) - {nbgrader_meta(sol.cells[s])["grade_id"] for s, _ in exercises(sol)}
    assert not unknown, f"wrong answers for unknown cells: {unknown}"


@pytest.mark.parametrize("assignment", ALL)
def test_every_wrong_answer_names_a_known_misconception(assignment):
    known = catalog()
    unnamed = [f"{gid}: {w.why}" + (f" ({w.misconception!r} is not in the catalog)"
                                    if w.misconception else "")
               for gid, variants in wrong_answers(assignment).items()
               for w in variants if w.misconception not in known]
    assert not unnamed, ("wrong answers naming no known misconception (add it to "
                         f"tensorcourse/misconceptions/nb{assignment[:2]}.py):\n  "
                         + "\n  ".join(unnamed))
