"""The solutions' reference runs are kept between grading runs, and only while nothing changed.

The cache's rules, with the reference run replaced by a stand-in (no kernel): what is kept,
what is a different key, what is never trusted. The real pipeline's use of it is held by
tests/test_grading_failures.py: its regrades run no solution and score as the first run did.
"""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path

import nbformat
import pytest

from autograder.pipeline import grading, reference_cache, unit
from autograder.sandbox.launch import Limits
from coursefiles import read, solution_path

A = "01-why-tensors"
VALUES = {"t1": [{"kind": "same_value", "actual": {"t": "builtins.int", "v": 3},
                  "expected": {"t": "builtins.int", "v": 3}, "options": {}}]}


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    folder = tmp_path / "references"
    monkeypatch.setenv("TIO_REFERENCE_CACHE", str(folder))
    return folder


class Runs(list):
    """The notebooks the stand-in reference run was asked for; ``failing``: its test fails."""

    failing = False


@pytest.fixture
def reference_runs(monkeypatch) -> Runs:
    """Stand in for the solution's graded run (no kernel)."""
    runs = Runs()

    def fake(job: unit.Job) -> unit.Outcome:
        assert job.student == grading.REFERENCE
        runs.append(job.notebook)
        passed = not runs.failing
        return unit.Outcome(job.student, job.assignment, job.notebook,
                            tests=[unit.TestResult("t1", passed, "" if passed else "failed", "")],
                            values=VALUES)

    monkeypatch.setattr(grading, "grade_notebook", fake)
    return runs


def _refs(limits: Limits | None = None, *, sandboxed: bool = True, fresh: bool = False):
    return grading._references([(A, A)], limits or Limits(), sandboxed, [], 1, fresh=fresh)


def test_a_reference_is_kept_and_used_while_nothing_changed(cache, reference_runs):
    assert _refs() == {(A, A): VALUES} and reference_runs == [A]
    assert (cache.stat().st_mode & 0o777) == 0o700
    assert _refs() == {(A, A): VALUES} and reference_runs == [A]        # kept: no second run
    assert any("1 of 1 kept" in n for n in grading.notes_seen), grading.notes_seen
    _refs(fresh=True)                                                   # --fresh-references
    assert reference_runs == [A, A]
    _refs(replace(Limits(), cell_timeout=30))                           # other limits: other key
    assert reference_runs == [A, A, A]


def test_the_key_follows_the_solution_the_grader_and_the_packages(monkeypatch, tmp_path):
    key = reference_cache.key(A, A, Limits())
    assert key == reference_cache.key(A, A, Limits())
    assert key != reference_cache.key(A, A, replace(Limits(), memory_bytes=2**30))
    for what in ("_code_digest", "_environment"):
        monkeypatch.setattr(reference_cache, what, lambda: "something else")
        assert reference_cache.key(A, A, Limits()) != key, what
        monkeypatch.undo()
    course = tmp_path / "solutions"
    (course / A).mkdir(parents=True)
    sol = read(solution_path(A))
    sol.cells[-1].source += "\n# edited"
    nbformat.write(sol, course / A / f"{A}.ipynb")
    monkeypatch.setattr(reference_cache, "SOLUTIONS", course)
    assert reference_cache.key(A, A, Limits()) != key


def test_what_is_not_trusted_is_run_again(cache, reference_runs):
    _refs()
    kept = next(cache.glob("*.json"))
    kept.write_text("{ not json")                                       # damaged: a miss
    assert _refs() == {(A, A): VALUES} and reference_runs == [A, A]
    kept.write_text(json.dumps({"reference": {"t1": "forged"}}))        # not records: a miss
    assert _refs() == {(A, A): VALUES} and reference_runs == [A, A, A]
    os.chmod(kept, 0o666)                                               # others could write it
    _refs()
    assert reference_runs == [A, A, A, A]
    os.chmod(cache, 0o777)                                              # or the folder
    kept.chmod(0o600)
    _refs()
    assert reference_runs == [A, A, A, A, A]


def test_unsandboxed_and_failing_references_are_never_kept(cache, reference_runs):
    _refs(sandboxed=False)                 # a submission run as the grader could write here
    _refs(sandboxed=False)
    assert reference_runs == [A, A] and not list(cache.glob("*.json"))
    reference_runs.failing = True          # failed twice (a loaded machine?): decided in-kernel
    assert _refs() == {(A, A): {}} and reference_runs == [A, A, A, A]
    assert not list(cache.glob("*.json"))
    reference_runs.failing = False
    assert _refs() == {(A, A): VALUES} and len(list(cache.glob("*.json"))) == 1
