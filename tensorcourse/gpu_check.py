"""The GPU check: run every solution notebook on this machine's GPU and write a report.

    python3 tio.py gpu-check                      # on a GPU machine with the course's environment
    python3 tio.py gpu-check --allow-cpu          # same path on the CPU (CI tests the command)
    python3 tio.py gpu-check --bundle DIR         # an offline folder for a machine without internet

Every ``device.type == "cuda"`` branch in the course runs only where a GPU is. This
command runs each solution notebook top to bottom on the torch already installed
(GPU images ship their own; nothing here installs torch), with the GPU chosen
(``TENSORCOURSE_DEVICE`` is removed from the kernel's environment), and writes
``report.md`` and ``report.json``: per notebook pass/fail, the first failing cell
with its error, wall time; the machine (GPU, driver, torch, CUDA); the figures the
GPU demos measure, each labelled. Every ``tc.measure`` a notebook makes is
collected too (:func:`tensorcourse.timing.recorded`), so a demo's numbers land in the
report without the notebook knowing.

``--bundle DIR`` writes a self-contained folder for a machine that has a GPU and
torch but no internet: this package, the solution notebooks, and wheels for the
pure-Python (and small binary) packages a bare CUDA image lacks (nbclient,
nbformat, ipykernel, ipywidgets and what they need) for a chosen Python and
platform, plus ``run.py``, which unpacks the wheels into a private folder (no pip
needed) and runs the check. torch, numpy and matplotlib come from the machine.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
# What the kernel needs beyond torch/numpy/matplotlib, pinned like requirements.txt.
BUNDLE_PACKAGES = ("nbclient", "nbformat", "ipykernel", "ipywidgets")
# Provided by the GPU machine, never bundled (triton comes with CUDA builds of torch).
FROM_MACHINE = ("torch", "numpy", "matplotlib", "triton")
DEFAULT_PLATFORMS = ("manylinux_2_28_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64")
BUNDLE_TARGET_BYTES = 40 * 1024 * 1024
DEFAULT_CELL_TIMEOUT = 600
EXIT_NO_GPU = 3


class CheckError(Exception):
    """A problem the user can fix; the message says how (printed without a traceback)."""


# --------------------------------------------------------------------------- the machine


def machine_facts() -> dict[str, Any]:
    """Python, torch, CUDA, GPU and driver: what the report's numbers were measured on."""
    import torch

    facts: dict[str, Any] = {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "torch": torch.__version__,
        "cuda_runtime": torch.version.cuda,
        "cuda_available": torch.cuda.is_available(),
        "gpus": [],
        "driver": None,
    }
    try:
        import triton

        facts["triton"] = triton.__version__
    except Exception:  # noqa: BLE001 - absent or broken: the report says so
        facts["triton"] = None
    if torch.cuda.is_available():
        for i in range(torch.cuda.device_count()):
            p = torch.cuda.get_device_properties(i)
            facts["gpus"].append({"name": p.name, "capability": f"{p.major}.{p.minor}",
                                  "memory_gib": round(p.total_memory / 2**30, 1)})
        facts["cudnn"] = torch.backends.cudnn.version()
        smi = shutil.which("nvidia-smi")
        if smi:
            out = subprocess.run([smi, "--query-gpu=driver_version", "--format=csv,noheader"],
                                 capture_output=True, text=True, timeout=30)
            facts["driver"] = out.stdout.strip().splitlines()[0] if out.returncode == 0 else None
    return facts


# --------------------------------------------------------------------------- figures


@dataclass
class Figure:
    """One measured number, with what it is. ``value`` is None when skipped (``note`` says why)."""

    label: str
    value: float | None
    unit: str
    what: str
    note: str = ""


def measure_figures(device_type: str) -> list[Figure]:
    """The numbers the course's GPU demos are about, measured here with ``tc.measure``.

    On CUDA: pinned vs pageable host-to-device bandwidth, how much a non_blocking
    copy overlaps a matmul, autocast and torch.compile speed-ups, allocator numbers.
    On the CPU the GPU-only ones are listed as skipped and the rest measured there.
    """
    import torch

    from .timing import measure

    dev = torch.device(device_type)
    figs: list[Figure] = []
    cuda = dev.type == "cuda"
    no_gpu = "skipped: no CUDA device"

    def med(fn: Any, label: str, repeats: int = 7) -> float:
        return measure(fn, device=dev, repeats=repeats, warmup=2, label=label).median

    n_bytes = 256 * 2**20
    if cuda:
        pageable = torch.empty(n_bytes // 4)
        pinned = torch.empty(n_bytes // 4).pin_memory()
        t_pageable = med(lambda: pageable.to(dev), "H2D pageable 256 MiB")
        t_pinned = med(lambda: pinned.to(dev, non_blocking=True), "H2D pinned 256 MiB")
        figs.append(Figure("H2D bandwidth, pageable", n_bytes / t_pageable / 1e9, "GB/s",
                           "copy of 256 MiB from ordinary host memory to the GPU"))
        figs.append(Figure("H2D bandwidth, pinned", n_bytes / t_pinned / 1e9, "GB/s",
                           "the same copy from page-locked memory (non_blocking=True)"))
        a = torch.randn(4096, 4096, device=dev)
        side = torch.cuda.Stream()

        def both() -> None:
            with torch.cuda.stream(side):
                pinned.to(dev, non_blocking=True)
            a @ a
            torch.cuda.current_stream().wait_stream(side)

        t_mm = med(lambda: a @ a, "matmul 4096")
        t_both = med(both, "copy on a side stream + matmul")
        hidden = (t_pinned + t_mm - t_both) / min(t_pinned, t_mm)
        figs.append(Figure("non_blocking overlap", 100 * max(0.0, min(1.0, hidden)), "%",
                           "share of the shorter of (pinned copy, 4096² matmul) hidden when the "
                           "copy runs on a side stream"))
    else:
        for label in ("H2D bandwidth, pageable", "H2D bandwidth, pinned", "non_blocking overlap"):
            figs.append(Figure(label, None, "", "needs a GPU", no_gpu))

    size = 2048 if cuda else 512
    x = torch.randn(size, size, device=dev)
    low = torch.float16 if cuda else torch.bfloat16
    t32 = med(lambda: x @ x, f"matmul {size} float32")

    def amp() -> Any:
        with torch.autocast(dev.type, dtype=low):
            return x @ x

    t16 = med(amp, f"matmul {size} autocast {low}")
    figs.append(Figure(f"autocast speed-up ({str(low).replace('torch.', '')} matmul {size}²)",
                       t32 / t16, "x", "float32 time / autocast time"))

    def chain(v: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.gelu(v * 1.5 + 0.5).sin() * v

    v = torch.randn(4_000_000 if cuda else 1_000_000, device=dev)
    t_eager = med(lambda: chain(v), "pointwise chain, eager")
    try:
        compiled = torch.compile(chain)
        compiled(v)  # compile outside the timing: a one-off cost
        t_comp = med(lambda: compiled(v), "pointwise chain, torch.compile")
        figs.append(Figure("torch.compile speed-up (5 fused pointwise ops)", t_eager / t_comp,
                           "x", "eager time / compiled time"))
    except Exception as err:  # noqa: BLE001 - no C compiler, no triton...: report it
        figs.append(Figure("torch.compile speed-up (5 fused pointwise ops)", None, "x",
                           "eager time / compiled time",
                           f"skipped: torch.compile failed: {type(err).__name__}: {err}"[:300]))
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
        before = torch.cuda.memory_allocated()
        t = torch.empty(1000, device=dev)
        figs.append(Figure("allocator block for 4000 bytes", torch.cuda.memory_allocated() - before,
                           "bytes", "memory_allocated() growth: rounded up to 512-byte blocks"))
        figs.append(Figure("memory_reserved after one small tensor", torch.cuda.memory_reserved(),
                           "bytes", "the caching allocator reserves whole segments (2 MiB)"))
        del t
        figs.append(Figure("max_memory_allocated in this check", torch.cuda.max_memory_allocated(),
                           "bytes", "peak of live tensors during the figures above"))
    else:
        for label in ("allocator block for 4000 bytes", "memory_reserved after one small tensor"):
            figs.append(Figure(label, None, "", "CUDA caching allocator", no_gpu))
    return figs


# --------------------------------------------------------------------------- notebooks


@dataclass
class NotebookResult:
    name: str
    passed: bool
    wall_s: float
    first_error: dict[str, Any] | None = None
    stderr_cells: list[int] = field(default_factory=list)
    timings: list[dict[str, Any]] = field(default_factory=list)


_HARVEST = """
import json as _json
from tensorcourse.timing import recorded as _recorded
with open({path!r}, "w") as _f:
    _json.dump([{{"label": t.label, "median_s": t.median, "device": t.device, "runs": len(t.times)}}
               for t in _recorded()], _f)
"""


def run_notebook(path: Path, *, timeout: int, workdir: Path) -> NotebookResult:
    """Run ``path`` in a fresh kernel with the GPU chosen; never raises for the notebook's errors."""
    import nbformat
    from nbclient.exceptions import CellTimeoutError, DeadKernelError

    from .headless import HeadlessClient

    nb = nbformat.read(path, as_version=4)
    harvest = workdir / f"{path.stem}.timings.json"
    nb.cells.append(nbformat.v4.new_code_cell(_HARVEST.format(path=str(harvest))))
    client = HeadlessClient(nb, timeout=timeout, allow_errors=True, kernel_name="python3",
                            resources={"metadata": {"path": str(workdir)}})
    start = time.perf_counter()
    crashed = None
    try:
        client.execute()
    except (CellTimeoutError, DeadKernelError) as err:
        crashed = f"{type(err).__name__}: {err}"[:500]
    wall = time.perf_counter() - start
    first, stderr_cells = None, []
    for i, cell in enumerate(nb.cells[:-1]):
        for out in cell.get("outputs", []):
            if out.output_type == "error" and first is None:
                first = {"cell": i, "error": f"{out.ename}: {out.evalue}"[:800],
                         "source": cell.source[:400]}
            elif out.output_type == "stream" and out.name == "stderr":
                stderr_cells.append(i)
    if crashed and first is None:
        first = {"cell": None, "error": crashed, "source": ""}
    timings = json.loads(harvest.read_text()) if harvest.exists() else []
    return NotebookResult(path.parent.name, first is None, round(wall, 1), first,
                          sorted(set(stderr_cells)), timings)


def _solution_notebooks(solutions: Path, only: list[str]) -> list[Path]:
    found = sorted(p for p in solutions.glob("*/*.ipynb") if p.stem == p.parent.name)
    if not found:
        raise CheckError(f"no solution notebooks under {solutions} (expected "
                         "NN-name/NN-name.ipynb folders)")
    if only:
        picked = [p for p in found if any(p.stem.startswith(o) for o in only)]
        unknown = [o for o in only if not any(p.stem.startswith(o) for p in found)]
        if unknown:
            raise CheckError(f"no notebook matches {unknown}; choose from "
                             f"{[p.stem for p in found]}")
        return picked
    return found


# --------------------------------------------------------------------------- the report


def _fmt(fig: Figure) -> str:
    if fig.value is None:
        return fig.note or "skipped"
    v = fig.value
    text = f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.3g}"
    return f"{text} {fig.unit}".strip()


def write_report(out: Path, facts: dict[str, Any], results: list[NotebookResult],
                 figures: list[Figure]) -> tuple[Path, Path]:
    out.mkdir(parents=True, exist_ok=True)
    data = {"machine": facts, "notebooks": [asdict(r) for r in results],
            "figures": [asdict(f) for f in figures],
            "passed": all(r.passed for r in results)}
    json_path = out / "report.json"
    json_path.write_text(json.dumps(data, indent=2, default=str) + "\n")
    gpus = ", ".join(f"{g['name']} (sm {g['capability']}, {g['memory_gib']} GiB)"
                     for g in facts["gpus"]) or "none (CPU run, --allow-cpu)"
    lines = [
        "# GPU check report", "",
        f"- GPU: {gpus}",
        f"- driver: {facts.get('driver') or 'n/a'}; CUDA runtime (torch): "
        f"{facts.get('cuda_runtime') or 'n/a'}; cuDNN: {facts.get('cudnn') or 'n/a'}",
        f"- torch {facts['torch']}, triton {facts.get('triton') or 'not installed'}, "
        f"Python {facts['python']}, {facts['platform']}",
        f"- result: **{sum(r.passed for r in results)} of {len(results)} notebooks passed**",
        "", "## Notebooks", "", "| notebook | result | wall time | first failing cell |",
        "|---|---|---|---|",
    ]
    for r in results:
        err = ""
        if r.first_error:
            err = f"cell {r.first_error['cell']}: `{r.first_error['error'][:160]}`".replace("|", "\\|")
            err = err.replace("\n", " ")
        warn = f" (stderr in cells {r.stderr_cells})" if r.stderr_cells else ""
        lines.append(f"| {r.name} | {'pass' if r.passed else '**FAIL**'}{warn} | {r.wall_s} s | {err} |")
    lines += ["", "## Figures measured by the check", "", "| figure | value | what it is |",
              "|---|---|---|"]
    lines += [f"| {f.label} | {_fmt(f)} | {f.what} |" for f in figures]
    lines += ["", "## What the notebooks' demos measured (`tc.measure`, median)", ""]
    for r in results:
        if r.timings:
            lines.append(f"**{r.name}**")
            lines.append("")
            for t in r.timings:
                lines.append(f"- {t['label']}: {t['median_s'] * 1e3:.3g} ms on {t['device']}")
            lines.append("")
    md_path = out / "report.md"
    md_path.write_text("\n".join(lines) + "\n")
    return md_path, json_path


def run_check(*, solutions: Path, output: Path, allow_cpu: bool, only: list[str],
              timeout: int) -> int:
    """Run the notebooks and the figures; write the report. Returns the exit status."""
    import torch

    if not torch.cuda.is_available() and not allow_cpu:
        print("No CUDA GPU is visible to torch "
              f"(torch {torch.__version__}, built for CUDA {torch.version.cuda or 'none: a CPU build'}). "
              "Run this on a GPU machine, or pass --allow-cpu to run the same path on the CPU.",
              file=sys.stderr)
        return EXIT_NO_GPU
    notebooks = _solution_notebooks(solutions, only)
    facts = machine_facts()
    gpu = facts["gpus"][0]["name"] if facts["gpus"] else "the CPU"
    print(f"GPU check on {gpu}, torch {facts['torch']}: {len(notebooks)} notebooks", flush=True)
    os.environ.pop("TENSORCOURSE_DEVICE", None)  # the kernel inherits this: let it pick CUDA
    os.environ.setdefault("MPLBACKEND", "agg")
    results = []
    with tempfile.TemporaryDirectory(prefix="tio-gpu-check-") as tmp:
        os.environ["JUPYTER_RUNTIME_DIR"] = str(Path(tmp) / "runtime")
        for path in notebooks:
            work = Path(tmp) / path.stem
            work.mkdir()
            r = run_notebook(path, timeout=timeout, workdir=work)
            print(f"  {r.name:<40} {'pass' if r.passed else 'FAIL'}  {r.wall_s:7.1f} s"
                  + (f"  {r.first_error['error'][:100]}" if r.first_error else ""), flush=True)
            results.append(r)
    print("Measuring the figures ...", flush=True)
    figures = measure_figures("cuda" if torch.cuda.is_available() else "cpu")
    md, js = write_report(output, facts, results, figures)
    print(f"Report: {md} and {js}")
    return 0 if all(r.passed for r in results) else 1


# --------------------------------------------------------------------------- the bundle


def _pins() -> dict[str, str]:
    pins = {}
    req = REPO / "requirements.txt"
    for line in req.read_text().splitlines() if req.exists() else []:
        m = re.match(r"^([A-Za-z0-9_.-]+)==([^\s;#]+)", line)
        if m:
            pins[m.group(1).lower()] = m.group(2)
    return pins


_RUN_PY = '''#!/usr/bin/env python3
"""Run the Tensors Inside Out GPU check from this folder, offline.

    python3 run.py                 # report in ./report/ (report.md, report.json)
    python3 run.py --allow-cpu     # also on a machine without a GPU
    python3 run.py --only 05 06    # some notebooks

Uses the torch, numpy and matplotlib already installed; unpacks the wheels in
wheels/ into .deps/ (no pip, no network) and runs python -m tensorcourse.gpu_check.
"""
import os
import subprocess
import sys
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEPS = HERE / ".deps"
if sys.version_info[:2] != {py}:
    print(f"note: the wheels were bundled for Python {{'.'.join(map(str, {py}))}}; this is "
          f"{{sys.version.split()[0]}}. Binary wheels may not load: rebuild the bundle with "
          "--python-version for this machine if the check fails to start.", file=sys.stderr)
stamp = DEPS / ".unpacked"
if not stamp.exists():
    for wheel in sorted((HERE / "wheels").glob("*.whl")):
        with zipfile.ZipFile(wheel) as z:
            z.extractall(DEPS)
    stamp.write_text("ok")
env = dict(os.environ)
env["PYTHONPATH"] = os.pathsep.join([str(DEPS), str(HERE), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
args = [sys.executable, "-m", "tensorcourse.gpu_check", "--solutions", str(HERE / "solutions"),
        "--output", str(HERE / "report"), *sys.argv[1:]]
sys.exit(subprocess.run(args, env=env).returncode)
'''


def build_bundle(dest: Path, *, python_version: str, platforms: list[str]) -> dict[str, Any]:
    """Write the offline bundle into ``dest`` (must not exist or be empty); return its manifest."""
    if dest.exists() and any(dest.iterdir()):
        raise CheckError(f"{dest} exists and is not empty: choose a new folder for the bundle")
    if not re.fullmatch(r"3\.\d{1,2}", python_version):
        raise CheckError(f"--python-version must look like 3.12, got {python_version!r}")
    pins = _pins()
    wheels = dest / "wheels"
    wheels.mkdir(parents=True)
    specs = [f"{p}=={pins[p]}" if p in pins else p for p in BUNDLE_PACKAGES]
    cmd = [sys.executable, "-m", "pip", "download", "--disable-pip-version-check", "-q",
           "--only-binary=:all:", "--implementation", "cp", "--python-version", python_version,
           "-d", str(wheels), *[a for p in platforms for a in ("--platform", p)], *specs]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise CheckError("pip could not download the wheels (is PyPI reachable from here?):\n"
                         + done.stderr[-2000:])
    bundled_from_machine = [w.name for w in wheels.glob("*.whl")
                            if w.name.split("-")[0].lower() in FROM_MACHINE]
    if bundled_from_machine:  # a dependency pulled one in: the machine's own must be used
        for name in bundled_from_machine:
            (wheels / name).unlink()
    shutil.copytree(REPO / "tensorcourse", dest / "tensorcourse",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for nb in sorted((REPO / "solutions").glob("*/*.ipynb")):
        if nb.stem == nb.parent.name:
            (dest / "solutions" / nb.parent.name).mkdir(parents=True, exist_ok=True)
            shutil.copy2(nb, dest / "solutions" / nb.parent.name / nb.name)
    py = tuple(int(x) for x in python_version.split("."))
    (dest / "run.py").write_text(_RUN_PY.format(py=py))
    (dest / "README.md").write_text(
        "# Tensors Inside Out: GPU check bundle\n\n"
        f"Built for CPython {python_version} on {', '.join(platforms)}. Copy this folder to the "
        "GPU machine (it needs torch, numpy and matplotlib installed, no internet) and run\n\n"
        "    python3 run.py\n\nThe report lands in `report/` (report.md, report.json).\n")
    size = sum(p.stat().st_size for p in dest.rglob("*") if p.is_file())
    manifest = {"python_version": python_version, "platforms": platforms,
                "wheels": sorted(w.name for w in wheels.glob("*.whl")),
                "notebooks": sorted(p.parent.name for p in (dest / "solutions").glob("*/*.ipynb")),
                "bytes": size}
    (dest / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    return manifest


def _zip_top_levels(wheel: Path) -> set[str]:
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
    tops = set()
    for n in names:
        first = n.split("/")[0]
        if first.endswith((".dist-info", ".data")):
            continue
        tops.add(first[:-3] if first.endswith(".py") else first.split(".")[0])
    return tops


# --------------------------------------------------------------------------- CLI


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python3 tio.py gpu-check",
                                description="Run every solution notebook on this machine's GPU "
                                "and write a report; or build an offline bundle that does.")
    p.add_argument("--allow-cpu", action="store_true",
                   help="run on the CPU when no GPU is visible (otherwise exit 3)")
    p.add_argument("--only", nargs="+", default=[], metavar="NN",
                   help="only the notebooks whose names start with these (e.g. 05 06)")
    p.add_argument("--output", type=Path, default=REPO / ".test-output" / "gpu-check",
                   help="report folder (default: .test-output/gpu-check)")
    p.add_argument("--solutions", type=Path, default=REPO / "solutions", help=argparse.SUPPRESS)
    p.add_argument("--timeout", type=int, default=DEFAULT_CELL_TIMEOUT,
                   help=f"seconds a cell may run (default {DEFAULT_CELL_TIMEOUT})")
    p.add_argument("--bundle", type=Path, metavar="DIR",
                   help="write the offline bundle into DIR instead of running the check")
    p.add_argument("--python-version", default="3.12",
                   help="with --bundle: the GPU machine's Python (default 3.12)")
    p.add_argument("--platform", action="append", dest="platforms", metavar="TAG",
                   help="with --bundle: wheel platform tags, repeatable (default: manylinux x86_64)")
    args = p.parse_args(argv)
    try:
        if args.bundle:
            m = build_bundle(args.bundle, python_version=args.python_version,
                             platforms=args.platforms or list(DEFAULT_PLATFORMS))
            mb = m["bytes"] / 2**20
            print(f"Bundle in {args.bundle}: {len(m['wheels'])} wheels, {len(m['notebooks'])} "
                  f"notebooks, {mb:.1f} MiB. On the GPU machine: python3 {args.bundle}/run.py")
            if m["bytes"] > BUNDLE_TARGET_BYTES:
                print(f"warning: over the {BUNDLE_TARGET_BYTES / 2**20:.0f} MiB target",
                      file=sys.stderr)
            return 0
        if args.timeout < 1:
            raise CheckError("--timeout must be at least 1 second")
        return run_check(solutions=args.solutions, output=args.output, allow_cpu=args.allow_cpu,
                         only=args.only, timeout=args.timeout)
    except CheckError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
