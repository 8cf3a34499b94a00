"""Preloaded into the Dask workers of tests/test_grading_cluster.py (``dask worker --preload``).

Logs every notebook a worker starts (``pid student``) to ``$TIO_CLUSTER_TEST_LOG``, so the test
can kill the worker that is grading and see the notebook started again elsewhere; and makes the
student ``zz-killer`` kill whichever worker process grades it (``os._exit``), standing in for a
notebook that keeps killing workers (Dask's ``allowed-failures`` must stop retrying it).
"""

from __future__ import annotations

import os

from autograder.pipeline import unit

# Dask may run a preload file more than once in a process: wrap the real function only.
_grade = getattr(unit, "_tio_unwrapped", unit.grade_notebook)
unit._tio_unwrapped = _grade


def _logged(job):
    with open(os.environ["TIO_CLUSTER_TEST_LOG"], "a") as fh:
        fh.write(f"{os.getpid()} {job.student}\n")
    if job.student == "zz-killer":
        os._exit(1)
    return _grade(job)


unit.grade_notebook = _logged
