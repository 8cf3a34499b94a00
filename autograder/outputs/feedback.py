"""Feedback a learner may see: per check its name, points, pass/fail and the course's message.

Contract: :func:`render` builds one self-contained HTML page from the grading results only
(:class:`autograder.pipeline.unit.TestResult`): no test source, hidden or visible, and nothing the
kernel printed ever reaches it, so a submission cannot smuggle hidden tests out through its
own feedback. Every string is HTML-escaped. :func:`pages` writes one per graded notebook
under ``<workdir>/feedback/``, with the score after adjustments and the late penalty; a
result it cannot render skips that page only (listed in :data:`skipped`).
"""

from __future__ import annotations

from html import escape
from pathlib import Path

from ..course import CourseError
from ..pipeline import adjustments
from ..pipeline.gradebook import db_url, load_results
from ..pipeline.unit import TestResult

# Accessible by construction (tests/test_site.py runs axe-core on a sample, light and dark,
# and at a phone's width): a language, a viewport, landmarks, headings in order, a table with
# a caption and column headers, pass/fail said in words and a mark (never colour alone),
# colours with at least 4.5:1 contrast in both schemes, long messages wrapped, not scrolled.
_STYLE = """
:root { color-scheme: light dark; --fg: #1f2328; --bg: #ffffff; --line: #d0d7de;
        --pass: #1a7f37; --fail: #cf222e; --muted: #57606a; --link: #0969da; }
@media (prefers-color-scheme: dark) {
  :root { --fg: #e6edf3; --bg: #0d1117; --line: #30363d; --pass: #3fb950; --fail: #ff7b72;
          --muted: #9198a1; --link: #4493f8; } }
body { font-family: system-ui, sans-serif; max-width: 52rem; margin: 2rem auto; padding: 0 1rem;
       color: var(--fg); background: var(--bg); line-height: 1.45; }
.checks { overflow-x: auto; }
table { border-collapse: collapse; width: 100%; }
caption { text-align: left; font-weight: 600; padding: .3rem 0; }
th, td { text-align: left; padding: .4rem .6rem; border-bottom: 1px solid var(--line);
         vertical-align: top; }
td.msg { overflow-wrap: anywhere; width: 60%; } td.pts, td.pass, td.fail { white-space: nowrap; }
td.pass { color: var(--pass); font-weight: 600; } td.fail { color: var(--fail); font-weight: 600; }
code { font-size: .95em; } p.why { margin: .4rem 0 0; } a { color: var(--link); }
footer, .note { color: var(--muted); }
"""


def _misconception(misconception_id: str) -> str:
    """The likely misconception of a failed check and a link to the section teaching it: from
    the course's catalog (the id was checked against it by the grader), never from the kernel."""
    if not misconception_id:
        return ""
    from tensorcourse.misconceptions import get

    from ..course import publication

    m = get(misconception_id)
    url = publication().section_url(m.notebook, m.section)
    return (f"<p class=\"why\"><b>Likely misconception:</b> {escape(m.belief)}. "
            f"<a href=\"{escape(url)}\">Re-read \u201c{escape(m.section)}\u201d</a></p>")


def render(student: str, assignment: str, notebook: str, tests: list[TestResult],
           points: dict[str, float], *, final: float | None = None,
           notes: list[str] | None = None) -> str:
    """The feedback page for one notebook of one submission. ``final``: the score after the
    instructor's adjustments and any late penalty (the gradebook's); ``notes``: what changed it,
    in words (autograder/pipeline/adjustments.py, autograder/pipeline/term.py)."""
    def got(t: TestResult) -> float:
        full = points.get(t.grade_id, 0.0)
        return full if t.passed else min(full, t.score or 0.0)   # parts: partial credit

    total = sum(got(t) for t in tests)
    possible = sum(points.get(t.grade_id, 0.0) for t in tests)
    said = f"<b>{total:g} / {possible:g}</b> points"
    if final is not None and abs(final - total) > 1e-9:
        said = f"<b>{final:g} / {possible:g}</b> points ({total:g} from the checks, changed as below)"
    extra = ""
    if notes:
        extra = ("<h2>Adjustments and lateness</h2>\n<ul>"
                 + "".join(f"<li>{escape(n)}</li>" for n in notes) + "</ul>\n")
    rows = []
    for t in tests:
        earned = got(t)
        result = "✓ passed" if t.passed else ("◐ partly" if earned else "✗ failed")
        message = escape(t.message if not t.passed else "") + _misconception(t.misconception)
        # The learner's own variant of a predict exercise: the one to look at when they
        # compare notes with a classmate (or with the published solution).
        variant = (f"<br><small>your variant: {t.variant}</small>"
                   if type(t.variant) is int and t.variant else "")
        rows.append(
            f"<tr><th scope=\"row\"><code>{escape(t.grade_id)}</code>{variant}</th>"
            f"<td class=\"pts\">{earned:g} / {points.get(t.grade_id, 0.0):g}</td>"
            f"<td class=\"{'pass' if t.passed else 'fail'}\">{result}</td>"
            f"<td class=\"msg\">{message}</td></tr>")
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
        f"<title>{escape(assignment)}: feedback for {escape(student)}</title>"
        f"<style>{_STYLE}</style></head><body>\n"
        f"<header><h1>{escape(notebook)}</h1>\n<p>Feedback for <b>{escape(student)}</b>: "
        f"{said}.</p></header>\n<main>\n{extra}"
        "<h2>Checks</h2>\n<div class=\"checks\" tabindex=\"0\" role=\"region\" aria-label=\"checks\"><table>"
        f"<caption>{len(tests)} checks, {sum(t.passed for t in tests)} passed</caption>"
        "<thead><tr><th scope=\"col\">Check</th><th scope=\"col\">Points</th>"
        "<th scope=\"col\">Result</th><th scope=\"col\">Message</th></tr>"
        "</thead><tbody>\n" + "\n".join(rows) + "\n</tbody></table></div>\n</main>\n"
        "<footer><p>Only your answer cells were graded, against the course's tests (some of them "
        "hidden). A failed check shows the message the course wrote for it and, where the course "
        "knows it, the misconception it points to.</p></footer>\n"
        "</body></html>\n")


def _changes(workdir: Path, student: str, assignment: str, notebook: str,
             points: dict[str, float]) -> tuple[float | None, list[str]]:
    """A notebook's score after adjustments and the late penalty, and what changed it."""
    from nbgrader.api import Gradebook, MissingEntry

    from ..pipeline import term

    notes = [a.describe(points.get(a.cell)) for a in adjustments.load(workdir)
             if a.key[:3] == (student, assignment, notebook)]
    late = term.describe(term.lateness(workdir, student, assignment))
    notes += [late] if late else []
    with Gradebook(db_url(workdir)) as gb:
        try:
            nb = gb.find_submission_notebook(notebook, assignment, student)
        except MissingEntry:
            return None, notes
        return float(nb.score) - float(nb.late_submission_penalty or 0.0), notes


# The pages `feedback` could not make (an unreadable result), for the command to report.
skipped: list[str] = []


def pages(workdir: Path, assignments: list[str]) -> list[Path]:
    """HTML feedback for every graded submission; returns the files written. A result that
    cannot be rendered skips that page only (listed in :data:`skipped`)."""
    skipped.clear()

    results = workdir / "results"
    if not results.is_dir():
        raise CourseError(f"Nothing graded in {workdir} yet: run `python -m autograder grade` first.")
    written: list[Path] = []
    for student_dir in sorted(p for p in results.iterdir() if p.is_dir()):
        for assignment in assignments:
            for outcome in load_results(workdir, assignment, student_dir.name):
                if outcome.get("status", "graded") != "graded":
                    continue  # not a grade: no page that would read as one
                path = (workdir / "feedback" / student_dir.name / assignment /
                        f"{outcome['notebook']}.html")
                path.parent.mkdir(parents=True, exist_ok=True)
                try:
                    tests = [TestResult(**t) for t in outcome["tests"]]
                    final, notes = _changes(workdir, student_dir.name, assignment,
                                            outcome["notebook"], outcome.get("points", {}))
                    page = render(student_dir.name, assignment, outcome["notebook"], tests,
                                  outcome.get("points", {}), final=final, notes=notes)
                except (TypeError, KeyError, ValueError) as err:  # one odd result: that page only
                    skipped.append(f"{student_dir.name}/{assignment}: no feedback page "
                                            f"({type(err).__name__}: {str(err)[:200]})")
                    continue
                # backslashreplace: a lone surrogate that reached a message is written, not fatal.
                path.write_text(page, encoding="utf-8", errors="backslashreplace")
                written.append(path)
    return written
