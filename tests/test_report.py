"""The instructor's view on a synthetic class: grade, report, similar answers, LMS exports.

Thirty students on a roster, submitting notebook 01, each built with a known story:

  s01-s19  the solution with one wrong answer each from tests/wrong_answers/ (every variant
           once), so each one's misconception is planted exactly once per variant
  s20-s23  the solution with the most common mistake (center_rows without keepdim): five
           students with the same short wrong answer, which must not make them "similar"
  s24-s26  the solution with the same alternative one-liner for center_rows
  s27      the solution with three answers written their own way (longer, distinctive)
  s28      s27's answers copied: names changed, comments reworded, blank lines added
  s29      a broken file (not a notebook)
  s30      on the roster, submitted nothing

The report must count exactly the planted misconceptions, flag s27/s28 and nobody else, list
s30 as not submitted; a real browser (Chromium) opens every page and finds every figure with
its text alternative (screenshots in .test-output/report/); the Canvas and Moodle files have
the documented headers and one row per roster student.
"""

from __future__ import annotations

import csv
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import nbformat
import pytest

from autograder.outputs import lms, report
from autograder.outputs.similarity import answers_of, similar_pairs, stubs_of
from autograder.sandbox.launch import unavailable
from coursefiles import REPO, read, release_path, solution_answers, with_replacements
from wrong_answers import wrong_answers

pytestmark = pytest.mark.slow
A = "01-why-tensors"
ARTIFACTS = REPO / ".test-output" / "report"
SCREENSHOT = REPO / "assets" / "class-report.png"

MISTAKE = ("ex3-center-rows-answer", "def center_rows(x):\n    return x - x.mean(dim=1)\n")
ONE_LINER = ("ex3-center-rows-answer",
             "def center_rows(x):\n    return x - x.mean(-1, keepdim=True)\n")
OWN_WAY = {
    "ex2-shares-storage-answer": (
        "def shares_storage(a, b):\n"
        "    # two tensors share memory when their storages start at the same address\n"
        "    first = a.untyped_storage()\n"
        "    second = b.untyped_storage()\n"
        "    start_a = first.data_ptr()\n"
        "    start_b = second.data_ptr()\n"
        "    same = start_a == start_b\n"
        "    return bool(same)\n"),
    "ex3-center-rows-answer": (
        "def center_rows(x):\n"
        "    # subtract each row's average, computed by hand\n"
        "    count = x.shape[1]\n"
        "    totals = x.sum(dim=1, keepdim=True)\n"
        "    averages = totals / count\n"
        "    centered = x - averages\n"
        "    return centered\n"),
    "ex5-median-time-answer": (
        "import time\n\n\ndef median_time(fn, repeats=5, warmup=1):\n"
        "    if repeats < 1:\n        raise ValueError('repeats must be at least 1')\n"
        "    for _ in range(warmup):\n        fn()\n"
        "    samples = []\n"
        "    for _ in range(repeats):\n"
        "        begin = time.perf_counter()\n        fn()\n"
        "        samples.append(time.perf_counter() - begin)\n"
        "    samples.sort()\n    middle = len(samples) // 2\n"
        "    if len(samples) % 2 == 1:\n        return float(samples[middle])\n"
        "    return float((samples[middle - 1] + samples[middle]) / 2)\n"),
}
RENAMES = [("# two tensors share memory when their storages start at the same address",
            "# same storage <=> same start pointer"),
           ("# subtract each row's average, computed by hand", "# row means by hand\n"),
           ("first", "sa"), ("second", "sb"), ("start_a", "pa"), ("start_b", "pb"),
           ("same", "equal"), ("count", "n"), ("totals", "s"), ("averages", "avg"),
           ("centered", "out"), ("samples", "ts"), ("begin", "t0"), ("middle", "mid")]


def _copied(source: str) -> str:
    for old, new in RENAMES:  # comments whole; names whole (`count` is not in `perf_counter`)
        pattern = re.escape(old) if old.startswith("#") else rf"(?<![\w.]){re.escape(old)}(?!\w)"
        source = re.sub(pattern, new.replace("\\", "\\\\"), source)
    return source.replace("\n    return", "\n\n    return")


def _class(subs: Path) -> tuple[Counter, list[lms.Person]]:
    """Write the submissions; return the planted misconceptions and the roster."""
    rel, answers = read(release_path(A)), solution_answers(A)
    variants = [(gid, w) for gid, ws in wrong_answers(A).items() for w in ws]
    assert len(variants) <= 19, "the class plants each wrong answer of 01 once: add students"
    planted: Counter = Counter()
    stories: dict[str, dict[str, str]] = {}
    for i in range(1, 30):
        stories[f"s{i:02d}"] = dict(answers)
    for i, (gid, w) in enumerate(variants, start=1):
        stories[f"s{i:02d}"][gid] = w.source
        planted[w.misconception] += 1
    mistake = next(w for w in wrong_answers(A)[MISTAKE[0]] if w.source == MISTAKE[1])
    for s in ("s20", "s21", "s22", "s23"):
        stories[s][MISTAKE[0]] = MISTAKE[1]
        planted[mistake.misconception] += 1
    for s in ("s24", "s25", "s26"):
        stories[s][ONE_LINER[0]] = ONE_LINER[1]
    stories["s27"].update(OWN_WAY)
    stories["s28"].update({gid: _copied(src) for gid, src in OWN_WAY.items()})
    for student, chosen in stories.items():
        path = subs / student / A / f"{A}.ipynb"
        path.parent.mkdir(parents=True)
        if student == "s29":
            path.write_text("{ this is not a notebook")
        else:
            nbformat.write(with_replacements(rel, chosen), path)
    roster = [lms.Person(f"s{i:02d}", f"Student {i}", f"{1000 + i}", f"s{i:02d}@uni.example",
                         "A" if i % 2 else "B", f"SIS{i:04d}", f"login{i:02d}") for i in range(1, 31)]
    return planted, roster


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    root = tmp_path_factory.mktemp("class report")  # a space in the path, on purpose
    subs, workdir = root / "submissions", root / "grading"
    planted, roster = _class(subs)
    roster_csv = root / "roster.csv"
    with roster_csv.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(lms.ROSTER_COLUMNS)
        w.writerows([p.student, p.name, p.lms_id, p.email, p.section, p.sis_user_id, p.sis_login_id]
                    for p in roster)
    cmd = [sys.executable, "-m", "autograder", "grade", str(subs), A, "--workdir", str(workdir)]
    if unavailable():
        cmd.append("--no-sandbox")
    run = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=1800)
    return {"workdir": workdir, "planted": planted, "roster": roster_csv, "run": run, "root": root}


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "autograder", *args], cwd=REPO,
                          capture_output=True, text=True, timeout=600)


def test_the_class_is_graded_and_the_broken_file_reported(graded):
    run = graded["run"]
    assert run.returncode == 0, run.stdout + run.stderr
    assert "s29" in run.stdout and "not a readable notebook" in run.stdout


def test_report_counts_exactly_the_planted_misconceptions(graded):
    (rep,) = report.build(graded["workdir"], graded["roster"])
    assert rep.misconceptions == graded["planted"]
    assert rep.not_submitted == ["s30"] and rep.not_graded == []
    assert rep.scores["s29"] == 0 and any("s29" in p for p in rep.problems)
    assert rep.scores["s27"] == rep.scores["s28"] == rep.max_score  # copying is not failing
    # Per check: most frequent first, and the common mistake is the top one.
    assert [c.failures for c in rep.checks] == sorted((c.failures for c in rep.checks), reverse=True)
    mistake = next(w for w in wrong_answers(A)[MISTAKE[0]] if w.source == MISTAKE[1])
    assert rep.checks[0].misconception == mistake.misconception
    assert rep.checks[0].failures == graded["planted"][mistake.misconception]


def test_similar_answers_flag_the_copied_pair_and_not_the_one_liners(graded):
    (rep,) = report.build(graded["workdir"], graded["roster"])
    assert [(p.a, p.b) for p in rep.pairs] == [("s27", "s28")]
    assert {s.grade_id for s in rep.pairs[0].shared} == set(OWN_WAY)
    # What keeps the one-liner trio and the five with the same short mistake out is the
    # size threshold: without it they would be flagged too.
    answers = {s: a for s, a in answers_of(graded["workdir"], A).items() if s in rep.scores}
    loose = {(p.a, p.b) for p in similar_pairs(answers, stubs_of(A), min_tokens=1)}
    assert {("s24", "s25"), ("s24", "s26"), ("s25", "s26")} <= loose


def test_report_pages_open_in_a_browser_with_every_figure_described(graded):
    pytest.importorskip("playwright.sync_api")
    from a11y import run_axe, set_dark  # noqa: F401 - set_dark: the report follows the OS
    from test_browser import CHROMIUM, CHROMIUM_ARGS

    if not Path(CHROMIUM).exists():
        pytest.skip(f"no Chromium at {CHROMIUM} (Debian: apt-get install chromium)")
    out = graded["root"] / "report"
    done = _cli("report", "--workdir", str(graded["workdir"]), "--output", str(out),
                "--roster", str(graded["roster"]))
    assert done.returncode == 0, done.stdout + done.stderr
    pages = sorted(out.glob("*.html"))
    assert [p.name for p in pages] == [f"{A}.html", "index.html"]
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    problems = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        for scheme in ("light", "dark"):
            page = browser.new_page(color_scheme=scheme, viewport={"width": 1100, "height": 900})
            for html in pages:
                page.goto(html.as_uri())
                images = page.evaluate("""() => [...document.images].map(i => ({
                    alt: i.getAttribute('alt') || '', ok: i.complete && i.naturalWidth > 0}))""")
                if html.name != "index.html":
                    assert len(images) == 3, images
                for img in images:
                    if not img["ok"] or len(img["alt"]) < 40 or not any(c.isdigit() for c in img["alt"]):
                        problems.append(f"{html.name}: figure without a loaded image or a "
                                        f"specific alt: {img['alt'][:80]!r}")
                problems += run_axe(page, f"report-{html.stem}-{scheme}")
                page.screenshot(path=str(ARTIFACTS / f"{html.stem}-{scheme}.png"), full_page=True)
            if scheme == "light":  # the README's picture: the misconceptions the class holds
                page.goto((out / f"{A}.html").as_uri())
                page.evaluate("""() => [...document.querySelectorAll('h2')]
                    .find(h => h.textContent.startsWith('Failed checks')).scrollIntoView()""")
                page.screenshot(path=str(ARTIFACTS / "readme.png"))
            page.close()
        browser.close()
    assert not problems, "\n".join(problems)
    text = (out / f"{A}.html").read_text()
    assert "s27 and s28" in text and "<mark>" in text
    assert "s30" in text.split("Not submitted:", 1)[1][:200]


def test_readme_shows_the_report_and_the_screenshot_is_a_real_one():
    readme = (REPO / "README.md").read_text()
    assert f"assets/{SCREENSHOT.name}" in readme and "python -m autograder report" in readme
    # A copy of .test-output/report/readme.png, which the browser test above takes.
    assert SCREENSHOT.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def _rows(path: Path) -> list[list[str]]:
    with path.open(newline="") as fh:
        return list(csv.reader(fh))


def test_canvas_export_has_the_gradebook_columns_and_a_row_per_roster_student(graded):
    out = graded["root"] / "canvas.csv"
    done = _cli("export", "--format", "canvas", "--roster", str(graded["roster"]),
                "--workdir", str(graded["workdir"]), "--output", str(out))
    assert done.returncode == 0, done.stdout + done.stderr
    rows = _rows(out)
    assert rows[0] == [*lms.CANVAS_HEADER, A]
    assert rows[1][0] == "Points Possible" and float(rows[1][5]) == 14
    body = {r[1]: r for r in rows[2:]}          # by Canvas user id (the roster's lms_id)
    assert len(rows) - 2 == 30 == len(body)
    assert body["1030"][5] == ""                # s30: no submission, no score (never a 0)
    assert body["1027"][5] == "14" and body["1027"][0] == "Student 27"
    assert body["1027"][2:4] == ["SIS0027", "login27"]   # Canvas's SIS ids, never the email
    assert body["1029"][5] == "0"               # the broken file: graded, 0
    assert "s30" in done.stdout and "not submitted" in done.stdout


def test_moodle_export_maps_by_id_number_or_email_with_feedback(graded):
    out = graded["root"] / "moodle.csv"
    done = _cli("export", "--format", "moodle", "--roster", str(graded["roster"]),
                "--workdir", str(graded["workdir"]), "--output", str(out))
    assert done.returncode == 0, done.stdout + done.stderr
    rows = _rows(out)
    assert rows[0] == [*lms.MOODLE_HEADER, A, f"{A} feedback"]
    body = {r[0]: r for r in rows[1:]}
    assert len(body) == 30
    assert body["1030"][4:] == ["", "not submitted"]
    assert body["1001"][1] == "s01@uni.example" and body["1027"][4] == "14"


def test_bad_roster_and_format_get_a_clear_error(graded, tmp_path):
    bad = tmp_path / "roster.csv"
    bad.write_text("name,email\nAda,ada@uni.example\n")
    done = _cli("export", "--format", "canvas", "--roster", str(bad), "--workdir",
                str(graded["workdir"]))
    assert done.returncode == 2 and "student" in done.stderr and "Traceback" not in done.stderr
    twice = tmp_path / "twice.csv"
    twice.write_text("student\ns01\ns01\n")
    done = _cli("export", "--format", "moodle", "--roster", str(twice), "--workdir",
                str(graded["workdir"]))
    assert done.returncode == 2 and "listed twice" in done.stderr
    done = _cli("export", "--format", "blackboard", "--workdir", str(graded["workdir"]))
    assert done.returncode == 2 and "canvas" in done.stderr
    done = _cli("report", "--workdir", str(tmp_path / "nothing"))
    assert done.returncode == 2 and "grade` first" in done.stderr


def test_a_not_graded_notebook_is_blank_in_the_lms_files_and_flagged():
    rows = [{"student": "a", "assignment": A, "score": "", "max_score": 14.0, "status": "not graded"},
            {"student": "b", "assignment": A, "score": 9.0, "max_score": 14.0, "status": "graded"}]
    table = lms.lms_rows(rows, [lms.Person("a"), lms.Person("b"), lms.Person("c")])
    assert [r.scores[A] for r in table] == [None, 9.0, None]
    assert lms.attention(table) == [f"a: {A}: not graded", f"c: {A}: not submitted"]
    extra = lms.lms_rows(rows, [lms.Person("b")])  # graded but not on the roster: still there
    assert [r.person.student for r in extra] == ["b", "a"] and "not on the roster" in \
        lms.attention(extra)[0]

