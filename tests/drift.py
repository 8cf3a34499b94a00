"""The drift check: the whole course on the torch builds learners really have.

    python3 tio.py drift                         # every entry of the matrix, then the report
    python3 tio.py drift --entry colab-2.11      # one entry (its environment is cached)
    python3 tio.py drift --only 01 05            # some notebooks
    python3 tio.py drift --report                # only rewrite the report from saved results
    python3 tio.py drift --list                  # the matrix

CI (`.ci/run`) proves one build, PyTorch's CPU-only wheel. A learner without a GPU usually has
another: Colab's torch, PyPI's CUDA build on a laptop without a driver, or whatever is newest.
Each entry of MATRIX gets its own virtual environment under ``.drift/<entry>/`` (cached: rebuilt
only when its requirements change; ``TIO_DRIFT_HOME`` moves it), with the learner's
requirements (requirements.txt) and that entry's torch and pins. tests/drift_probe.py then runs,
in it, every solution notebook, every exercise's tests against the reference and the wrong
answers, and the student notebooks with the reference answers filled in.

The results of each entry are kept in ``.drift/<entry>/result.json``; the report
(benchmarks/drift-report.md, and benchmarks/drift-report.json for the notebooks' and the site's
"verified on" lines) is written from all of them. PyPI's CUDA builds are about 5 GB an
environment: this is not part of ``.ci/run`` (tests/test_drift.py tests the command itself on
the pinned torch); .github/workflows/drift.yml runs it weekly.

This file runs on the plain python3 that calls tio.py: standard library only.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
import venv
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from tio import CPU_INDEX, _project, _reachable  # noqa: E402  (one rule for requirement lines)

HOME = Path(os.environ.get("TIO_DRIFT_HOME", ROOT / ".drift"))
REPORT_MD = ROOT / "benchmarks" / "drift-report.md"
REPORT_JSON = ROOT / "benchmarks" / "drift-report.json"
# The learner's requirements the drift check leaves out: the front end (JupyterLab, the
# notebook server, nbgrader's Validate) never changes what a kernel computes, and its
# pins can clash with an entry's older ipykernel/traitlets. The browser tests cover it.
FRONT_END = ("jupyterlab", "notebook", "nbgrader", "nbconvert")
PROBE_EXTRAS = ["pytest"]  # tests/probes.py's probe notebook, reused


@dataclass(frozen=True)
class Entry:
    """One build a learner may have."""

    name: str
    who: str                     # where a learner gets it
    torch: str                   # the torch requirement
    pins: dict[str, str] = field(default_factory=dict)  # requirement overrides, by project
    index: str = "pypi"          # "pypi": PyPI's default builds, this machine's pip config off;
                                 # "cpu": PyTorch's CPU-only wheel index added; "native": PyPI's
                                 # build for the OS it runs on (no Triton off Linux); "nightly"
    allowed_to_fail: bool = False

    def requirements(self, learner: str) -> list[str]:
        """requirements.txt for this entry: its torch and pins, the front end left out."""
        lines = []
        for line in learner.splitlines():
            name = _project(line)
            if not name or name in FRONT_END or name == "torch":
                continue
            if name == "triton" and self.index in ("pypi", "native"):
                continue  # PyPI's torch on Linux requires its own Triton; none elsewhere
            lines.append(self.pins.get(name, line))
        lines += [pin for name, pin in self.pins.items() if not any(_project(x) == name for x in lines)]
        return [self.torch, *lines, *PROBE_EXTRAS]


# Colab's pins: googlecolab/backend-info, pip-freeze.txt of 2026-08 (ipywidgets 7.7.1,
# ipykernel 6.17.1, traitlets 5.7.1, matplotlib 3.10.0, numpy 2.1.3, nbclient 0.10.4). Its CPU
# runtime lists torch 2.11.0+cpu there; a GPU runtime without a GPU attached (and a laptop)
# has PyPI's CUDA build, the harder case, which this entry takes.
COLAB_PINS = {"ipywidgets": "ipywidgets==7.7.1", "ipykernel": "ipykernel==6.17.1",
              "traitlets": "traitlets==5.7.1", "matplotlib": "matplotlib==3.10.0",
              "numpy": "numpy==2.1.3", "nbclient": "nbclient==0.10.4"}

MATRIX = [
    Entry("cpu-2.13", "CI and Binder: PyTorch's CPU-only wheel", "torch==2.13.0+cpu", index="cpu"),
    Entry("laptop-2.13-cuda", "a Linux laptop's `pip install torch`: PyPI's CUDA build, no driver",
          "torch==2.13.0"),
    Entry("colab-2.11", "Colab: torch 2.11 (a CUDA build, no GPU) with Colab's ipywidgets 7.7 pins",
          "torch==2.11.0", pins=COLAB_PINS),
    Entry("pypi-2.14", "their own environment a release ago: PyPI's torch 2.14.1 (a CUDA build, no "
          "driver)", "torch==2.14.1"),
    Entry("newest", "their own environment: the newest torch on PyPI", "torch"),
    Entry("native-2.13", "macOS on Apple silicon (MPS) or Windows: PyPI's torch 2.13 there "
          "(the weekly workflow's macOS and Windows runners)", "torch==2.13.0", index="native"),
    Entry("nightly", "PyTorch's nightly (the weekly workflow only; allowed to fail)",
          "torch --pre --index-url https://download.pytorch.org/whl/nightly/cpu",
          index="nightly", allowed_to_fail=True),
]
# What `tio.py drift` runs on Linux by default; pypi-2.14 (a release ago), native-2.13 and nightly
# are the workflow's (pypi-2.14 by hand too: `--entry pypi-2.14`).
DEFAULT_ENTRIES = ["cpu-2.13", "laptop-2.13-cuda", "colab-2.11", "newest"]


def _python(env: Path) -> Path:
    return env / ("Scripts" if os.name == "nt" else "bin") / ("python.exe" if os.name == "nt" else "python")


def _pip_environ(entry: Entry) -> dict[str, str]:
    environ = dict(os.environ)
    if entry.index in ("pypi", "nightly", "native"):
        # This machine's pip configuration may point at local wheels (a CPU-only torch) or cap
        # versions; a learner's pip has neither.
        environ.pop("PIP_FIND_LINKS", None)
        environ["PIP_CONFIG_FILE"] = os.devnull
    return environ


def build(entry: Entry) -> Path:
    """The entry's environment, (re)installed when its requirements changed."""
    folder = HOME / entry.name
    env = folder / "venv"
    requirements = entry.requirements((ROOT / "requirements.txt").read_text())
    stamp = hashlib.sha256(("\n".join(requirements) + entry.index).encode()).hexdigest()
    stamp_file = env / ".tio-drift"
    if stamp_file.exists() and stamp_file.read_text() == stamp:
        return env
    if env.exists():
        shutil.rmtree(env)
    folder.mkdir(parents=True, exist_ok=True)
    print(f"[{entry.name}] building {env} ...", flush=True)
    venv.create(env, with_pip=True)
    pip = [str(_python(env)), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    req_file = folder / "requirements.txt"
    torch_line, rest = requirements[0], requirements[1:]
    req_file.write_text("\n".join(rest) + "\n")
    environ = _pip_environ(entry)
    subprocess.run(pip + ["--upgrade", "pip"], check=True, env=environ)
    # PyTorch's CPU index; where it is unreachable, a local wheel folder may still serve.
    extra = ["--extra-index-url", CPU_INDEX] if entry.index == "cpu" and _reachable(CPU_INDEX) else []
    # torch first, alone: its own options (a nightly index) and its dependencies decide
    # Triton; then the rest, which must not move torch.
    subprocess.run(pip + extra + torch_line.split(), check=True, env=environ)
    subprocess.run(pip + extra + ["-r", str(req_file)], check=True, env=environ)
    subprocess.run(pip + ["--no-deps", "-e", str(ROOT)], check=True, env=environ)
    stamp_file.write_text(stamp)
    return env


def run(entry: Entry, only: list[str]) -> dict:
    """Build the entry's environment and run the probe in it; the result is saved."""
    start = time.perf_counter()
    result_file = HOME / entry.name / "result.json"
    try:
        env = build(entry)
    except subprocess.CalledProcessError as err:
        result = {"entry": entry.name, "build_error": f"installing failed: {err}"}
    else:
        partial = HOME / entry.name / "partial.json"
        args = [str(_python(env)), str(ROOT / "tests" / "drift_probe.py"), "--output", str(partial)]
        if only:
            args += ["--only", *only]
        print(f"[{entry.name}] + {' '.join(args)}", flush=True)
        environ = dict(os.environ)
        environ.pop("TENSORCOURSE_DEVICE", None)
        environ.pop("PYTHONPATH", None)
        proc = subprocess.run(args, cwd=ROOT, env=environ)
        result = json.loads(partial.read_text()) if partial.exists() else {}
        if proc.returncode != 0:
            result["probe_error"] = f"the probe exited with {proc.returncode}"
        result["entry"] = entry.name
        if only and result_file.exists():  # a partial run updates the saved notebooks only
            saved = json.loads(result_file.read_text())
            saved["notebooks"].update(result.get("notebooks", {}))
            saved["environment"] = result.get("environment", saved.get("environment"))
            result = saved
    result["seconds"] = round(time.perf_counter() - start)
    result["date"] = dt.date.today().isoformat()
    result_file.parent.mkdir(parents=True, exist_ok=True)
    result_file.write_text(json.dumps(result, indent=1))
    return result


# ---- the report -----------------------------------------------------------------------

def entry_ok(result: dict, assignment: str) -> bool:
    runs = result.get("notebooks", {}).get(assignment)
    return bool(runs) and all(r["ok"] for r in runs.values())


def _cell(run: dict) -> str:
    if run["ok"]:
        return f"pass ({run['seconds']:.0f} s)"
    failure = run.get("failure")
    wrongly = run.get("accepted_wrongly") or []
    parts = []
    if wrongly:
        parts.append(f"accepted {len(wrongly)} wrong answer(s): " + "; ".join(wrongly[:3]))
    if failure:
        claim = failure["claim"].replace("|", "\\|")[:120]
        error = failure["error"].replace("|", "\\|").replace("\n", " ")[:160]
        parts.append(f"cell {failure['cell']}: `{claim}` → {error}")
    return "**FAIL** " + "; ".join(parts)


def _verified_text(versions: list[str]) -> str:
    return ", ".join(versions)


def summary(results: list[dict]) -> dict:
    """What the notebooks and the site show: per assignment, the builds it passed on."""
    per_notebook: dict[str, list[str]] = {}
    builds = []
    for result in results:
        env = result.get("environment")
        if not env:
            continue
        build_name = _build_name(env)
        builds.append({"entry": result.get("column", result["entry"]), "build": build_name,
                       "date": result.get("date")})
        for assignment in sorted(result.get("notebooks", {})):
            if entry_ok(result, assignment):
                per_notebook.setdefault(assignment, []).append(build_name)
    dates = sorted(b["date"] for b in builds if b["date"])
    return {"date": dates[-1] if dates else None, "builds": builds, "verified": per_notebook}


def _build_name(env: dict) -> str:
    kind = "CPU-only" if not env.get("cuda_build") else f"CUDA {env['cuda_build']} build"
    if env.get("accelerator"):
        kind += f", {env['accelerator']}"
    elif env.get("cuda_build"):
        kind += ", no GPU"
    return f"torch {env['torch'].split('+')[0]} ({kind})"


def _run_seconds(result: dict) -> float:
    """The notebooks' measured run time in ``result``, all runs added up."""
    return sum(run.get("seconds", 0) for runs in result.get("notebooks", {}).values()
               for run in runs.values())


def write_report(results: list[dict], md: Path = REPORT_MD, js: Path = REPORT_JSON) -> None:
    """The report from saved results; each is a column, named by its folder under .drift/
    (the entry, or entry-OS where the workflow ran one entry on several runners)."""
    entries = {e.name: e for e in MATRIX}
    results = sorted(results, key=lambda r: ([e.name for e in MATRIX].index(r["entry"])
                                             if r["entry"] in entries else 99, r["column"]))
    assignments = sorted({a for r in results for a in r.get("notebooks", {})})
    lines = ["# Drift report: the course on the torch builds learners have", "",
             "Written by `python3 tio.py drift` (tests/drift.py): do not edit by hand. Each column is a",
             "fresh virtual environment on a machine without a GPU; in it every solution notebook runs",
             "top to bottom (`solution`), every exercise's tests run against the reference answer and",
             "against each wrong answer of `tests/wrong_answers/` and the stub (`wrong answers`: the",
             "right ones must pass, every wrong one fail), and every student notebook runs with the",
             "reference answers filled in (`student`). A failure shows its first failing cell, the",
             "line that raised and the error. Times are the notebooks' own, as measured where the",
             "entry ran (the environment's install not included).",
             "", "## Entries", "",
             "| entry | where learners get it | torch | Python | ipywidgets | numpy | Triton | date "
             "| run time |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        e = entries.get(r["entry"])
        env = r.get("environment") or {}
        flag = " (allowed to fail)" if e and e.allowed_to_fail else ""
        lines.append(f"| `{r['column']}`{flag} | {e.who if e else '?'} | "
                     f"{_build_name(env) if env else r.get('build_error', '?')} | {env.get('python', '?')} | "
                     f"{env.get('ipywidgets', '?')} | {env.get('numpy', '?')} | "
                     f"{env.get('triton') or 'none'} | {r.get('date', '?')} | "
                     f"{_run_seconds(r) / 60:.0f} min |")
    lines += ["", "## Summary", "", "| notebook | " + " | ".join(f"`{r['column']}`" for r in results) + " |",
              "|---|" + "---|" * len(results)]
    for a in assignments:
        cells = ["not run" if not r.get("notebooks", {}).get(a) else
                 "pass" if entry_ok(r, a) else "**FAIL**" for r in results]
        lines.append(f"| {a} | " + " | ".join(cells) + " |")
    for r in results:
        lines += ["", f"## `{r['column']}`", ""]
        for key in ("build_error", "probe_error"):
            if key in r:
                lines.append(f"**{r[key]}**\n")
        lines += ["| notebook | solution | wrong answers | student |", "|---|---|---|---|"]
        for a in assignments:
            runs = r.get("notebooks", {}).get(a, {})
            cells = [_cell(runs[k]) if k in runs else "not run"
                     for k in ("solution", "wrong_answers", "student")]
            if "wrong_answers" in runs and runs["wrong_answers"]["ok"]:
                w = runs["wrong_answers"]
                cells[1] = (f"pass: {w['wrong_answers']} wrong answers and {w['stubs']} stubs "
                            f"rejected ({w['seconds']:.0f} s)")
            lines.append(f"| {a} | " + " | ".join(cells) + " |")
    md.write_text("\n".join(lines) + "\n")
    js.write_text(json.dumps(summary(results), indent=1, sort_keys=True) + "\n")


def saved_results() -> list[dict]:
    """Every result under .drift/ (HOME), named by its folder."""
    out = []
    for path in sorted(HOME.glob("*/result.json")):
        result = json.loads(path.read_text())
        result["column"] = path.parent.name
        out.append(result)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 tio.py drift",
                                     description="Run the course on the torch builds learners have.")
    names = [e.name for e in MATRIX]
    parser.add_argument("--entry", nargs="+", default=None, metavar="NAME",
                        help=f"entries to run (default: {' '.join(DEFAULT_ENTRIES)}; all: {' '.join(names)})")
    parser.add_argument("--only", nargs="+", default=[], metavar="NN", help="only these notebooks")
    parser.add_argument("--report", action="store_true",
                        help="only rewrite the report from the results saved under .drift/")
    parser.add_argument("--list", action="store_true", help="print the matrix and exit")
    args = parser.parse_args(argv)
    if args.list:
        for e in MATRIX:
            print(f"{e.name:18} {e.torch:20} {e.who}")
        return 0
    chosen = args.entry or DEFAULT_ENTRIES
    unknown = [n for n in chosen if n not in names]
    if unknown:
        parser.error(f"unknown entry {', '.join(unknown)}: the entries are {', '.join(names)} "
                     "(python3 tio.py drift --list)")
    failed = []
    if not args.report:
        for entry in (e for e in MATRIX if e.name in chosen):
            result = run(entry, args.only)
            bad = [a for a in result.get("notebooks", {}) if not entry_ok(result, a)]
            if bad or "build_error" in result or "probe_error" in result:
                if not entry.allowed_to_fail:
                    failed.append(entry.name)
                why = ", ".join(bad) or result.get("build_error") or result.get("probe_error")
                print(f"[{entry.name}] FAILED: {why}")
            else:
                print(f"[{entry.name}] every notebook passed ({result['seconds']} s)")
    results = saved_results()
    write_report(results)
    print(f"Report: {REPORT_MD.relative_to(ROOT)} "
          f"({', '.join(r['column'] for r in results) or 'no results yet'})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
