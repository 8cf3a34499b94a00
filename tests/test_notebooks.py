"""Every solution notebook runs top to bottom on the CPU: no error, no stderr, within its budget.

Every behavioural claim in a notebook is an assert in a code cell, so this test is also
what proves the course's statements about PyTorch are still true on the installed torch.
"""

from __future__ import annotations

import sys
import time

import pytest
import torch

from coursefiles import REPO, assignments, solution_path
from nbrun import run_notebook

sys.path.insert(0, str(REPO))
from website.build import store_executed  # noqa: E402

# Seconds each notebook may take on a 2-core CPU (kernel start included). Issue-stated
# budgets: 01 under 20 s; 02-04 and 07-09 under 30 s (60 s for one that compiles with
# inductor); 05-06 and 10-12 under 60 s (a cold torch.compile included).
BUDGET = {"01": 20, "02": 30, "03": 30, "04": 30, "05": 60, "06": 60, "07": 30, "08": 30, "09": 30}
DEFAULT_BUDGET = 60
# Without a GPU the notebooks pick the device themselves, as a learner's laptop, Colab without
# a GPU or `tio.py gpu-check --allow-cpu` has them do (tensorcourse.device's own choice, the path
# the GPU check's CPU run took in stage 3 before, every notebook a fifth time); with one, this
# test is the CPU's, and `tio.py gpu-check` is the GPU's.
CPU_ENV = {"MPLBACKEND": "agg"} if not torch.cuda.is_available() else {
    "MPLBACKEND": "agg", "TENSORCOURSE_DEVICE": "cpu"}


@pytest.mark.slow
@pytest.mark.parametrize("assignment", assignments())
def test_solution_notebook_runs_clean_on_cpu(assignment, tmp_path):
    start = time.perf_counter()
    ran = run_notebook(solution_path(assignment), timeout=120, cwd=tmp_path, env=CPU_ENV)
    elapsed = time.perf_counter() - start
    assert not ran.errors, "cells failed:\n" + "\n\n".join(ran.errors)
    assert not ran.stderr, "cells wrote to stderr (nbgrader scores such test cells 0):\n" + \
        "\n".join(ran.stderr)
    budget = BUDGET.get(assignment[:2], DEFAULT_BUDGET)
    assert elapsed < budget, f"{assignment} took {elapsed:.1f} s (budget {budget} s)"
    # The website shows these outputs: keep them so `tio.py site` need not run it again; not
    # from the ipywidgets 7.7 stage, since the site is built with the pinned ipywidgets.
    if _ipywidgets_major() >= 8:
        store_executed(assignment, ran.nb)


def _ipywidgets_major() -> int:
    import ipywidgets

    return int(ipywidgets.__version__.split(".")[0])
