#!/usr/bin/env python3
"""Set up and run the Tensors Inside Out course with nothing but python3.

    python3 tio.py lab               # create .venv, install, open the course in JupyterLab
    python3 tio.py lab --port 9999   # arguments after `lab` go to JupyterLab
    python3 tio.py test              # create .venv, install, run every check (what CI runs)
    python3 tio.py test -k pipeline  # with arguments: only pytest, with those arguments
    python3 tio.py site              # build the course website into .site/html/
    python3 tio.py gpu-check         # run every solution notebook on this machine's GPU, report
    python3 tio.py gpu-check --bundle DIR   # an offline folder that does that elsewhere

`test` without arguments runs four stages: the pytest suite (in parallel, one process per
CPU, each test file kept in one process); the helper package and widget tests and notebooks
01, 03, 04, 07, 08, 09 (the ones with widgets) again under ipywidgets 7.7 (what Colab ships) in a
second environment,
.venv-ipywidgets7;
binder/check.py, which builds the Binder environment without Docker and checks it, then the
website's build and browser tests (tests/test_site.py, reusing the notebooks stage 1 ran);
and, meanwhile, `gpu-check --allow-cpu` (the GPU check's own path, run on the CPU);
then, alone, the grading benchmark: `--jobs N` against a local Dask cluster, scores compared
(benchmarks/bench_grading.py, log in .test-output/bench-grading.txt).

`gpu-check` never installs torch: it runs on the interpreter that calls it when that one
has torch, nbclient and ipykernel (a GPU machine's own environment), else on .venv/.

`lab` opens JupyterLab as a learner sees the course (binder/learner/jupyter_lab_config.py):
rooted at notebooks/ with notebook 01 open, nbgrader's instructor tools off. Run as root
(in a container), it passes --allow-root, which JupyterLab otherwise asks for.

The virtual environment lives in .venv/ (override with TIO_VENV=/some/path). It is
(re)installed only when requirements.txt or pyproject.toml changed since the last
install, so the second run starts in seconds.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = Path(os.environ.get("TIO_VENV", ROOT / ".venv"))
FIRST_NOTEBOOK = "notebooks/01-why-tensors/01-why-tensors.ipynb"
LEARNER_CONFIG = ROOT / "binder" / "learner" / "jupyter_lab_config.py"
ARTIFACTS = ROOT / ".test-output"
COMPAT_VENV = Path(os.environ.get("TIO_COMPAT_VENV", ROOT / ".venv-ipywidgets7"))
# Under ipywidgets 7.7: the helper package, the widgets, and the notebooks that show widgets.
COMPAT_TESTS = ["tests/test_tensorcourse.py", "tests/test_launch.py"] + [
    f"tests/test_notebooks.py::test_solution_notebook_runs_clean_on_cpu[{name}]"
    for name in ("01-why-tensors", "03-indexing-and-views", "04-operations-and-autograd",
                 "07-programmable-tensor-system", "08-autograd-function-and-compilers",
                 "09-layout-devices-gradient-lifetime")]
USAGE = ("usage: python3 tio.py lab [jupyter args...] | python3 tio.py test [pytest args...] | "
         "python3 tio.py site [--only NN...] | "
         "python3 tio.py gpu-check [--allow-cpu] [--bundle DIR] [--help]")
GPU_CHECK = ["-m", "tensorcourse.gpu_check"]


def _bin(name: str, env: Path = VENV) -> str:
    folder = "Scripts" if os.name == "nt" else "bin"
    return str(env / folder / name)


def _fingerprint(requirements: str) -> str:
    h = hashlib.sha256(requirements.encode())
    h.update((ROOT / "pyproject.toml").read_bytes())
    return h.hexdigest()


def ensure_environment(env: Path = VENV, requirements: str | None = None) -> None:
    """Create ``env`` and install the pinned requirements plus the helper package.

    Skipped when the same requirements were installed there before (a stamp file).
    """
    if sys.version_info < (3, 11):  # the pins (numpy, matplotlib, nbgrader...) need 3.11
        sys.exit(f"Python 3.11 or newer is needed; this is {sys.version.split()[0]}. Install a "
                 "newer python3 (python.org, your package manager, pyenv or uv) and run "
                 "this command with it.")
    if requirements is None:
        requirements = (ROOT / "requirements.txt").read_text()
    stamp = env / ".tio-installed"
    if stamp.exists() and stamp.read_text() == _fingerprint(requirements):
        return
    if not Path(_bin("python", env)).exists():
        print(f"Creating a virtual environment in {env} ...", flush=True)
        venv.create(env, with_pip=True)
    print(f"Installing the course's requirements into {env} (the first time takes a few "
          "minutes) ...", flush=True)
    ARTIFACTS.mkdir(exist_ok=True)
    pins = ARTIFACTS / f"requirements-{env.name}.txt"
    pins.write_text(requirements)
    pip = [_bin("python", env), "-m", "pip", "install", "--disable-pip-version-check", "-q"]
    subprocess.run(pip + ["--upgrade", "pip"], check=True)
    subprocess.run(pip + ["-r", str(pins), "-e", str(ROOT)], check=True)
    stamp.write_text(_fingerprint(requirements))


def _with_path(env: Path) -> dict[str, str]:
    environ = dict(os.environ)
    environ["PATH"] = str(Path(_bin("python", env)).parent) + os.pathsep + environ.get("PATH", "")
    return environ


def _stage(title: str) -> None:
    print(f"\n==== {title}", flush=True)


def run_all_checks() -> int:
    """The full suite: pytest, the ipywidgets 7.7 environment, the Binder build."""
    _stage("1/4 pytest: unit tests, every notebook, wrong answers, nbgrader pipeline, browser")
    # The website's tests run in stage 3, once this stage has stored the executed notebooks.
    args = [_bin("python"), "-m", "pytest", "-q", "-n", "auto", "--dist", "loadfile",
            "-m", "not site"]
    print("+ " + " ".join(args), flush=True)
    if subprocess.run(args, cwd=ROOT, env=_with_path(VENV)).returncode != 0:
        return 1

    _stage("2/4 ipywidgets 7.7 (what Colab ships): helper and widget tests, the notebooks with "
           "widgets")
    pins = [line for line in (ROOT / "requirements.txt").read_text().splitlines()
            if not line.startswith(("playwright==", "pytest-xdist==", "sphinx", "myst-",
                                    "pydata-sphinx-theme==", "triton=="))]
    pins = [("ipywidgets==7.7.*" if line.startswith("ipywidgets==") else line) for line in pins]
    ensure_environment(COMPAT_VENV, "\n".join(pins) + "\n")
    probe = "import ipywidgets as w; assert w.__version__.startswith('7.7'), w.__version__; " \
            "print('ipywidgets', w.__version__)"
    if subprocess.run([_bin("python", COMPAT_VENV), "-c", probe]).returncode != 0:
        return 1
    args = [_bin("python", COMPAT_VENV), "-m", "pytest", "-q", "-p", "no:cacheprovider",
            *COMPAT_TESTS, *sorted(str(p.relative_to(ROOT)) for p in ROOT.glob("tests/test_viz_*.py"))]
    print("+ " + " ".join(args), flush=True)
    if subprocess.run(args, cwd=ROOT, env=_with_path(COMPAT_VENV)).returncode != 0:
        return 1

    _stage("3/4 Binder environment built the way repo2docker would, without Docker; "
           "meanwhile the GPU check's path on the CPU")
    # Both are slow for different reasons (pip downloads vs running notebooks): run together.
    # The GPU check's log goes to a file, printed after, so the two outputs do not interleave.
    ARTIFACTS.mkdir(exist_ok=True)
    gpu_log = ARTIFACTS / "gpu-check.log"
    gpu_args = [_bin("python"), *GPU_CHECK, "--allow-cpu", "--output", str(ARTIFACTS / "gpu-check")]
    print("+ " + " ".join(gpu_args) + f"  (log: {gpu_log})", flush=True)
    with gpu_log.open("w") as log:
        gpu = subprocess.Popen(gpu_args, cwd=ROOT, env=_with_path(VENV), stdout=log,
                               stderr=subprocess.STDOUT)
        args = [sys.executable, str(ROOT / "binder" / "check.py"), "--output",
                str(ARTIFACTS / "binder")]
        print("+ " + " ".join(args), flush=True)
        binder_rc = subprocess.run(args, cwd=ROOT).returncode
        print("\n---- the website: build, then check it in Chromium (tests/test_site.py)", flush=True)
        args = [_bin("python"), "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "site",
                "tests/test_site.py"]
        print("+ " + " ".join(args), flush=True)
        site_rc = subprocess.run(args, cwd=ROOT, env=_with_path(VENV)).returncode
        gpu_rc = gpu.wait()
    print(gpu_log.read_text(), flush=True)
    if binder_rc != 0 or gpu_rc != 0 or site_rc != 0:
        return 1

    _stage("4/4 grading throughput: --jobs N against a local Dask cluster (benchmarks/bench_grading.py)")
    # Alone on the machine (a benchmark beside other stages measures them). It fails on
    # scores that differ between the paths, or a cluster below 0.75x of --jobs N: the issue's
    # 0.9x is what a quiet machine measures (autograder/README.md), 0.75x is the regression
    # bar that a busy CI runner's noise does not cross.
    bench_log = ARTIFACTS / "bench-grading.txt"
    args = [_bin("python"), "benchmarks/bench_grading.py", "-n", "8", "--no-stock", "--no-serial",
            "--rounds", "2", "--require-cluster", "0.75"]
    print("+ " + " ".join(args) + f"  (log: {bench_log})", flush=True)
    bench = subprocess.run(args, cwd=ROOT, env=_with_path(VENV), capture_output=True, text=True)
    bench_log.write_text(bench.stdout + bench.stderr)
    print(bench.stdout + bench.stderr, flush=True)
    if bench.returncode != 0:
        return 1
    _stage(f"All checks passed. Artifacts (screenshots, Binder report, benchmark): {ARTIFACTS}/")
    return 0


def _gpu_check(rest: list[str]) -> int:
    """``gpu-check``: on the torch already installed here, never installing one."""
    probe = "import torch, nbclient, nbformat, ipykernel"
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    if any(a == "--bundle" or a.startswith("--bundle=") for a in rest) or any(
            a in {"-h", "--help"} for a in rest):
        # Building the bundle needs only pip: run the module as a file, since importing the
        # package `tensorcourse` would import torch, which this Python may not have.
        args = [sys.executable, str(ROOT / "tensorcourse" / "gpu_check.py"), *rest]
        print("+ " + " ".join(args), flush=True)
        return subprocess.run(args, cwd=ROOT, env=env).returncode
    elif subprocess.run([sys.executable, "-c", probe], capture_output=True, env=env).returncode == 0:
        python = sys.executable
    elif Path(_bin("python")).exists():
        python = _bin("python")
    else:
        print("gpu-check runs on the torch already installed, and this Python lacks torch or "
              "the notebook runner. Either `pip install nbclient nbformat ipykernel ipywidgets` "
              "here, or on a machine with internet build the offline bundle "
              "(`python3 tio.py gpu-check --bundle DIR`) and run DIR/run.py here.",
              file=sys.stderr)
        return 2
    args = [python, *GPU_CHECK, *rest]
    print("+ " + " ".join(args), flush=True)
    return subprocess.run(args, cwd=ROOT, env=env).returncode


def _is_root() -> bool:
    return getattr(os, "geteuid", lambda: -1)() == 0


def lab_command(rest: list[str], *, as_root: bool | None = None) -> list[str]:
    """The JupyterLab command of `lab`: the learner's configuration, then the user's arguments.

    As root (a container), JupyterLab refuses to start without --allow-root: add it.
    """
    args = [_bin("jupyter"), "lab", f"--config={LEARNER_CONFIG}"]
    if (_is_root() if as_root is None else as_root) and "--allow-root" not in rest:
        args.append("--allow-root")
    return args + list(rest)


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in {"lab", "test", "site", "gpu-check"}:
        print(USAGE, file=sys.stderr)
        return 2
    command, rest = argv[0], argv[1:]
    if command == "gpu-check":
        return _gpu_check(rest)
    try:
        ensure_environment()
    except subprocess.CalledProcessError as err:
        print(f"Installing failed ({err}). Check your network connection and that python3 "
              "can create virtual environments (Debian/Ubuntu: apt install python3-venv).",
              file=sys.stderr)
        return 1
    if command == "test" and not rest:
        try:
            return run_all_checks()
        except subprocess.CalledProcessError as err:
            print(f"Setting up the ipywidgets 7.7 environment failed ({err}).", file=sys.stderr)
            return 1
    if command == "site":
        args = [_bin("python"), str(ROOT / "website" / "build.py"), *rest]
    elif command == "lab":
        if _is_root():
            print("Running as root (a container?): starting JupyterLab with --allow-root.",
                  flush=True)
        args = lab_command(rest)
    else:
        args = [_bin("python"), "-m", "pytest", *rest]
    print("+ " + " ".join(args), flush=True)
    return subprocess.run(args, cwd=ROOT, env=_with_path(VENV)).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
