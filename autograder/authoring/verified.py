"""Which torch builds each notebook was verified on: one line, generated from the drift report.

``python3 tio.py drift`` (tests/drift.py) runs every notebook on the torch builds learners have
and writes ``benchmarks/drift-report.json``: per assignment, the builds on which its solution,
its tests against the reference and the wrong answers, and its student version all passed.
``generate`` puts :func:`verified_markdown` into every student notebook's badges cell and the
website puts it on every page, so the line is never written by hand and ``generate check``
fails when the notebooks no longer say what the committed report says.
"""

from __future__ import annotations

import json
from pathlib import Path

from ..course import REPO, CourseError, Publication, publication

REPORT_JSON = REPO / "benchmarks" / "drift-report.json"
REPORT_MD = "benchmarks/drift-report.md"


def verified_builds(assignment: str, report: Path = REPORT_JSON) -> tuple[list[str], str | None]:
    """(the builds ``assignment`` passed on, the report's date); ([], None) without a report."""
    if not report.exists():
        return [], None
    try:
        data = json.loads(report.read_text(encoding="utf-8"))
        return list(data["verified"].get(assignment, [])), data.get("date")
    except (ValueError, KeyError, TypeError, AttributeError) as err:
        raise CourseError(f"{report} is not a drift report ({err}): rewrite it with "
                          "`python3 tio.py drift --report`.") from err


def report_url(pub: Publication) -> str:
    return f"{pub.repository}/blob/{pub.branch}/{REPORT_MD}"


def verified_markdown(assignment: str, pub: Publication | None = None, report: Path = REPORT_JSON) -> str:
    """The line a notebook shows, e.g. "*Verified on torch 2.11.0 (CUDA 13.0 build, no GPU), ...*",
    linking to the report where ``pub`` (default: pyproject's setting) publishes the course."""
    builds, date = verified_builds(assignment, report)
    url = report_url(pub or publication())
    if not builds:
        return (f"*Not yet verified by the course's drift check ([report]({url})): if a cell of the "
                "course fails, it may be your torch version, not you.*")
    return (f"*Verified on {'; '.join(builds)} by the course's drift check of {date} "
            f"([report]({url})). Another torch? The course asserts what it teaches: if one of its "
            "own cells fails, it may be the version, not you.*")
