"""Grade on a Dask cluster: ``python -m autograder grade SUBMISSIONS --scheduler tcp://HOST:8786``.

Same contract as :func:`autograder.pipeline.grading._run_all`: every job is graded once by
:func:`autograder.pipeline.unit.grade_notebook` (here on a Dask worker, in the same sandbox), and
``record(job, outcome)`` is called **in this process**, as each outcome arrives, exactly once per
notebook: the gradebook keeps one writer.

What travels: a :class:`~autograder.pipeline.unit.Job` is plain data (the learner's bytes, limits, the
release's and the solution's notebook JSON, the solution's recorded value checks). Workers
still need the course's code (``autograder``, ``tensorcourse``) and environment: they run the
grading image, ideally with the repository at the same path (see autograder/README.md).

Faults:

- a worker that dies mid-notebook: the scheduler reschedules its task on another worker (Dask's
  own bookkeeping); after ``distributed.scheduler.allowed-failures`` deaths (default 3) the task
  raises ``KilledWorker`` and the notebook is recorded **not graded** (never a 0, never retried
  forever);
- a worker without the sandbox refuses the task (:class:`WorkerUnsandboxed`): that notebook is
  not graded, with the reason. Workers connected at the start are probed first: if any lacks
  the sandbox, nothing is sent (a :class:`~autograder.course.CourseError` naming them);
- losing the scheduler: what was recorded stays recorded (results/, the gradebook); the rest is
  "not graded" and ``--retry-failed`` grades only that (:class:`~autograder.course.CourseError`
  says so, with counts and names).

At most as many notebooks are in flight as the cluster has worker threads (re-read as workers
come and go): the scheduler holds a window of jobs, not the class, and a worker never has a
second notebook waiting behind the one it grades (unless a death just moved one there), so a
worker's death is blamed on the notebook it was grading, not on others queued behind it.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable
from typing import Any

from ..course import REPO, SOLUTIONS, CourseError
from . import unit
from .unit import Job, Outcome, not_graded

log = logging.getLogger("autograder")

CONNECT_TIMEOUT = 30      # seconds to reach the scheduler
WORKER_WAIT = 300         # seconds to wait for a first worker


class WorkerUnsandboxed(RuntimeError):
    """Raised on a worker that cannot sandbox kernels: it never grades without the sandbox."""


def _sandbox_on_worker() -> str | None:
    """On a worker: why it cannot sandbox learners' code, or None (cached per process)."""
    from ..sandbox.launch import unavailable

    return unavailable()


def _grade_on_worker(job: Job) -> Outcome:
    """The task: refuse without the sandbox, hide this machine's own copies, grade."""
    if job.sandboxed:
        reason = _sandbox_on_worker()
        if reason:
            import socket

            raise WorkerUnsandboxed(f"the worker on {socket.gethostname()} lacks the sandbox "
                                    f"({reason}); install bubblewrap in the grading image")
    # The client's folders are hidden already; also this worker's repository and solutions,
    # wherever its copy lives.
    job.hidden = sorted({*job.hidden, str(SOLUTIONS), str(REPO)})
    return unit.grade_notebook(job)


def _with_contents(job: Job) -> Job:
    """The job with the release and solution notebooks inside it (workers need not have them)."""
    from dataclasses import replace
    from pathlib import Path

    return replace(job, release_text=job.release_text or Path(job.release).read_text(encoding="utf-8"),
                   solution_text=job.solution_text or Path(job.solution).read_text(encoding="utf-8"))


def _slots(client: Any) -> int:
    """Worker threads in the cluster now (at least 1: a window of one waits for a worker)."""
    try:
        return max(1, sum(client.nthreads().values()))
    except Exception:  # noqa: BLE001 - the scheduler went away: the caller finds out next
        return 1


def _label(job: Job) -> str:
    return f"{job.student}/{job.assignment}/{job.notebook}"


def run_on_cluster(jobs: list[Job], scheduler: str, progress: Any,
                   record: Callable[[Job, Outcome], None]) -> None:
    """Grade every job on the Dask cluster at ``scheduler``; ``record`` each outcome here."""
    try:
        from distributed import Client, as_completed
        from distributed.client import FutureCancelledError
        from distributed.scheduler import KilledWorker
    except ImportError as err:
        raise CourseError("--scheduler needs Dask's `distributed` on this machine: "
                          "pip install -e '.[grading]' (or -r requirements.txt)") from err
    if not log.isEnabledFor(logging.INFO):
        # Reconnection attempts log tracebacks; what matters is said below, once.
        logging.getLogger("distributed").setLevel(logging.CRITICAL)
    if not jobs:
        return
    try:
        client = Client(scheduler, timeout=CONNECT_TIMEOUT, set_as_default=False)
    except (OSError, TimeoutError) as err:
        raise CourseError(f"cannot reach the Dask scheduler at {scheduler}: {err}") from err
    recorded: list[str] = []
    pending = list(reversed(jobs))   # popped from the end: submitted in sorted order
    try:
        try:
            client.wait_for_workers(1, timeout=WORKER_WAIT)
        except TimeoutError as err:
            raise CourseError(f"the Dask scheduler at {scheduler} has had no worker for "
                              f"{WORKER_WAIT} s; start workers (autograder/README.md).") from err
        if any(job.sandboxed for job in jobs):
            refused = {w: why for w, why in client.run(_sandbox_on_worker).items() if why}
            if refused:
                raise CourseError(
                    "these Dask workers cannot sandbox learners' code, so nothing was sent: "
                    + "; ".join(f"{w}: {why}" for w, why in sorted(refused.items()))
                    + ". The workers lack bubblewrap: run them in the grading image "
                    "(autograder/README.md, 'Grading on a Dask cluster').")
        in_flight: dict[Any, Job] = {}
        numbers = itertools.count()
        texts: dict[tuple[str, str], tuple[str, str]] = {}

        def submit_more() -> list[Any]:
            new = []
            while pending and len(in_flight) < _slots(client):
                job = pending.pop()
                key = (job.release, job.solution)
                if key not in texts:
                    full = _with_contents(job)
                    texts[key] = (full.release_text, full.solution_text)
                job.release_text, job.solution_text = texts[key]
                # pure=False: two equal submissions are still two notebooks (two records).
                future = client.submit(_grade_on_worker, job, pure=False,
                                       key=f"grade-notebook-{next(numbers)}")
                in_flight[future] = job
                new.append(future)
            return new

        queue = as_completed(submit_more(), loop=client.loop)
        for future in queue:
            job = in_flight.pop(future)
            try:
                outcome = future.result()
            except KilledWorker as err:
                outcome = not_graded(job.student, job.assignment, job.notebook,
                                     "the Dask workers grading it died every time it was tried "
                                     f"({str(err).split('.')[0]})")
            except FutureCancelledError as err:
                if "connection-lost" in str(err) or client.status != "running":
                    raise _Lost(job) from err
                outcome = not_graded(job.student, job.assignment, job.notebook,
                                     f"cancelled on the cluster ({err})")
            except Exception as err:  # noqa: BLE001 - a worker's error must not stop the class
                if client.status != "running":
                    raise _Lost(job) from err
                outcome = not_graded(job.student, job.assignment, job.notebook,
                                     f"grader error on a Dask worker: {type(err).__name__}: "
                                     f"{str(err)[:300]}")
            job.release_text = job.solution_text = ""   # not kept for every job recorded
            future.release()
            for new in submit_more():        # keep the workers busy while this one is written
                queue.add(new)
            record(job, outcome)
            recorded.append(_label(job))
            progress.step(f"{job.student}/{job.assignment}")
    except _Lost as lost:
        missing = [_label(j) for j in jobs if _label(j) not in set(recorded)]
        raise CourseError(
            f"lost the connection to the Dask scheduler at {scheduler} (while waiting for "
            f"{_label(lost.job)}). {len(recorded)} of {len(jobs)} notebook(s) were graded and "
            f"recorded (results/ and the gradebook hold them); {len(missing)} were not: "
            f"{', '.join(missing[:10])}{' ...' if len(missing) > 10 else ''}. They are "
            "'not graded', never scored: rerun the same command with --retry-failed to grade "
            "only those.") from None
    finally:
        try:
            client.close(timeout=10)
        except Exception:  # noqa: BLE001 - closing a lost connection may fail; nothing to keep
            pass


class _Lost(Exception):
    def __init__(self, job: Job) -> None:
        super().__init__(_label(job))
        self.job = job

