"""The solutions' reference runs are kept between grading runs, and only while nothing changed.

The cache's rules, with the reference run replaced by a stand-in (no kernel): what is kept,
what is a different key, and what is never trusted (the red team of #32: damaged, huge or
deeply nested files, FIFOs, links, folders others can write or swap, a folder every sandbox
sees, a run whose submissions were not sandboxed). The real pipeline's use of it is held by
tests/test_grading_failures.py: its regrades run no solution and score as the first run did.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import replace
from pathlib import Path

import nbformat
import pytest

from autograder.pipeline import grading, reference_cache, unit
from autograder.sandbox.launch import Limits
from coursefiles import read, release_path, solution_path

A = "01-why-tensors"
SOLUTION = solution_path(A).read_bytes()
TESTS = reference_cache.tests_of(SOLUTION)
RECORD = {"kind": "same_value", "actual": {"t": "builtins.int", "v": 3},
          "expected": {"t": "builtins.int", "v": 3}, "options": {}}
VALUES = {TESTS[0]: [RECORD]}


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    folder = tmp_path / "references"
    monkeypatch.setenv("TIO_REFERENCE_CACHE", str(folder))
    return folder


class Runs(list):
    """The notebooks the stand-in reference run was asked for; ``failing``: a test fails."""

    failing = False


@pytest.fixture
def reference_runs(monkeypatch) -> Runs:
    """Stand in for every graded run (no kernel): the solution passes every test."""
    runs = Runs()

    def fake(job: unit.Job) -> unit.Outcome:
        if job.student == grading.REFERENCE:
            runs.append(job.notebook)
        tests = [unit.TestResult(t, not runs.failing, "failed" if runs.failing else "", "")
                 for t in reference_cache.tests_of(job.solution_text.encode() or SOLUTION)]
        return unit.Outcome(job.student, job.assignment, job.notebook, tests=tests, values=VALUES)

    monkeypatch.setattr(grading, "grade_notebook", fake)
    return runs


def _refs(limits: Limits | None = None, *, sandboxed: bool = True, fresh: bool = False):
    return grading._references([(A, A)], limits or Limits(), sandboxed, [], 1, fresh=fresh)


def _kept(cache: Path) -> list[Path]:
    return sorted(p for p in cache.iterdir() if p.suffix == ".json")


def test_a_reference_is_kept_and_used_while_nothing_changed(cache, reference_runs):
    assert _refs() == {(A, A): VALUES} and reference_runs == [A]
    assert (cache.stat().st_mode & 0o777) == 0o700 and len(_kept(cache)) == 1
    assert (_kept(cache)[0].stat().st_mode & 0o777) == 0o600
    assert _refs() == {(A, A): VALUES} and reference_runs == [A]        # kept: no second run
    assert any("1 of 1 kept" in n for n in grading.notes_seen), grading.notes_seen
    _refs(fresh=True)                                                   # --fresh-references
    assert reference_runs == [A, A]
    _refs(replace(Limits(), cell_timeout=30))                           # other limits: other key
    assert reference_runs == [A, A, A]


def test_the_key_follows_the_bytes_graded_the_grader_and_the_packages(monkeypatch):
    release = release_path(A).read_bytes()
    key = reference_cache.key(A, A, SOLUTION, release, Limits())
    assert key == reference_cache.key(A, A, SOLUTION, release, Limits())
    assert key != reference_cache.key(A, A, SOLUTION + b" ", release, Limits())
    assert key != reference_cache.key(A, A, SOLUTION, release + b" ", Limits())
    assert key != reference_cache.key(A, A, SOLUTION, release, replace(Limits(), memory_bytes=2**30))
    for what in ("_code_digest", "_environment"):
        monkeypatch.setattr(reference_cache, what, lambda: "something else")
        assert reference_cache.key(A, A, SOLUTION, release, Limits()) != key, what
        monkeypatch.undo()
    # The packages are read from this environment's site-packages, whatever sys.path holds.
    before = reference_cache._environment()
    reference_cache._environment.cache_clear()
    monkeypatch.setattr(sys, "path", [*sys.path, str(Path(reference_cache.__file__).parent)])
    assert reference_cache._environment() == before


def test_damaged_or_foreign_files_are_run_again(cache, reference_runs):
    _refs()
    kept = _kept(cache)[0]
    nested = "[" * 100_000 + "]" * 100_000
    deep = f'{{"tests": {json.dumps(TESTS)}, "reference": {nested}}}'
    for content in ("{ not json",
                    json.dumps({"tests": TESTS, "reference": {TESTS[0]: "forged"}}),  # not records
                    json.dumps({"tests": TESTS[1:], "reference": {}}),     # a test left out
                    json.dumps({"tests": TESTS, "reference": {"other": []}}),  # a foreign test
                    deep):
        kept.write_text(content)
        runs = len(reference_runs)
        assert _refs() == {(A, A): VALUES} and len(reference_runs) == runs + 1, content[:60]
    for spoil in ("group-writable", "too large", "a link", "a fifo"):
        kept.unlink(missing_ok=True)
        _refs()                                        # kept again, sound
        runs = len(reference_runs)
        if spoil == "group-writable":
            kept.chmod(0o660)
        elif spoil == "too large":
            with open(kept, "r+b") as f:
                f.truncate(reference_cache.MAX_BYTES + 1)
        elif spoil == "a link":
            sound = kept.with_suffix(".sound")
            kept.rename(sound)
            kept.symlink_to(sound)
        else:
            kept.unlink()
            os.mkfifo(kept, 0o600)                     # read, it would block the grader
        assert _refs() == {(A, A): VALUES} and len(reference_runs) == runs + 1, spoil


def test_a_folder_others_could_write_swap_or_read_is_not_used(tmp_path, monkeypatch,
                                                              reference_runs):
    def refused(folder: Path, why: str) -> None:
        monkeypatch.setenv("TIO_REFERENCE_CACHE", str(folder))
        grading.notes_seen.clear()
        runs = len(reference_runs)
        _refs()
        _refs()
        assert len(reference_runs) == runs + 2, folder          # nothing kept, nothing read
        assert any("not" in n and why in n for n in grading.notes_seen), grading.notes_seen

    open_parent = tmp_path / "open"
    open_parent.mkdir(mode=0o777)
    open_parent.chmod(0o777)                                  # no sticky bit: anyone may swap
    refused(open_parent / "refs", "others may write to")
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o755)
    refused(shared, "mode 700")                               # readable by others
    (tmp_path / "real").mkdir(mode=0o700)
    (tmp_path / "link").symlink_to(tmp_path / "real")
    refused(tmp_path / "link", "a link")                      # not followed
    refused(Path(sys.prefix) / "refs", "every sandbox sees")  # the kernels' environment
    assert not (Path(sys.prefix) / "refs").exists()


def test_unsandboxed_and_failing_references_are_never_kept(cache, reference_runs):
    _refs(sandboxed=False)                 # its submissions run as the grader: could write here
    _refs(sandboxed=False)
    assert reference_runs == [A, A] and not cache.exists()
    reference_runs.failing = True          # failed twice (a loaded machine?): decided in-kernel
    assert _refs() == {(A, A): {}} and reference_runs == [A, A, A, A]
    assert not _kept(cache)
    reference_runs.failing = False
    assert _refs() == {(A, A): VALUES} and len(_kept(cache)) == 1


@pytest.mark.slow
def test_an_unsandboxed_run_forgets_every_kept_reference(tmp_path, cache, reference_runs,
                                                          monkeypatch):
    """Its submissions could have written to the folder (a red team's forged oracle)."""
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    _refs()
    assert len(_kept(cache)) == 1
    subs = tmp_path / "subs"
    (subs / "eve" / A).mkdir(parents=True)
    nbformat.write(read(release_path(A)), subs / "eve" / A / f"{A}.ipynb")
    grading.grade(subs, tmp_path / "grading", [A], Limits(), jobs=1, progress=False,
                  sandboxed=False)
    assert _kept(cache) == [] and reference_runs == [A, A]   # it ran its own, kept nothing
