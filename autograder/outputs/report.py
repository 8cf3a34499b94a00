"""The instructor's view of a class: one self-contained HTML page per assignment, and an index.

Made only from what grading recorded (the gradebook, ``results/`` and ``submitted/`` of the
work folder), never by running anything. Per assignment: the score distribution; per
exercise its mean score and pass rate; per check its failure rate and the misconception it
names (``tensorcourse.misconceptions``), most frequent first, linked to the section that
teaches it; who was not graded or did not submit; Problems and Tampering; grading time per
notebook; and similar answers (autograder/outputs/similarity.py) side by side.

Figures are matplotlib PNGs embedded in the page, each with a text alternative made from the
numbers it draws and the same numbers in a table; the page prints. Every string that came from
a submission is HTML-escaped.

Contract: :func:`build` gathers the data (:class:`AssignmentReport`, tested directly);
:func:`write` renders and writes ``index.html`` and ``<assignment>.html``, returning the paths.
"""

from __future__ import annotations

import base64
import io
import statistics
from collections import Counter
from dataclasses import dataclass, field
from html import escape
from pathlib import Path

from ..course import CourseError, publication
from .similarity import Pair


@dataclass
class ExerciseRow:
    grade_id: str
    points: float
    mean: float          # mean score over graded students
    passed: int
    graded: int


@dataclass
class CheckRow:
    grade_id: str
    check: str           # the check's own name (its message's first words)
    misconception: str   # the id it names, "" when none
    failures: int
    graded: int
    example: str         # one learner message, as feedback showed it


@dataclass
class AssignmentReport:
    assignment: str
    max_score: float
    students: list[str]                       # everyone expected: the roster, else the gradebook
    scores: dict[str, float] = field(default_factory=dict)   # graded students only
    not_graded: list[str] = field(default_factory=list)
    not_submitted: list[str] = field(default_factory=list)
    exercises: list[ExerciseRow] = field(default_factory=list)
    checks: list[CheckRow] = field(default_factory=list)
    misconceptions: Counter = field(default_factory=Counter)  # id -> failures naming it
    problems: list[str] = field(default_factory=list)
    tampering: list[str] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)   # student -> grading time (s)
    phases: dict[str, float] = field(default_factory=dict)    # phase -> median seconds
    pairs: list[Pair] = field(default_factory=list)
    changes: dict[str, list[str]] = field(default_factory=dict)  # student -> adjustments, lateness
    # Per-student variants (autograder.judge.variants): exercise -> {student: variant number}.
    variants: dict[str, dict[str, int]] = field(default_factory=dict)


def _check_name(message: str) -> str:
    """``AssertionError: center_rows(square): 2 of 4 ...`` -> ``center_rows(square)``."""
    text = message.split(": ", 1)[1] if message.startswith(("AssertionError: ",)) else message
    name = text.split(": ", 1)[0] if ": " in text else text
    return name[:90]


def build(workdir: Path, roster: Path | None = None,
          assignments: list[str] | None = None) -> list[AssignmentReport]:
    """``assignments`` (default: every one the gradebook holds), gathered from the work folder."""
    from ..pipeline import adjustments, term
    from ..pipeline.gradebook import load_results
    from . import lms
    from .export import grade_rows
    from .similarity import answers_of, similar_pairs, stubs_of

    rows = grade_rows(workdir, assignments=assignments)
    people = [p.student for p in lms.read_roster(roster)] if roster is not None else None
    reports = []
    for assignment in sorted({r["assignment"] for r in rows}):
        mine = {r["student"]: r for r in rows if r["assignment"] == assignment}
        students = (people + [s for s in sorted(mine) if s not in people]) if people is not None \
            else sorted(mine)
        rep = AssignmentReport(assignment, max(float(r["max_score"]) for r in mine.values()),
                               students)
        per_test: dict[str, list[dict]] = {}
        points: dict[str, float] = {}
        for s in students:
            row = mine.get(s)
            if row is None or row["status"] == "not submitted":
                rep.not_submitted.append(s)
                continue
            if row["score"] == "":
                rep.not_graded.append(s)
                continue
            rep.scores[s] = float(row["score"])
            said = [a.describe() for a in adjustments.load(workdir) if a.key[:2] == (s, assignment)]
            info = term.lateness(workdir, s, assignment)
            if info.get("hours_late"):
                said.append(term.describe(info))
            if said:
                rep.changes[s] = said
            total = 0.0
            for outcome in load_results(workdir, assignment, s):
                rep.problems += [f"{s}: {p}" for p in outcome.get("problems", [])]
                rep.tampering += [f"{s}: {t}" for t in outcome.get("tampering", [])]
                total += sum(outcome.get("timings", {}).values())
                points.update(outcome.get("points", {}))
                for t in outcome.get("tests", []):
                    per_test.setdefault(t["grade_id"], []).append(t)
                    if type(t.get("variant")) is int:
                        rep.variants.setdefault(t["grade_id"], {})[s] = t["variant"]
            rep.seconds[s] = total
        graded = len(rep.scores)
        for gid, tests in per_test.items():
            passed = sum(t["passed"] for t in tests)
            full = points.get(gid, 0.0)
            scored = sum(full if t["passed"] else min(full, t.get("score") or 0.0) for t in tests)
            rep.exercises.append(ExerciseRow(gid, full, scored / graded if graded else 0.0,
                                             passed, graded))
            groups: dict[tuple[str, str], list[dict]] = {}
            for t in tests:
                if not t["passed"]:
                    named = t.get("misconception", "")
                    key = (named, "") if named else ("", _check_name(t.get("message", "")))
                    groups.setdefault(key, []).append(t)
            for (named, name), failed in groups.items():
                names = Counter(_check_name(t.get("message", "")) for t in failed)
                rep.checks.append(CheckRow(gid, name or names.most_common(1)[0][0], named,
                                           len(failed), graded, failed[0].get("message", "")))
                if named:
                    rep.misconceptions[named] += len(failed)
        rep.exercises.sort(key=lambda e: e.grade_id)
        rep.checks.sort(key=lambda c: (-c.failures, c.grade_id, c.check))
        phases: dict[str, list[float]] = {}
        for s in rep.scores:
            for outcome in load_results(workdir, assignment, s):
                for phase, sec in outcome.get("timings", {}).items():
                    phases.setdefault(phase, []).append(float(sec))
        rep.phases = {k: statistics.median(v) for k, v in phases.items()}
        answers = answers_of(workdir, assignment)
        rep.pairs = similar_pairs({s: a for s, a in answers.items() if s in rep.scores},
                                  stubs_of(assignment))
        reports.append(rep)
    return reports


# -- figures -------------------------------------------------------------------------------

_BLUE, _ORANGE = "#0b5cad", "#b35900"  # 4.5:1 on white; told apart under the common CVDs


def _png(fig) -> str:
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def _figure(png: str, alt: str, caption: str) -> str:
    return (f"<figure><img src=\"data:image/png;base64,{png}\" alt=\"{escape(alt)}\">"
            f"<figcaption>{escape(caption)}</figcaption></figure>")


def score_figure(rep: AssignmentReport) -> str:
    from matplotlib.figure import Figure

    scores = sorted(rep.scores.values())
    fig = Figure(figsize=(6, 2.6))
    ax = fig.subplots()
    counts = Counter(scores)
    xs = sorted(counts)
    ax.bar([f"{x:g}" for x in xs], [counts[x] for x in xs], color=_BLUE)
    for i, x in enumerate(xs):
        ax.text(i, counts[x], str(counts[x]), ha="center", va="bottom")
    ax.set_xlabel(f"score (out of {rep.max_score:g})")
    ax.set_ylabel("students")
    ax.spines[["top", "right"]].set_visible(False)
    if scores:
        alt = (f"Bar chart of the scores of {len(scores)} graded students out of "
               f"{rep.max_score:g} points: median {statistics.median(scores):g}; "
               + ", ".join(f"{counts[x]} scored {x:g}" for x in reversed(xs)) + ".")
    else:
        alt = "No graded students: nothing to chart."
    return _figure(_png(fig), alt, "Score distribution (graded students)")


def exercise_figure(rep: AssignmentReport) -> str:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6, 0.5 + 0.45 * max(1, len(rep.exercises))))
    ax = fig.subplots()
    names = [e.grade_id for e in rep.exercises][::-1]
    rates = [100 * e.passed / e.graded if e.graded else 0 for e in rep.exercises][::-1]
    ax.barh(names, rates, color=_BLUE)
    for i, r in enumerate(rates):
        ax.text(r + 1, i, f"{r:.0f}%", va="center")
    ax.set_xlim(0, 110)
    ax.set_xlabel("pass rate (% of graded students)")
    ax.spines[["top", "right"]].set_visible(False)
    alt = ("Horizontal bar chart of each exercise's pass rate: "
           + "; ".join(f"{e.grade_id} {100 * e.passed / e.graded if e.graded else 0:.0f}% "
                       f"({e.passed} of {e.graded})" for e in rep.exercises) + ".")
    return _figure(_png(fig), alt, "Pass rate per exercise")


def misconception_figure(rep: AssignmentReport) -> str:
    from matplotlib.figure import Figure

    top = rep.misconceptions.most_common(10)
    fig = Figure(figsize=(6, 0.5 + 0.45 * max(1, len(top))))
    ax = fig.subplots()
    ax.barh([mid for mid, _ in top][::-1], [n for _, n in top][::-1], color=_ORANGE)
    for i, (_, n) in enumerate(top[::-1]):
        ax.text(n + 0.1, i, str(n), va="center")
    ax.set_xlabel("failed checks naming it")
    ax.spines[["top", "right"]].set_visible(False)
    alt = ("Horizontal bar chart of the misconceptions failed checks named, most frequent first: "
           + "; ".join(f"{mid} {n}" for mid, n in top) + "." if top else
           "No failed check named a misconception.")
    return _figure(_png(fig), alt, "Misconceptions named by failed checks (top 10)")


# -- pages ---------------------------------------------------------------------------------

_STYLE = """
:root { color-scheme: light dark; --fg: #1f2328; --bg: #fff; --line: #d0d7de; --muted: #57606a;
        --link: #0969da; --mark: #fff3b0; }
@media (prefers-color-scheme: dark) { :root { --fg: #e6edf3; --bg: #0d1117; --line: #30363d;
        --muted: #9198a1; --link: #4493f8; --mark: #5c4a00; } img { background: #fff; } }
body { font-family: system-ui, sans-serif; max-width: 60rem; margin: 2rem auto; padding: 0 1rem;
       color: var(--fg); background: var(--bg); line-height: 1.45; }
a { color: var(--link); } table { border-collapse: collapse; width: 100%; margin: .5rem 0 1rem; }
caption { text-align: left; font-weight: 600; } th, td { text-align: left; padding: .3rem .5rem;
       border-bottom: 1px solid var(--line); vertical-align: top; }
td.n { text-align: right; white-space: nowrap; } td.msg { overflow-wrap: anywhere; }
.wide { overflow-x: auto; } img { max-width: 100%; height: auto; }
figure { margin: 1rem 0; } figcaption, .muted { color: var(--muted); }
.side { display: grid; grid-template-columns: 1fr 1fr; gap: .5rem; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; border: 1px solid var(--line); padding: .5rem;
      margin: 0; font-size: .85em; } mark { background: var(--mark); color: inherit; }
@media (max-width: 40rem) { .side { grid-template-columns: 1fr; } }
@media print { body { max-width: none; margin: 0; } a { color: inherit; } .wide { overflow: visible; }
               h2 { break-after: avoid; } figure, table { break-inside: avoid; } }
"""


def _page(title: str, body: str) -> str:
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>{escape(title)}</title><style>{_STYLE}</style></head><body>\n{body}\n"
            "</body></html>\n")


def _table(caption: str, head: list[str], rows: list[list[str]], numeric: set[int]) -> str:
    """``rows`` hold HTML already escaped by the caller."""
    cells = "".join(f"<th scope=\"col\">{escape(h)}</th>" for h in head)
    body = "\n".join("<tr>" + "".join(
        f"<td class=\"{'n' if i in numeric else 'msg'}\">{c}</td>" for i, c in enumerate(r)) + "</tr>"
        for r in rows)
    return (f"<div class=\"wide\" tabindex=\"0\" role=\"region\" aria-label=\"{escape(caption)}\">"
            f"<table><caption>{escape(caption)}</caption><thead><tr>{cells}</tr></thead>"
            f"<tbody>\n{body}\n</tbody></table></div>")


def _misconception_cell(mid: str) -> str:
    if not mid:
        return "<span class=\"muted\">none named</span>"
    from tensorcourse.misconceptions import catalog

    m = catalog().get(mid)
    if m is None:
        return f"<code>{escape(mid)}</code>"
    url = publication().section_url(m.notebook, m.section)
    return (f"<code>{escape(mid)}</code>: {escape(m.belief)} "
            f"(<a href=\"{escape(url)}\">{escape(m.section)}</a>)")


def _marked(source: str, ranges: list[tuple[int, int]]) -> str:
    out, at = [], 0
    for start, end in sorted(ranges):
        start = max(start, at)
        if start >= end:
            continue
        out += [escape(source[at:start]), f"<mark>{escape(source[start:end])}</mark>"]
        at = end
    out.append(escape(source[at:]))
    return "".join(out)


def assignment_page(rep: AssignmentReport) -> str:
    scores = list(rep.scores.values())
    summary = (f"<p>{len(rep.students)} students: {len(rep.scores)} graded"
               + (f", median {statistics.median(scores):g} / {rep.max_score:g}, mean "
                  f"{statistics.mean(scores):.1f}" if scores else "")
               + f"; {len(rep.not_graded)} not graded; {len(rep.not_submitted)} not submitted. "
               f"{len(rep.problems)} problem(s), {len(rep.tampering)} tampering report(s).</p>")
    parts = [f"<header><p><a href=\"index.html\">All assignments</a></p>"
             f"<h1>{escape(rep.assignment)}: class report</h1>{summary}</header><main>"]
    parts.append("<h2>Scores</h2>" + score_figure(rep) + _table(
        "Students per score", ["score", "students"],
        [[f"{x:g}", str(n)] for x, n in sorted(Counter(scores).items(), reverse=True)], {0, 1}))
    parts.append("<h2>Exercises</h2>" + exercise_figure(rep) + _table(
        "Mean score and pass rate per exercise", ["exercise", "points", "mean score", "passed",
                                                   "pass rate"],
        [[f"<code>{escape(e.grade_id)}</code>", f"{e.points:g}", f"{e.mean:.2f}",
          f"{e.passed} of {e.graded}", f"{100 * e.passed / e.graded if e.graded else 0:.0f}%"]
         for e in rep.exercises], {1, 2, 3, 4}))
    parts.append("<h2>Failed checks and the misconceptions they name</h2>"
                 + misconception_figure(rep) + _table(
        "Failed checks, most frequent first", ["exercise", "check", "misconception", "failed",
                                               "failure rate", "example message"],
        [[f"<code>{escape(c.grade_id)}</code>", escape(c.check), _misconception_cell(c.misconception),
          str(c.failures), f"{100 * c.failures / c.graded if c.graded else 0:.0f}%",
          escape(c.example)] for c in rep.checks], {3, 4}))
    if rep.variants:
        gids = sorted(rep.variants)
        parts.append(
            "<h2>Variants</h2><p>Each student predicted their own variant of these exercises "
            "(variant 0 is the published one). The failure rates and misconceptions above count "
            "every variant together: a check is named by what it asks, not by its expression.</p>"
            + _table("The variant each student was graded on", ["student", *gids],
                     [[escape(s), *(str(rep.variants[g].get(s, "")) for g in gids)]
                      for s in rep.students if any(s in rep.variants[g] for g in gids)],
                     set(range(1, len(gids) + 1))))
    parts.append("<h2>Not graded, not submitted</h2>"
                 f"<p>Not graded (a grader failure, never a 0: regrade with "
                 f"<code>grade --retry-failed</code>): {escape(', '.join(rep.not_graded) or 'none')}."
                 f"</p><p>Not submitted: {escape(', '.join(rep.not_submitted) or 'none')}.</p>")
    parts.append("<h2>Adjustments and late work</h2>" + (
        "<p>Scores above include these (adjustments are kept by every regrade; the late policy "
        "is in the grading folder's <code>nbgrader_config.py</code>).</p><ul>"
        + "".join(f"<li><b>{escape(st)}</b>: {escape('; '.join(lines))}</li>"
                  for st, lines in sorted(rep.changes.items())) + "</ul>"
        if rep.changes else "<p>None.</p>"))
    parts.append("<h2>Problems and Tampering</h2>" + "".join(
        f"<h3>{label} ({len(lines)})</h3>" + ("<ul>" + "".join(f"<li>{escape(x)}</li>" for x in lines)
                                               + "</ul>" if lines else "<p>None.</p>")
        for label, lines in (("Problems", rep.problems), ("Tampering", rep.tampering))))
    secs = sorted(rep.seconds.values())
    parts.append("<h2>Grading time</h2>" + (
        f"<p>Per graded notebook: median {statistics.median(secs):.1f} s, slowest {secs[-1]:.1f} s "
        f"({len(secs)} notebooks, as measured by the grader).</p>" if secs else "<p>None graded.</p>")
        + _table("Median seconds per phase of a notebook's grading", ["phase", "median (s)"],
                 [[escape(k), f"{v:.2f}"] for k, v in rep.phases.items()], {1}))
    parts.append("<h2>Similar answers</h2><p>Pairs whose distinctive answer code is near-identical "
                 "after normalization (names, whitespace, comments), the released stub and code "
                 "common to the class excluded (autograder/outputs/similarity.py). A prompt to read, not a "
                 "verdict.</p>")
    if not rep.pairs:
        parts.append("<p>None flagged.</p>")
    else:
        parts.append(_table("Flagged pairs, most shared code first",
                            ["pair", "shared tokens", "similarity"],
                            [[f"<a href=\"#pair-{i}\">{escape(p.a)} and {escape(p.b)}</a>",
                              str(p.tokens), f"{100 * p.similarity:.0f}%"]
                             for i, p in enumerate(rep.pairs, 1)], {1, 2}))
        for i, p in enumerate(rep.pairs, 1):
            parts.append(f"<h3 id=\"pair-{i}\">{escape(p.a)} and {escape(p.b)}</h3>")
            for s in p.shared:
                parts.append(f"<h4><code>{escape(s.grade_id)}</code></h4><div class=\"side\">"
                             f"<pre aria-label=\"{escape(p.a)}\">{_marked(s.source_a, s.ranges_a)}</pre>"
                             f"<pre aria-label=\"{escape(p.b)}\">{_marked(s.source_b, s.ranges_b)}</pre>"
                             "</div>")
    parts.append("</main><footer><p class=\"muted\">Made by <code>python -m autograder report</code> "
                 "from the gradebook and the grader's results; marked passages are shared.</p>"
                 "</footer>")
    return _page(f"{rep.assignment}: class report", "\n".join(parts))


def index_page(reports: list[AssignmentReport]) -> str:
    rows = [[f"<a href=\"{escape(r.assignment)}.html\">{escape(r.assignment)}</a>",
             str(len(r.scores)), str(len(r.not_graded)), str(len(r.not_submitted)),
             f"{statistics.median(r.scores.values()):g} / {r.max_score:g}" if r.scores else "",
             str(len(r.pairs))] for r in reports]
    body = ("<header><h1>Class report</h1></header><main>" + _table(
        "Assignments", ["assignment", "graded", "not graded", "not submitted", "median",
                        "similar pairs"], rows, {1, 2, 3, 4, 5}) + "</main>")
    return _page("Class report", body)


def write(workdir: Path, output: Path | None = None, roster: Path | None = None,
          assignments: list[str] | None = None) -> list[Path]:
    """Write the report; return the pages written (index first)."""
    import matplotlib

    matplotlib.use("Agg")
    if not (workdir / "gradebook.db").exists():
        raise CourseError(f"No gradebook in {workdir}: run `python -m autograder grade` first.")
    reports = build(workdir, roster, assignments)
    if not reports:
        raise CourseError(f"Nothing graded in {workdir} yet: run `python -m autograder grade` first.")
    out = output or workdir / "report"
    out.mkdir(parents=True, exist_ok=True)
    written = [out / "index.html"]
    written[0].write_text(index_page(reports), encoding="utf-8", errors="backslashreplace")
    for rep in reports:
        path = out / f"{rep.assignment}.html"
        path.write_text(assignment_page(rep), encoding="utf-8", errors="backslashreplace")
        written.append(path)
    return written
