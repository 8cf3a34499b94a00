"""Shared helpers for the course tests: where notebooks are, and how to make submissions."""

from __future__ import annotations

import ast
import copy
import json
import re
from pathlib import Path

import nbformat

REPO = Path(__file__).resolve().parent.parent
SOLUTIONS = REPO / "solutions"
NOTEBOOKS = REPO / "notebooks"


def assignments() -> list[str]:
    from autograder.course import assignments as _assignments

    return _assignments()


def solution_path(assignment: str) -> Path:
    return SOLUTIONS / assignment / f"{assignment}.ipynb"


def release_path(assignment: str) -> Path:
    return NOTEBOOKS / assignment / f"{assignment}.ipynb"


def read(path: Path) -> nbformat.NotebookNode:
    return nbformat.read(path, as_version=4)


def nbgrader_meta(cell) -> dict:
    return cell.get("metadata", {}).get("nbgrader", {})


def is_solution(cell) -> bool:
    return bool(nbgrader_meta(cell).get("solution"))


def is_test(cell) -> bool:
    meta = nbgrader_meta(cell)
    return bool(meta.get("grade")) and not meta.get("solution") and cell.cell_type == "code"


def exercises(nb) -> list[tuple[int, int]]:
    """(solution cell index, test cell index) pairs: each solution is graded by the next test cell."""
    pairs = []
    for i, cell in enumerate(nb.cells):
        if is_solution(cell) and cell.cell_type == "code":
            j = next((k for k in range(i + 1, len(nb.cells)) if is_test(nb.cells[k])), None)
            if j is not None:
                pairs.append((i, j))
    return pairs


def predict_exercises(nb) -> list[int]:
    """Indices of the graded test cells of the notebook's predict exercises (those whose
    heading says ``### Exercise N (predict, ...)``)."""
    found, in_predict = [], False
    for i, cell in enumerate(nb.cells):
        heading = re.search(r"^### Exercise.*$", cell.source, re.M) if cell.cell_type == "markdown" else None
        if heading:
            in_predict = "(predict," in heading.group(0)
        meta = cell.metadata.get("nbgrader", {})
        if in_predict and meta.get("grade") and not meta.get("solution"):
            found.append(i)
            in_predict = False
    return found


def solution_answers(assignment: str) -> dict[str, str]:
    """grade_id -> solution source of every answer cell: an honest student's answers."""
    sol = read(solution_path(assignment))
    return {nbgrader_meta(sol.cells[s])["grade_id"]: sol.cells[s].source for s, _ in exercises(sol)}


def with_replacements(nb, replacements: dict[str, str]) -> nbformat.NotebookNode:
    """A copy of ``nb`` whose cells with the given grade_ids have new sources."""
    out = copy.deepcopy(nb)
    for cell in out.cells:
        gid = nbgrader_meta(cell).get("grade_id")
        if gid in replacements:
            cell.source = replacements[gid]
    return out


def outlived(tmp: Path) -> list[str]:
    """What grading left under its temp folder ``tmp``: everything but the (empty) private
    parent of kernel folders, which stays (autograder.sandbox.scratch.kernel_parent). (The Dask test
    looks only at ``tio-`` names: Dask keeps its own scratch space there.)"""
    import os

    from autograder.sandbox.scratch import PARENT

    return sorted(str(p) for p in tmp.rglob("*") if p.name != f"{PARENT}{os.getuid()}")


def process_alive(marker: str) -> bool:
    """Is a process whose command line holds ``marker`` still running (anything a test's
    sandbox started and should have taken with it)?"""
    import os

    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if marker.encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                return True
        except OSError:
            continue
    return False


def pip_would_install(report: Path) -> list[str]:
    """The names a ``pip install --dry-run --report`` file lists, less what tio.py removes from
    the test environments after installing them (``TEST_ENVIRONMENT_DROPS``): pip would put
    those back, and only this suite's environments lack them."""
    tree = ast.parse((REPO / "tio.py").read_text())
    drops = next(ast.literal_eval(node.value) for node in tree.body if isinstance(node, ast.Assign)
                 and any(getattr(t, "id", "") == "TEST_ENVIRONMENT_DROPS" for t in node.targets))
    return sorted(name for name in (item["metadata"]["name"]
                                    for item in json.loads(report.read_text())["install"])
                  if name not in drops)
