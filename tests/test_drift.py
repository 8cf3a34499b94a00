"""The drift check's own machinery, on the pinned torch (the full matrix is tests/drift.py's,
run by hand and weekly: it needs about 5 GB per environment).

What holds here: the matrix derives each entry's requirements from the learner's; the probe
runs a real notebook in this environment and reports a real failure by its cell, claim and
error; the report says what failed; and the committed report covers every notebook on every
default entry, which is what the notebooks' "Verified on" lines are generated from.
"""

from __future__ import annotations

import json
import subprocess
import sys

import drift
import drift_probe
import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from coursefiles import REPO, assignments
from nbrun import run_notebook

LEARNER = (REPO / "requirements.txt").read_text()


def _entry(name: str) -> drift.Entry:
    return next(e for e in drift.MATRIX if e.name == name)


def test_each_entry_is_the_learners_requirements_with_its_own_torch():
    learner = {drift._project(line) for line in LEARNER.splitlines()} - {""}
    for entry in drift.MATRIX:
        reqs = entry.requirements(LEARNER)
        names = [drift._project(line) for line in reqs]
        assert reqs[0] == entry.torch and names.count("torch") == 1
        # the front end stays out; everything else of the learner's is there
        assert not set(drift.FRONT_END) & set(names)
        expected = learner - set(drift.FRONT_END)
        if entry.index in ("pypi", "native"):
            expected -= {"triton"}  # PyPI's torch brings the Triton it needs
        assert expected <= set(names), (entry.name, expected - set(names))


def test_colab_entry_takes_colabs_pins_instead_of_the_courses():
    reqs = _entry("colab-2.11").requirements(LEARNER)
    assert "ipywidgets==7.7.1" in reqs and "ipywidgets==8.1.9" not in reqs
    assert "traitlets==5.7.1" in reqs  # a pin the learner's file does not have is added
    assert reqs[0] == "torch==2.11.0"


def test_the_cli_lists_the_matrix_and_refuses_an_unknown_entry():
    tio = [sys.executable, str(REPO / "tio.py"), "drift"]
    listed = subprocess.run(tio + ["--list"], capture_output=True, text=True, cwd=REPO)
    assert listed.returncode == 0
    assert all(e.name in listed.stdout for e in drift.MATRIX)
    bad = subprocess.run(tio + ["--entry", "colab-2.1"], capture_output=True, text=True, cwd=REPO)
    assert bad.returncode == 2
    assert "unknown entry colab-2.1" in bad.stderr and "--list" in bad.stderr


@pytest.mark.slow
def test_the_probe_reports_a_failing_claim_by_cell_line_and_error(tmp_path):
    nb = new_notebook(cells=[new_code_cell("import torch"),
                             new_code_cell("x = torch.ones(2)\nassert x.sum() == 3, 'two ones sum to 2'"),
                             new_code_cell("print('never reached fails nothing')")])
    path = tmp_path / "claim.ipynb"
    nbformat.write(nb, path)
    ran = run_notebook(path, cwd=tmp_path)
    failure = drift_probe.first_failure(ran.nb)
    assert failure == {"cell": 1, "claim": "assert x.sum() == 3, 'two ones sum to 2'",
                       "error": "AssertionError: two ones sum to 2"}


@pytest.mark.slow
def test_the_probe_passes_notebook_01_here(tmp_path):
    """All three runs of the first notebook on this environment's torch, as the matrix does."""
    out = tmp_path / "result.json"
    proc = subprocess.run([sys.executable, str(REPO / "tests" / "drift_probe.py"), "--only", "01",
                           "--output", str(out)], capture_output=True, text=True, cwd=REPO)
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(out.read_text())
    import torch

    assert result["environment"]["torch"] == torch.__version__
    (runs,) = result["notebooks"].values()
    assert set(runs) == {"solution", "wrong_answers", "student"}
    assert all(r["ok"] for r in runs.values()), runs
    assert runs["wrong_answers"]["wrong_answers"] >= 2 and not runs["wrong_answers"]["accepted_wrongly"]


def _result(entry: str, ok: bool, torch: str) -> dict:
    failure = None if ok else {"cell": 7, "claim": "assert pinned.is_pinned()", "error": "AssertionError: x"}
    run = {"ok": ok, "seconds": 3.0, "failure": failure}
    return {"entry": entry, "column": entry, "date": "2026-01-02", "seconds": 60,
            "environment": {"torch": torch, "cuda_build": "13.0", "accelerator": None,
                            "python": "3.12.1", "ipywidgets": "7.7.1", "numpy": "2.1.3", "triton": "3.6.0"},
            "notebooks": {"01-why-tensors": {"solution": run,
                                             "wrong_answers": dict(run, wrong_answers=4, stubs=2,
                                                                   accepted_wrongly=[]),
                                             "student": dict(run, ok=True, failure=None)}}}


def test_the_report_names_the_failing_cell_and_keeps_passing_builds_only(tmp_path):
    md, js = tmp_path / "r.md", tmp_path / "r.json"
    drift.write_report([_result("colab-2.11", False, "2.11.0+cu130"), _result("newest", True, "2.15.0")],
                       md, js)
    text = md.read_text()
    assert "cell 7: `assert pinned.is_pinned()` → AssertionError: x" in text
    assert "| 01-why-tensors | **FAIL** | pass |" in text
    verified = json.loads(js.read_text())["verified"]
    assert verified == {"01-why-tensors": ["torch 2.15.0 (CUDA 13.0 build, no GPU)"]}  # not 2.11


def test_the_committed_report_verifies_every_notebook_on_every_default_entry():
    """The Done-when of the drift check; the notebooks' lines are generated from this file."""
    report = json.loads((REPO / "benchmarks" / "drift-report.json").read_text())
    entries = {b["entry"] for b in report["builds"]}
    assert set(drift.DEFAULT_ENTRIES) <= entries, "run `python3 tio.py drift` for the missing entries"
    builds = {b["build"] for b in report["builds"] if b["entry"] in drift.DEFAULT_ENTRIES}
    for assignment in assignments():
        missing = builds - set(report["verified"].get(assignment, []))
        assert not missing, f"{assignment} did not pass on {missing}: see benchmarks/drift-report.md"


def test_a_notebook_says_which_builds_it_was_verified_on():
    from autograder.authoring.verified import verified_markdown

    nb = nbformat.read(REPO / "notebooks" / "01-why-tensors" / "01-why-tensors.ipynb", as_version=4)
    line = verified_markdown("01-why-tensors")
    assert line.startswith("*Verified on torch ") and line in nb.cells[0].source


def test_the_packages_torch_floor_is_the_oldest_torch_the_report_proves():
    import tomllib

    deps = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    floor = next(d for d in deps if d.startswith("torch>=")).removeprefix("torch>=")
    report = json.loads((REPO / "benchmarks" / "drift-report.json").read_text())
    proved = [b["build"].split()[1] for b in report["builds"] if b["entry"] in drift.DEFAULT_ENTRIES]
    oldest = min(proved, key=lambda v: tuple(int(p) for p in v.split(".")[:3]))
    assert tuple(floor.split(".")) == tuple(oldest.split(".")[: len(floor.split("."))]), \
        f"pyproject.toml promises torch>={floor}; the drift check proves {sorted(proved)}"
