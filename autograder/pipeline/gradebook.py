"""The gradebook, read: where it is, what a submission scored, whether it was graded.

The one writer is :mod:`autograder.pipeline.grading` (``grade``); the term
(:mod:`autograder.pipeline.term`), the adjustments and every output (feedback, report, exports)
read what it recorded through these functions, so none of them imports the grading run.
Contract: nothing here writes a score; ``status`` is ``graded``, ``not graded`` (a grader
failure, or grading never finished) or ``not submitted``.
"""

from __future__ import annotations

import functools
import json
import logging
from pathlib import Path

from ..course import base_config, notebook_names

log = logging.getLogger("autograder")

# A notebook the grader could not grade (a grader failure, never a score). Defined here, with
# the reader of statuses, so that `export` need not import the grading unit (and torch with
# it): that was 5 s of start-up for every export.
NOT_GRADED = "not graded"


def db_url(workdir: Path) -> str:
    """The gradebook's URL (everything that opens the gradebook asks here first)."""
    _quick_new_gradebooks()
    return f"sqlite:///{workdir / 'gradebook.db'}"


@functools.lru_cache(maxsize=1)
def _alembic_head() -> str:
    """The schema revision nbgrader stamps a new gradebook with, read in this process.

    nbgrader asks for it by running ``alembic heads`` as a new Python process that imports
    nbgrader again: 3-5 s of CPU for every new grading folder. This reads the same migration
    scripts with alembic's own API (tests/test_grading_units.py holds that both agree).
    """
    from alembic.config import Config
    from alembic.script import ScriptDirectory
    from nbgrader.dbutil import _temp_alembic_ini

    with _temp_alembic_ini("sqlite:///:memory:") as ini:
        head = ScriptDirectory.from_config(Config(ini)).get_current_head()
    if not head:
        raise RuntimeError("nbgrader's migrations name no head revision")
    return head


def _quick_new_gradebooks() -> None:
    import nbgrader.api

    nbgrader.api.get_alembic_version = _alembic_head


def nbgrader_api(workdir: Path):
    from nbgrader.apps import NbGraderAPI

    _quick_new_gradebooks()
    workdir.mkdir(parents=True, exist_ok=True)
    config = base_config(workdir, release=workdir / "release", db=workdir / "gradebook.db")
    # No exchange is used (submissions are collected from a folder): point it at the
    # working folder so nbgrader does not complain that the system-wide one is unwritable.
    config.Exchange.root = str(workdir / "exchange")
    (workdir / "exchange").mkdir(exist_ok=True)
    api = NbGraderAPI(config=config)
    if not log.isEnabledFor(logging.INFO):
        api.log.propagate = False  # its steps are in the result's log; the summary says what matters
        for handler in api.log.handlers:
            handler.setLevel(logging.ERROR)
    return api


def status(workdir: Path, student: str, assignment: str) -> str:
    """``graded``, ``not graded`` (a grader failure, or grading never finished) or ``not submitted``."""
    results = workdir / "results" / student / assignment
    names = notebook_names(assignment)
    found = {p.stem: p for p in results.glob("*.json")} if results.is_dir() else {}
    if not found and not (workdir / "submitted" / student / assignment).is_dir():
        return "not submitted"
    for name in names:
        if name not in found:
            return NOT_GRADED
        try:
            if json.loads(found[name].read_text()).get("status", "graded") != "graded":
                return NOT_GRADED
        except (OSError, ValueError):
            return NOT_GRADED
    return "graded"


def submission_score(workdir: Path, assignment: str, student: str) -> tuple[float, float]:
    from nbgrader.api import Gradebook

    with Gradebook(db_url(workdir)) as gb:
        sub = gb.find_submission(assignment, student)
        return float(sub.score), float(sub.max_score)


def cell_scores(workdir: Path, assignment: str, student: str) -> dict[str, tuple[float, float]]:
    """``{grade_id: (score, max_score)}`` for one submission (all its notebooks)."""
    from nbgrader.api import Gradebook

    with Gradebook(db_url(workdir)) as gb:
        sub = gb.find_submission(assignment, student)
        return {g.name: (float(g.score), float(g.max_score))
                for nb in sub.notebooks for g in nb.grades}


def load_results(workdir: Path, assignment: str, student: str) -> list[dict]:
    """The per-notebook outcome JSON written by :func:`grade` (what feedback is made from)."""
    folder = workdir / "results" / student / assignment
    return [json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))]
