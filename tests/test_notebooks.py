"""Every solution notebook runs top to bottom on the CPU: no error, no stderr, within its budget;
and its hidden tests reject plausible wrong answers, not only the untouched stub, and say why.

Every behavioural claim in a notebook is an assert in a code cell, so this test is also
what proves the course's statements about PyTorch are still true on the installed torch.

Both come from one run per notebook, in one kernel: the probe notebook (tests/probes.py), the
solution with the stub and every wrong variant from ``tests/wrong_answers/`` tried after each
exercise, each followed by the exercise's full test cell (visible + hidden), which must fail
with a message whose last line names the variant's misconception
(``tensorcourse.misconceptions``), and by the right answer again. (The solution ran a second
time on its own before; the real nbgrader pipeline is exercised in test_pipeline.py.)
"""

from __future__ import annotations

import sys
import time

import nbformat
import pytest
import torch

from coursefiles import REPO, assignments, exercises, read, solution_path
from nbrun import run_notebook
from probes import probe_notebook, seconds_in, solution_executed
from tensorcourse.misconceptions import named_in

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


@pytest.fixture(scope="module")
def probed(tmp_path_factory):
    """``probed(assignment)``: the probe notebook's run, once per notebook for both tests here;
    returns (probe, executed notebook, wall seconds the solution's own cells took, kernel start
    included)."""
    runs: dict = {}

    def run(assignment: str):
        if assignment not in runs:
            probe = probe_notebook(assignment)
            work = tmp_path_factory.mktemp(f"probe-{assignment[:2]}")
            path = work / "probe.ipynb"
            nbformat.write(probe.nb, path)
            start = time.perf_counter()
            ran = run_notebook(path, timeout=120, cwd=work, env=CPU_ENV)
            elapsed = time.perf_counter() - start
            added = sum(seconds_in(c) for i, c in enumerate(ran.nb.cells) if i not in probe.origin)
            runs[assignment] = (probe, ran.nb, elapsed - added)
        return runs[assignment]

    return run


def _outputs(nb, indices, kind):
    return [(i, o) for i in sorted(indices) for o in nb.cells[i].get("outputs", [])
            if o.output_type == kind]


@pytest.mark.slow
@pytest.mark.parametrize("assignment", assignments())
def test_solution_notebook_runs_clean_on_cpu(assignment, probed):
    probe, nb, seconds = probed(assignment)
    own = set(probe.origin) | probe.restores    # the solution's cells, and its answers put back
    errors = [f"cell {probe.origin.get(i, f'{i} (a restored answer)')}: {o.ename}: {o.evalue}\n"
              + "\n".join(o.traceback)[-1500:] for i, o in _outputs(nb, own, "error")]
    assert not errors, "cells failed:\n" + "\n\n".join(errors)
    stderr = [f"cell {probe.origin.get(i, i)}: {o.text}" for i, o in _outputs(nb, own, "stream")
              if o.name == "stderr"]
    assert not stderr, "cells wrote to stderr (nbgrader scores such test cells 0):\n" + \
        "\n".join(stderr)
    budget = BUDGET.get(assignment[:2], DEFAULT_BUDGET)
    assert seconds < budget, f"{assignment} took {seconds:.1f} s (budget {budget} s)"
    # The website shows these outputs: keep them so `tio.py site` need not run it again; not
    # from the ipywidgets 7.7 stage, since the site is built with the pinned ipywidgets.
    if _ipywidgets_major() >= 8:
        store_executed(assignment, solution_executed(assignment, probe, nb))


@pytest.mark.slow
@pytest.mark.parametrize("assignment", assignments())
def test_hidden_tests_reject_wrong_variants(assignment, probed):
    probe, nb, _ = probed(assignment)
    passed_wrongly = [label for index, (label, _) in probe.probes.items()
                      if not any(o.output_type == "error" for o in nb.cells[index].outputs)]
    assert not passed_wrongly, "test cells accepted wrong answers:\n  " + "\n  ".join(passed_wrongly)
    # ... and the check that rejected each names the misconception the wrong answer embodies.
    misnamed = []
    for index, (label, misconception) in probe.probes.items():
        if not misconception:
            continue
        named = [named_in(o.evalue) for o in nb.cells[index].outputs if o.output_type == "error"]
        if named != [misconception]:
            last = [o.evalue.rstrip().splitlines()[-1:] for o in nb.cells[index].outputs
                    if o.output_type == "error"]
            misnamed.append(f"{label}: expected [{misconception}], the message ends {last}")
    assert not misnamed, "rejections that do not name the wrong answer's misconception:\n  " \
        + "\n  ".join(misnamed)
    # The right answers' tests pass (before the probes; the restored answers run clean, above).
    sol = read(solution_path(assignment))
    tests = {t for _, t in exercises(sol)}
    failing_right = [probe.origin[i] for i, _ in _outputs(nb, probe.origin, "error")
                     if probe.origin[i] in tests]
    assert not failing_right, f"a correct solution failed its tests at cells {failing_right}"


def _ipywidgets_major() -> int:
    import ipywidgets

    return int(ipywidgets.__version__.split(".")[0])
