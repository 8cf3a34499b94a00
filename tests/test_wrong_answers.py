"""The hidden tests reject plausible wrong answers, not only the untouched stub, and say why.

For each assignment, one kernel runs the solution notebook; after each exercise it
swaps in every wrong variant from ``tests/wrong_answers/`` (and the student stub),
runs the exercise's full test cell (visible + hidden tests), expects it to fail with a
message whose last line names the variant's misconception (``tensorcourse.misconceptions``),
and restores the correct solution before going on. One kernel per notebook keeps this
fast; the real nbgrader pipeline is exercised in test_pipeline.py.
"""

from __future__ import annotations

import nbformat
import pytest
from nbformat.v4 import new_code_cell

from coursefiles import assignments, exercises, nbgrader_meta, read, release_path, solution_path
from nbrun import run_notebook
from tensorcourse.misconceptions import catalog, named_in
from wrong_answers import wrong_answers

ALL = assignments()


def _probe_notebook(assignment: str):
    """The solution notebook with probes inserted; returns it and {probe cell index: (label,
    the misconception the rejection must name, "" for the stub)}."""
    sol = read(solution_path(assignment))
    stubs = {nbgrader_meta(c).get("grade_id"): c.source for c in read(release_path(assignment)).cells}
    table = wrong_answers(assignment)
    pairs = dict(exercises(sol))
    cells, probes = [], {}
    for i, cell in enumerate(sol.cells):
        cell = nbformat.from_dict(dict(cell))
        cell.metadata = {}  # plain cells: this is not an nbgrader run
        cells.append(cell)
        tests_for = [s for s, t in pairs.items() if t == i]
        if not tests_for:
            continue
        s = tests_for[0]
        gid = nbgrader_meta(sol.cells[s])["grade_id"]
        variants = [("", "the untouched stub", stubs[gid])] + list(table.get(gid, []))
        for misconception, why, source in variants:
            cells.append(new_code_cell(source))
            cells.append(new_code_cell(sol.cells[i].source))
            probes[len(cells) - 1] = (f"{gid}: {why}", misconception)
            cells.append(new_code_cell(sol.cells[s].source))   # restore the right answer
    nb = nbformat.v4.new_notebook(cells=cells, metadata=sol.metadata)
    return nb, probes


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


@pytest.mark.slow
@pytest.mark.parametrize("assignment", ALL)
def test_hidden_tests_reject_wrong_variants(assignment, tmp_path):
    nb, probes = _probe_notebook(assignment)
    path = tmp_path / "probe.ipynb"
    nbformat.write(nb, path)
    ran = run_notebook(path, timeout=120, cwd=tmp_path,
                       env={"TENSORCOURSE_DEVICE": "cpu", "MPLBACKEND": "agg"})
    passed_wrongly = [label for index, (label, _) in probes.items()
                      if not any(o.output_type == "error" for o in ran.nb.cells[index].outputs)]
    assert not passed_wrongly, "test cells accepted wrong answers:\n  " + "\n  ".join(passed_wrongly)
    # ... and the check that rejected each names the misconception the wrong answer embodies.
    misnamed = []
    for index, (label, misconception) in probes.items():
        if not misconception:
            continue
        named = [named_in(o.evalue) for o in ran.nb.cells[index].outputs if o.output_type == "error"]
        if named != [misconception]:
            last = [o.evalue.rstrip().splitlines()[-1:] for o in ran.nb.cells[index].outputs
                    if o.output_type == "error"]
            misnamed.append(f"{label}: expected [{misconception}], the message ends {last}")
    assert not misnamed, "rejections that do not name the wrong answer's misconception:\n  " \
        + "\n  ".join(misnamed)
    # The right answers, restored after each probe, still pass their tests.
    sol = read(solution_path(assignment))
    test_sources = {sol.cells[t].source for _, t in exercises(sol)}
    failing_right = [i for i, c in enumerate(ran.nb.cells)
                     if c.source in test_sources and i not in probes
                     and any(o.output_type == "error" for o in c.outputs)]
    assert not failing_right, f"a correct solution failed its tests at cells {failing_right}"
