"""What the drift check runs inside one environment (tests/drift.py builds it): the course on
the torch installed *here*, as a learner meets it, written to a JSON file.

For each assignment, three runs, each in a fresh kernel:

* ``solution``: the solution notebook top to bottom, the device left to ``tc.setup()`` (no
  ``TENSORCOURSE_DEVICE``): a CUDA build without a driver must take its CPU path by itself.
* ``wrong_answers``: every exercise's whole test cell (visible and hidden) against the
  reference answer and against each wrong answer of ``tests/wrong_answers/`` and the stub
  (the probe notebook of tests/probes.py): every wrong one must fail, every
  right one pass.
* ``student``: the student notebook (``notebooks/``) with the reference answers filled in:
  a correct learner never fails a visible test.

A failure is reported as its first failing cell: the index, the claim (the line of the
cell that raised, as IPython's traceback shows it) and the error's last line.

    python tests/drift_probe.py --output result.json [--only 01 05]
"""

from __future__ import annotations

import argparse
import json
import platform
import re
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]

from coursefiles import (  # noqa: E402
    assignments,
    read,
    release_path,
    solution_answers,
    solution_path,
    with_replacements,
)
from nbrun import run_notebook  # noqa: E402

TIMEOUT = 300  # seconds a cell may run: a loaded machine, a cold torch.compile
ENV = {"MPLBACKEND": "agg", "TENSORCOURSE_DEVICE": ""}
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def claim_of(traceback: list[str], source: str) -> str:
    """The line of the cell that raised: the ``--->`` line of the cell's own frame."""
    text = _ANSI.sub("", "\n".join(traceback))
    for frame in re.split(r"\n(?=Cell In\[|File )", text):
        if frame.startswith("Cell In["):
            arrows = [line for line in frame.splitlines() if re.match(r"\s*-+>\s*\d+", line)]
            if arrows:
                return re.sub(r"^\s*-+>\s*\d+\s*", "", arrows[0]).strip()
    lines = [line.strip() for line in source.splitlines() if line.strip()]
    return lines[0] if lines else ""


def first_failure(nb, *, skip: set[int] = frozenset()) -> dict | None:
    """The first cell (not in ``skip``) with an error or a stderr stream, or None."""
    failures = all_failures(nb, skip=skip)
    return failures[0] if failures else None


def all_failures(nb, *, skip: set[int] = frozenset()) -> list[dict]:
    """Every cell (not in ``skip``) with an error or a stderr stream, the first output of each.
    The report shows the first; the JSON keeps the rest (``later``) for whoever fixes them."""
    found = []
    for index, cell in enumerate(nb.cells):
        if index in skip:
            continue
        for out in cell.get("outputs", []):
            if out.output_type == "error":
                found.append({"cell": index, "claim": claim_of(out.traceback, cell.source),
                              "error": f"{out.ename}: {(out.evalue.strip().splitlines() or [''])[-1]}"})
                break
            if out.output_type == "stream" and out.name == "stderr":
                found.append({"cell": index, "claim": claim_of([], cell.source),
                              "error": "stderr: " + out.text.strip()[:300]})
                break
    return found


def _timed(path: Path, workdir: Path):
    start = time.perf_counter()
    ran = run_notebook(path, timeout=TIMEOUT, cwd=workdir, env=ENV)
    return ran, round(time.perf_counter() - start, 1)


def probe_solution(assignment: str, workdir: Path) -> dict:
    ran, seconds = _timed(solution_path(assignment), workdir)
    failures = all_failures(ran.nb)
    return {"ok": not failures, "seconds": seconds, "failure": failures[0] if failures else None,
            "later": failures[1:]}


def probe_wrong_answers(assignment: str, workdir: Path) -> dict:
    import nbformat

    from probes import probe_notebook

    probe = probe_notebook(assignment)
    nb, probes = probe.nb, probe.probes
    path = workdir / f"probe-{assignment}.ipynb"
    nbformat.write(nb, path)
    ran, seconds = _timed(path, workdir)

    def failed(i: int) -> bool:
        return any(o.output_type == "error" for o in ran.nb.cells[i].outputs)

    accepted = [label for i, (label, _) in probes.items() if not failed(i)]
    # Everything else (the solution's cells and the right answers' tests after each probe)
    # must run clean: the first that does not is reported like a solution failure. A wrong
    # answer's own cell (just before its test) may raise: the stub does.
    failures = all_failures(ran.nb, skip=set(probes) | {i - 1 for i in probes})
    failure = failures[0] if failures else None
    return {"ok": not accepted and failure is None, "seconds": seconds, "later": failures[1:],
            "wrong_answers": len([p for p in probes.values() if p[1]]),
            "stubs": len([p for p in probes.values() if not p[1]]),
            "accepted_wrongly": accepted, "failure": failure}


def probe_student(assignment: str, workdir: Path) -> dict:
    import nbformat

    nb = with_replacements(read(release_path(assignment)), solution_answers(assignment))
    path = workdir / f"student-{assignment}.ipynb"
    nbformat.write(nb, path)
    ran, seconds = _timed(path, workdir)
    failures = all_failures(ran.nb)
    return {"ok": not failures, "seconds": seconds, "failure": failures[0] if failures else None,
            "later": failures[1:]}


def environment() -> dict:
    import ipywidgets
    import matplotlib
    import numpy
    import torch

    try:
        import triton
        triton_version = triton.__version__
    except Exception:  # Triton ships Linux wheels only; notebook 12 says what it skips
        triton_version = None
    accelerator = (torch.accelerator.current_accelerator()
                   if hasattr(torch, "accelerator") and torch.accelerator.is_available() else None)
    return {"torch": torch.__version__, "cuda_build": torch.version.cuda,
            "accelerator": str(accelerator) if accelerator else None,
            "python": platform.python_version(), "platform": f"{sys.platform}-{platform.machine()}",
            "ipywidgets": ipywidgets.__version__, "numpy": numpy.__version__,
            "matplotlib": matplotlib.__version__, "triton": triton_version}


PROBES = {"solution": probe_solution, "wrong_answers": probe_wrong_answers,
          "student": probe_student}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--output", type=Path, required=True, help="the JSON file to write")
    parser.add_argument("--only", nargs="*", default=[], metavar="NN",
                        help="assignments whose name starts with these (default: all)")
    parser.add_argument("--runs", nargs="*", default=list(PROBES), choices=list(PROBES))
    parser.add_argument("--workdir", type=Path, default=None,
                        help="scratch folder for the notebooks' files (default: a temp folder)")
    args = parser.parse_args(argv)
    import tempfile

    chosen = [a for a in assignments() if not args.only or a[:2] in args.only or a in args.only]
    if not chosen:
        parser.error(f"no assignment matches --only {' '.join(args.only)}; "
                     f"the assignments are {', '.join(a[:2] for a in assignments())}")
    result = {"environment": environment(), "notebooks": {}}
    with tempfile.TemporaryDirectory(prefix="tio-drift-") as scratch:
        for assignment in chosen:
            result["notebooks"][assignment] = {}
            for run in args.runs:
                workdir = Path(args.workdir or scratch) / f"{assignment}-{run}"
                workdir.mkdir(parents=True, exist_ok=True)
                outcome = PROBES[run](assignment, workdir)
                result["notebooks"][assignment][run] = outcome
                print(f"{assignment} {run}: {'ok' if outcome['ok'] else 'FAILED'} "
                      f"({outcome['seconds']} s)", flush=True)
                args.output.write_text(json.dumps(result, indent=1))  # partial results survive
    return 0


if __name__ == "__main__":
    sys.exit(main())
