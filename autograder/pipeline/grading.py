"""Grade a class: collect, grade every notebook in parallel, record in nbgrader's gradebook.

Contract of :func:`grade`: every (student, assignment) found ends with a recorded score, in
the gradebook at ``<workdir>/gradebook.db``, written by this process only, in sorted order
(same submissions, same scores, whatever ``jobs`` is). Each notebook is graded by
:func:`autograder.pipeline.unit.grade_notebook` in a worker process, its kernel in a sandbox. Next to
the gradebook: ``submitted/`` (copies of what was read), ``autograded/`` (executed notebooks,
hidden tests included: for the instructor only) and ``results/`` (per-notebook JSON that
feedback is made from). Feedback and export read only these.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import sys
import warnings
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path

from ..course import NOTEBOOKS, SOLUTIONS, VARIANTS, CourseError, notebook_names
from ..course import assignments as course_assignments
from ..judge.variants import assigned
from ..sandbox.launch import Limits
from ..sandbox.scratch import sweep_abandoned
from ..terminal import safe
from . import adjustments, reference_cache
from .gradebook import db_url, nbgrader_api, status, submission_score
from .submissions import collect
from .unit import Job, Outcome, grade_notebook, not_graded

log = logging.getLogger("autograder")


@dataclass
class GradeResult:
    student: str
    assignment: str
    score: float
    max_score: float
    problem: str = ""
    tampering: list[str] = field(default_factory=list)
    status: str = "graded"   # or "not graded": a grader failure, never a score


class Progress:
    """A one-line progress bar on stderr (redrawn with ``\\r``; plain lines when not a TTY)."""

    def __init__(self, total: int, enabled: bool) -> None:
        self.total, self.done, self.enabled = total, 0, enabled and total > 0
        self.tty = sys.stderr.isatty()
        self._draw("")

    def _draw(self, last: str) -> None:
        if not self.enabled:
            return
        width = 24
        filled = width * self.done // max(self.total, 1)
        line = f"grading [{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total} {safe(last)}"
        if self.tty:
            sys.stderr.write("\r" + line[:100].ljust(100))
        elif last:
            sys.stderr.write(line + "\n")
        sys.stderr.flush()

    def step(self, label: str) -> None:
        self.done += 1
        self._draw(label)
        if self.done == self.total and self.enabled and self.tty:
            sys.stderr.write("\n")


def _jobs_for(found, limits: Limits, sandboxed: bool, hidden: list[str]) -> list[Job]:
    jobs = []
    for (student, assignment), notebooks in sorted(found.found.items()):
        for name in notebook_names(assignment):
            jobs.append(Job(student, assignment, name, notebooks.get(name, b""),
                            str(NOTEBOOKS / assignment / f"{name}.ipynb"),
                            str(SOLUTIONS / assignment / f"{name}.ipynb"),
                            limits, sandboxed, hidden))
    return jobs


def _give_variants(jobs: list[Job], folder: Path) -> None:
    """Each job's variants, from its assignment's manifest in ``folder`` and the student's id.

    A manifest that cannot be read stops the run (CourseError) before anything is graded. A
    student it does not list saw the published exercises (so does the notebook on a hub) and
    is graded on them, with a note naming them."""
    from tensorcourse.variants import SPECS, VariantError, load

    manifests: dict[str, dict | None] = {}
    unlisted: dict[str, list[str]] = {}
    for job in jobs:
        if job.assignment not in manifests:
            path = folder / f"{job.assignment}.json"
            try:
                manifests[job.assignment] = load(path) if path.is_file() else None
            except VariantError as err:
                raise CourseError(str(err)) from None
            held = (manifests[job.assignment] or {}).get("assignment", job.assignment)
            if held != job.assignment:
                raise CourseError(f"{path} is the variants manifest of {held}, not of "
                                  f"{job.assignment}: put each assignment's in <assignment>.json.")
        manifest = manifests[job.assignment]
        if manifest is None:
            continue
        if job.student not in manifest["students"]:
            unlisted.setdefault(job.assignment, []).append(job.student)
        job.variants = assigned(manifest, job.assignment, job.student)
    for assignment, manifest in manifests.items():   # a spec the manifest predates, or lost
        absent = [e.split("/", 1)[1] for e in SPECS if e.split("/", 1)[0] == assignment
                  and manifest is not None and e not in manifest["exercises"]]
        if absent:
            notes_seen.append(f"{assignment}: its manifest has no variants of {', '.join(absent)}: "
                              "everyone is graded on them as published; freeze the variants "
                              "again (everyone keeps theirs) to add them.")
    for assignment, students in unlisted.items():
        notes_seen.append(f"{assignment}: graded on the published exercises, not on variants, "
                          f"for {len(students)} student(s) not in its manifest "
                          f"({', '.join(students[:10])}{', ...' if len(students) > 10 else ''}); "
                          "freeze the variants again with them on the roster to give them one.")


def _die_with_parent() -> None:
    """Worker start-up (Linux): if the grader is killed, its workers, and their sandboxes, die."""
    if sys.platform.startswith("linux"):
        import ctypes
        import signal

        try:
            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass


def _grader_failed(job: Job, err: BaseException) -> Outcome:
    """The outcome of a job the grader itself failed on: not graded, never a score."""
    return not_graded(job.student, job.assignment, job.notebook,
                      f"grader error: {type(err).__name__}: {str(err)[:400]}")


def _run_all(jobs: list[Job], workers: int, progress: Progress,
             record: Callable[[Job, Outcome], None], *, in_workers: bool = False) -> None:
    """Grade every job; ``record`` each outcome here, in this process, as soon as it is known.

    One writer, so the gradebook never sees two at once; a crash of the grader loses only what
    was in flight. Scores do not depend on the order (each notebook is graded on its own).
    """
    # in_workers: never in this process when worker processes are forked after it (the reference
    # run before the class): a kernel client here leaves ZMQ and asyncio state that forked
    # children inherit broken (their kernel clients then spin, never connecting).
    if workers <= 1 or (len(jobs) <= 1 and not in_workers):
        for job in jobs:
            try:
                outcome = grade_notebook(job)
            except Exception as err:  # noqa: BLE001 - one submission must not stop the class
                outcome = _grader_failed(job, err)
            record(job, outcome)
            progress.step(f"{job.student}/{job.assignment}")
        return
    import multiprocessing

    method = "fork" if sys.platform.startswith("linux") else "spawn"
    with ProcessPoolExecutor(max_workers=workers, initializer=_die_with_parent,
                             mp_context=multiprocessing.get_context(method)) as pool:
        futures = {pool.submit(grade_notebook, job): job for job in jobs}
        for future in as_completed(futures):
            job = futures[future]
            try:
                outcome = future.result()
            except Exception as err:  # noqa: BLE001 - a crashed worker must not stop the class
                outcome = _grader_failed(job, err)
            record(job, outcome)
            progress.step(f"{job.student}/{job.assignment}")


REFERENCE = "(reference)"


def _references(notebooks: list[tuple[str, str]], limits: Limits, sandboxed: bool,
                hidden: list[str], workers: int, *, fresh: bool = False,
                ) -> dict[tuple[str, str], dict[str, list[dict]]]:
    """The solution of each notebook graded like a submission: its recorded value checks are the
    oracle every submission's checks are decided against here (autograder.judge.values).

    A reference kept by an earlier sandboxed run with the same solution, grader, packages and
    limits is used as it is (:mod:`.reference_cache`), unless ``fresh``. A solution that fails a
    test gets a second run; a test it fails twice (a timing check on a loaded machine) has no
    reference and is decided in the kernel alone, with a problem line (and nothing is kept).
    Raises :class:`CourseError` when a solution cannot be graded at all.
    """
    references: dict[tuple[str, str], dict[str, list[dict]]] = {}
    # Read once: the bytes graded are the bytes keyed (an edit saved meanwhile is a new key).
    texts = {(a, n): ((SOLUTIONS / a / f"{n}.ipynb").read_bytes(),
                      (NOTEBOOKS / a / f"{n}.ipynb").read_bytes()) for a, n in notebooks}
    cache, why_not = reference_cache.Cache.open() if sandboxed else (None, "")
    if why_not:
        notes_seen.append(why_not)
    keys: dict[tuple[str, str], tuple[str, list[str]]] = {}
    if cache is not None:
        for (a, n), (solution, release) in texts.items():
            keys[(a, n)] = (reference_cache.key(a, n, solution, release, limits),
                            reference_cache.tests_of(solution))
            kept = None if fresh else cache.load(*keys[(a, n)])
            if kept is not None:
                references[(a, n)] = kept
    if references and cache is not None:
        notes_seen.append(f"reference runs of the solutions: {len(references)} of "
                          f"{len(notebooks)} kept from an earlier run with the same solution, "
                          f"grader, packages and limits ({cache.where}); "
                          "--fresh-references runs them again.")
    jobs = [Job(REFERENCE, a, n, solution, str(NOTEBOOKS / a / f"{n}.ipynb"),
                str(SOLUTIONS / a / f"{n}.ipynb"), limits, sandboxed, hidden,
                release_text=release.decode(), solution_text=solution.decode())
            for (a, n), (solution, release) in texts.items() if (a, n) not in references]
    found: dict[tuple[str, str], Outcome] = {}

    def run(batch: list[Job]) -> None:
        if not batch:
            return
        _run_all(batch, workers, Progress(0, False), lambda job, out: found.__setitem__(
            (job.assignment, job.notebook), out), in_workers=True)

    run(jobs)
    # A test can fail now and then for the machine's reasons (a timing check on a loaded
    # machine): such notebooks get one more run before anything is concluded.
    run([j for j in jobs if not _reference_ok(found[(j.assignment, j.notebook)])])
    for key, out in found.items():
        if out.status != "graded" or not out.tests:
            raise CourseError(f"the solution of {key[0]}/{key[1]} could not be graded ("
                              f"{(out.failure or 'no tests')[:300]}); every grade would be wrong. "
                              "Fix that first (run the pipeline test: tests/test_pipeline.py).")
        failing = {t.grade_id for t in out.tests if not t.passed}
        # A test the solution failed twice has no reference: the kernel's verdict alone
        # decides it, and the instructor is told.
        references[key] = {g: v for g, v in out.values.items() if g not in failing}
        if cache is not None and key in keys and not failing \
                and sorted(t.grade_id for t in out.tests) == keys[key][1]:
            cache.store(*keys[key], references[key])
        if failing:
            log.warning("the solution of %s/%s failed %s in the grader twice; those tests are "
                        "decided in the kernel only", key[0], key[1], ", ".join(sorted(failing)))
            warnings_seen.append(f"{key[0]}/{key[1]}: the solution failed {', '.join(sorted(failing))} "
                                 "in the grader twice (a loaded machine?); those tests are decided "
                                 "in the kernel only this run.")
    return references


def _reference_ok(out: Outcome) -> bool:
    return out.status == "graded" and bool(out.tests) and all(t.passed for t in out.tests)


# Problems found while preparing the references, reported with the run's problems.
warnings_seen: list[str] = []
# What the last grade() run wants said that is no problem (what it left out, and why).
notes_seen: list[str] = []


def _record(workdir: Path, outcome: Outcome, data: bytes) -> None:
    """Write one notebook's outcome: gradebook scores (the only writer), files beside it.

    A notebook that was not graded gets no score: its cells are left without one and marked
    for attention (nbgrader's formgrader shows "needs manual grading"), and its result file
    says so; export and the score table show "not graded".
    """
    from nbgrader.api import Gradebook, MissingEntry

    passed = {t.grade_id: t.passed for t in outcome.tests}
    earned = {t.grade_id: t.score for t in outcome.tests if t.score is not None}
    graded = outcome.status == "graded"
    with Gradebook(db_url(workdir)) as gb, warnings.catch_warnings():
        # nbgrader's add_submission trips SQLAlchemy's autoflush warning; it is harmless.
        warnings.simplefilter("ignore")
        gb.update_or_create_student(outcome.student)
        try:
            submission = gb.find_submission(outcome.assignment, outcome.student)
        except MissingEntry:
            submission = gb.add_submission(outcome.assignment, outcome.student)
        # What formgrader changed since the last run becomes a lasting adjustment first.
        adjustments.harvest(workdir, gb, outcome.student, outcome.assignment, outcome.notebook)
        points: dict[str, float] = {}
        for nb in submission.notebooks:
            if nb.name != outcome.notebook:
                continue
            for grade in nb.grades:
                full = float(grade.max_score)
                grade.auto_score = (full if passed.get(grade.name) else
                                    min(full, max(0.0, earned.get(grade.name, 0.0)))) if graded else None
                grade.needs_manual_grade = not graded
                points[grade.name] = float(grade.max_score)
        gb.db.commit()
        adjustments.apply(workdir, gb, outcome.student, outcome.assignment, outcome.notebook)
    rel = Path(outcome.student) / outcome.assignment
    for folder, suffix, content in (("submitted", ".ipynb", data),
                                    ("autograded", ".ipynb", outcome.executed.encode()),
                                    ("results", ".json", json.dumps(
                                        {**outcome.as_dict(), "executed": "", "values": {},
                                         "points": points}, indent=1).encode())):
        path = workdir / folder / rel / f"{outcome.notebook}{suffix}"
        path.parent.mkdir(parents=True, exist_ok=True)
        if folder == "autograded" and not outcome.executed:
            path.unlink(missing_ok=True)
            continue
        path.write_bytes(content)


def grade(submissions: Path, workdir: Path, assignments: list[str] | None, limits: Limits, *,
          jobs: int = 1, sandboxed: bool = True, progress: bool = True,
          retry_failed: bool = False, students: list[str] | None = None,
          scheduler: str | None = None, fresh_references: bool = False,
          variants: Path = VARIANTS,
          ) -> tuple[list[GradeResult], list[str], list[str]]:
    """Grade every submission under ``submissions``: (results, problems, tampering reports).

    ``assignments``: these (each registered in the gradebook), or ``None``: those the folder
    holds. ``retry_failed``: only (student, assignment) pairs not yet graded in ``workdir`` (a
    grader failure, or a run that stopped before reaching them). ``students``: only these
    students (the others' folders are not read). ``fresh_references``: run every solution
    again rather than use a kept reference (:mod:`.reference_cache`). ``variants``: the folder
    of variant manifests (``<assignment>.json``); an assignment without one is graded on its
    published exercises. What is worth saying but no problem is left in :data:`notes_seen`.
    """
    notes_seen.clear()
    # Only the assignments graded are registered: nbgrader's gradebook, the report and the LMS
    # files have a column or page for every registered assignment (issue #30).
    found = collect(submissions, assignments or course_assignments(), students or None)
    if assignments is None:
        assignments = sorted(found.present)
    for assignment in assignments:
        for name in notebook_names(assignment):
            if not (NOTEBOOKS / assignment / f"{name}.ipynb").is_file():
                raise CourseError(f"notebooks/{assignment}/{name}.ipynb is missing: run "
                                  f"`python -m autograder generate {assignment}` first.")
    problems = list(found.problems)
    if students:
        unknown = sorted(set(students) - {s for s, _ in found.pairs})
        if unknown:
            raise CourseError(f"no submission from {', '.join(unknown)} in {submissions} for "
                              f"{', '.join(assignments) or 'any assignment'} (student ids are the "
                              "folder or zip names).")
    if found.skipped:
        notes_seen.append("not graded this run (not asked for): "
                          + ", ".join(f"{a} ({n} notebook(s))" for a, n in sorted(found.skipped.items())))
    if retry_failed:
        found.found = {k: v for k, v in found.found.items()
                       if status(workdir, *k) != "graded"}
        if not found.found:
            notes_seen.append("--retry-failed: nothing to regrade; every submission found is "
                              "already graded.")
    elif not found.found:
        problems.append(f"No submissions found in {submissions} for "
                        f"{', '.join(assignments) or 'any assignment of this course'}.")
    from . import term

    term.write_config(workdir)   # formgrader's view of this folder, and the late policy
    term.policy(workdir)         # a bad late policy stops here, before anything is graded
    times = term.submission_times(workdir, found.stamps, found.mtimes, problems)
    api = nbgrader_api(workdir)
    for assignment in assignments:
        result = api.generate_assignment(assignment, force=True, create=True)
        if not result["success"]:
            raise CourseError(f"Could not prepare {assignment} for grading:\n{result['log']}")
    hidden = sorted({str(p) for p in (SOLUTIONS, workdir, submissions.resolve(), variants.resolve(),
                                      Path(__file__).resolve().parent.parent)})
    job_list = _jobs_for(found, limits, sandboxed, hidden)
    _give_variants(job_list, variants)
    warnings_seen.clear()
    if job_list:
        references = _references(sorted({(j.assignment, j.notebook) for j in job_list}), limits,
                                 sandboxed, hidden, jobs, fresh=fresh_references)
        for job in job_list:
            job.reference = references[(job.assignment, job.notebook)]
    for student, assignment in found.pairs:
        for folder in ("submitted", "autograded", "results", "feedback"):
            shutil.rmtree(workdir / folder / student / assignment, ignore_errors=True)
    for job in job_list:
        # What was read is kept before grading starts: a run that dies half-way leaves these
        # submissions "not graded" (export, --retry-failed), never "not submitted".
        path = workdir / "submitted" / job.student / job.assignment / f"{job.notebook}.ipynb"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(job.data)
    tampering: list[str] = []
    graded_problems: list[str] = []
    by_pair: dict[tuple[str, str], list[str]] = {}

    def record(job: Job, outcome: Outcome) -> None:
        _record(workdir, outcome, job.data)
        graded_problems.extend(outcome.problems)
        tampering.extend(outcome.tampering)
        by_pair.setdefault((job.student, job.assignment), []).extend(
            outcome.problems + outcome.tampering)

    try:
        if scheduler:  # a Dask cluster grades; this process still records (autograder/pipeline/cluster.py)
            from .cluster import run_on_cluster

            run_on_cluster(job_list, scheduler, Progress(len(job_list), progress), record)
        else:
            _run_all(job_list, jobs, Progress(len(job_list), progress), record)
    finally:
        sweep_abandoned()  # what a worker killed mid-notebook left here (autograder/sandbox/scratch.py)
        if not sandboxed:
            # These submissions ran as this user: a kept reference is no longer to be trusted.
            cache, _ = reference_cache.Cache.open()
            if cache is not None:
                cache.clear()
    notes_seen.extend(term.apply(workdir, found.pairs, times))   # times, extensions, penalties
    problems += warnings_seen + sorted(graded_problems)  # outcomes arrive in any order; reports do not
    tampering.sort()
    results = []
    for student, assignment in found.pairs:
        state = status(workdir, assignment=assignment, student=student)
        score, max_score = submission_score(workdir, assignment, student)
        notes = by_pair.get((student, assignment), [])
        results.append(GradeResult(student, assignment, score, max_score,
                                   notes[0] if notes else "",
                                   [t for t in tampering if t.startswith(f"{student}/{assignment}:")],
                                   state))
    return results, problems, tampering


def default_jobs() -> int:
    """All CPUs this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return max(1, os.cpu_count() or 1)
