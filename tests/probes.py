"""The probe notebook: a solution notebook that tries every wrong answer after each exercise.

After each exercise's test cell it swaps in the student stub and every wrong variant from
``tests/wrong_answers/``, each followed by the exercise's full test cell (visible + hidden:
the probe, which must fail) and by the right answer again (restored before going on).

One run of it in one kernel proves two things, so tests/test_notebooks.py runs it once per
notebook and checks both: the solution's own cells run clean (every asserted claim about
PyTorch re-proved), and the hidden tests reject each wrong answer, naming its misconception.
tests/drift_probe.py runs the same notebook on the torch builds learners have.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import nbformat
from nbformat.v4 import new_code_cell

from coursefiles import exercises, nbgrader_meta, read, release_path, solution_path
from wrong_answers import wrong_answers


@dataclass
class Probe:
    nb: nbformat.NotebookNode
    # probe cell index -> (label, the misconception its rejection must name; "" for the stub)
    probes: dict[int, tuple[str, str]]
    # index in this notebook -> index in the solution notebook, for each of the solution's cells
    origin: dict[int, int]
    # the right answers put back after each exercise's probes (they must run clean too)
    restores: set[int]


def probe_notebook(assignment: str) -> Probe:
    sol = read(solution_path(assignment))
    stubs = {nbgrader_meta(c).get("grade_id"): c.source for c in read(release_path(assignment)).cells}
    table = wrong_answers(assignment)
    pairs = dict(exercises(sol))
    cells: list = []
    probes: dict[int, tuple[str, str]] = {}
    origin: dict[int, int] = {}
    restores: set[int] = set()
    for i, cell in enumerate(sol.cells):
        cell = nbformat.from_dict(dict(cell))
        cell.metadata = {}  # plain cells: this is not an nbgrader run
        origin[len(cells)] = i
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
            restores.add(len(cells))
            cells.append(new_code_cell(sol.cells[s].source))   # restore the right answer
    nb = nbformat.v4.new_notebook(cells=cells, metadata=sol.metadata)
    return Probe(nb, probes, origin, restores)


def seconds_in(cell) -> float:
    """The cell's execution time, from the timestamps nbclient records (0 if it never ran)."""
    timing = cell.get("metadata", {}).get("execution", {})
    try:
        start, end = timing["iopub.status.busy"], timing["iopub.status.idle"]
    except KeyError:
        return 0.0
    return (datetime.fromisoformat(end.replace("Z", "+00:00"))
            - datetime.fromisoformat(start.replace("Z", "+00:00"))).total_seconds()


def solution_executed(assignment: str, probe: Probe, ran: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The solution notebook (its own metadata) with the outputs its cells had in the probe run,
    numbered as a run of the solution alone numbers them."""
    sol = read(solution_path(assignment))
    count = 0
    for index, i in probe.origin.items():
        if sol.cells[i].cell_type != "code":
            continue
        count += 1
        outputs = [nbformat.from_dict(dict(o)) for o in ran.cells[index].get("outputs", [])]
        for out in outputs:
            if "execution_count" in out:
                out.execution_count = count
        sol.cells[i].outputs, sol.cells[i].execution_count = outputs, count
    return sol
