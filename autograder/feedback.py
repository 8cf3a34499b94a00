"""Feedback a learner may see: per check its name, points, pass/fail and the course's message.

Contract: :func:`render` builds one self-contained HTML page from the grading results only
(:class:`autograder.unit.TestResult`): no test source, hidden or visible, and nothing the
kernel printed ever reaches it, so a submission cannot smuggle hidden tests out through its
own feedback. Every string is HTML-escaped.
"""

from __future__ import annotations

from html import escape

from .unit import TestResult

_STYLE = """
body { font-family: system-ui, sans-serif; max-width: 52rem; margin: 2rem auto; color: #222; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: .4rem .6rem; border-bottom: 1px solid #ddd; vertical-align: top; }
td.pass { color: #1a7f37; font-weight: 600; } td.fail { color: #cf222e; font-weight: 600; }
code { font-size: .95em; }
"""


def render(student: str, assignment: str, notebook: str, tests: list[TestResult],
           points: dict[str, float]) -> str:
    """The feedback page for one notebook of one submission."""
    total = sum(points.get(t.grade_id, 0.0) for t in tests if t.passed)
    possible = sum(points.get(t.grade_id, 0.0) for t in tests)
    rows = []
    for t in tests:
        got = points.get(t.grade_id, 0.0) if t.passed else 0.0
        rows.append(
            f"<tr><td><code>{escape(t.grade_id)}</code></td>"
            f"<td>{got:g} / {points.get(t.grade_id, 0.0):g}</td>"
            f"<td class=\"{'pass' if t.passed else 'fail'}\">{'passed' if t.passed else 'failed'}</td>"
            f"<td>{escape(t.message if not t.passed else '')}</td></tr>")
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<title>{escape(assignment)}: feedback for {escape(student)}</title>"
        f"<style>{_STYLE}</style></head><body>\n"
        f"<h1>{escape(notebook)}</h1>\n<p>Student <b>{escape(student)}</b>: "
        f"<b>{total:g} / {possible:g}</b> points.</p>\n"
        "<table><thead><tr><th>Check</th><th>Points</th><th>Result</th><th>Message</th></tr>"
        "</thead><tbody>\n" + "\n".join(rows) + "\n</tbody></table>\n"
        "<p>Only your answer cells were graded, against the course's tests (some of them hidden). "
        "A failed check shows the message the course wrote for it.</p>\n</body></html>\n")
