"""Grading on a Dask cluster (autograder/pipeline/cluster.py), and the deployment recipes
(autograder/deploy/).

The cluster test starts a real ``dask scheduler`` and two ``dask worker`` processes (each with
its nanny, one process and one thread) on 127.0.0.1, grades a small class of notebook 01 through
``python -m autograder grade ... --scheduler``, kills the worker process that is grading while it
grades, and checks: every notebook recorded exactly once, scores identical to a local
``--jobs 2`` run, the killed worker's notebook started again on another worker, a notebook that
kills every worker it lands on marked not graded after a bounded number of tries, and nothing
that was started left running. The recipes are checked with the real libraries, no cluster.
"""

from __future__ import annotations

import copy
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import nbformat
import pytest

from autograder.sandbox.launch import unavailable
from coursefiles import REPO, nbgrader_meta, read, release_path, solution_answers, with_replacements
from wrong_answers import wrong_answers

A = "01-why-tensors"
BIN = Path(sys.executable).parent
needs_sandbox = pytest.mark.skipif(unavailable() is not None, reason=f"no sandbox: {unavailable()}")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _write(nb, folder: Path, student: str) -> None:
    path = folder / student / A / f"{A}.ipynb"
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, path)


def _class(subs: Path) -> list[str]:
    rel = read(release_path(A))
    answers = solution_answers(A)
    table = wrong_answers(A)
    crash = copy.deepcopy(with_replacements(rel, answers))
    [c for c in crash.cells if nbgrader_meta(c).get("solution")][2].source = \
        "def center_rows(x):\n    raise SystemExit(0)"
    kinds = {"alice": with_replacements(rel, answers),          # solved
             "bob": rel,                                         # untouched release
             "carol": with_replacements(rel, {g: v[0].source for g, v in table.items()}),  # wrong
             "dave": crash,                                      # raises SystemExit
             "zz-killer": with_replacements(rel, answers)}       # kills its workers (preload)
    for student, nb in kinds.items():
        _write(nb, subs, student)
    return sorted(kinds)


class _Tracker:
    """Every process descended from the ones started here, sampled until stopped."""

    def __init__(self) -> None:
        import psutil

        self.psutil, self.roots, self.seen = psutil, [], {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def add(self, popen: subprocess.Popen) -> subprocess.Popen:
        self.roots.append(popen)
        return popen

    def sample(self) -> None:
        for popen in list(self.roots):
            try:
                root = self.psutil.Process(popen.pid)
                for p in [root, *root.children(recursive=True)]:
                    self.seen.setdefault((p.pid, p.create_time()), " ".join(p.cmdline())[:120])
            except (self.psutil.Error, OSError):
                continue

    def _run(self) -> None:
        while not self._stop.wait(0.2):
            self.sample()

    def alive(self) -> list[str]:
        left = []
        for (pid, created), cmd in self.seen.items():
            try:
                p = self.psutil.Process(pid)
                if p.create_time() == created and p.status() != self.psutil.STATUS_ZOMBIE:
                    left.append(f"{pid} {cmd}")
            except self.psutil.Error:
                pass
        return left

    def stop_all(self) -> None:
        self._stop.set()
        self._thread.join()
        for popen in self.roots:   # each was started in its own session: its group is ours
            if popen.poll() is None:
                try:
                    os.killpg(popen.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        for popen in self.roots:
            try:
                popen.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(popen.pid, signal.SIGKILL)
                popen.wait()


def _grade_cmd(subs: Path, workdir: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "autograder", "grade", str(subs), A, "--workdir", str(workdir),
            *extra]


def _scores(workdir: Path, students: list[str]) -> dict[str, dict]:
    from autograder.pipeline.gradebook import cell_scores

    return {s: cell_scores(workdir, A, s) for s in students}


@pytest.mark.slow
@needs_sandbox
def test_grading_on_a_dask_cluster_survives_a_killed_worker(tmp_path):
    from distributed import Client

    subs, cluster_dir, local_dir = tmp_path / "subs", tmp_path / "cluster", tmp_path / "local"
    students = _class(subs)
    log = tmp_path / "started.log"
    log.touch()
    own_tmp = tmp_path / "tmp"   # every process's temp folder: what outlives grading shows here
    own_tmp.mkdir()
    env = {**os.environ, "TIO_CLUSTER_TEST_LOG": str(log), "TMPDIR": str(own_tmp),
           "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
           # One death is forgiven (the worker this test kills); the second is the job's fault.
           "DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES": "1"}
    port = _free_port()
    address = f"tcp://127.0.0.1:{port}"
    tracker = _Tracker()
    files = []

    def start(name: str, cmd: list[str]) -> subprocess.Popen:
        out = open(tmp_path / f"{name}.log", "w")
        files.append(out)
        return tracker.add(subprocess.Popen(cmd, cwd=REPO, env=env, stdout=out,
                                            stderr=subprocess.STDOUT, start_new_session=True))

    try:
        # First the same submissions graded here, two at a time (the reference for the scores;
        # zz-killer is graded normally here: no preload in this process).
        local = start("local", _grade_cmd(subs, local_dir, "--jobs", "2", "--no-progress"))
        assert local.wait(timeout=1200) == 0, (tmp_path / "local.log").read_text()
        start("scheduler", [str(BIN / "dask"), "scheduler", "--host", "127.0.0.1", "--port",
                            str(port), "--no-dashboard"])
        for i in (1, 2):
            start(f"worker{i}", [str(BIN / "dask"), "worker", address, "--name", f"w{i}",
                                 "--host", "127.0.0.1", "--nworkers", "1", "--nthreads", "1",
                                 "--no-dashboard", "--memory-limit", "0",
                                 "--local-directory", str(tmp_path / f"dask-w{i}"),
                                 "--preload", str(REPO / "tests" / "cluster_worker_preload.py")])
        with Client(address, timeout=60) as client:
            client.wait_for_workers(2, timeout=180)
        stderr = open(tmp_path / "grade.err", "w")
        files.append(stderr)
        run = tracker.add(subprocess.Popen(
            _grade_cmd(subs, cluster_dir, "--scheduler", address), cwd=REPO, env=env,
            stdout=subprocess.PIPE, stderr=stderr, text=True, start_new_session=True))
        # Kill the worker process that grades the first notebook, a few seconds into it.
        deadline = time.monotonic() + 600
        while True:
            lines = [ln.split() for ln in log.read_text().splitlines()]
            first = next((ln for ln in lines if ln[1] != "zz-killer"), None)
            if first or run.poll() is not None or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert first, f"no worker started a notebook:\n{(tmp_path / 'grade.err').read_text()}"
        victim, victim_student = int(first[0]), first[1]
        time.sleep(4)
        tracker.sample()
        import psutil

        doomed = [p for p in psutil.Process(victim).children(recursive=True)]
        assert doomed, "the killed worker was not running a kernel"
        os.kill(victim, signal.SIGKILL)
        _, gone_alive = psutil.wait_procs(doomed, timeout=30)
        assert not gone_alive, f"the killed worker's kernel outlived it: {gone_alive}"
        stdout, _ = run.communicate(timeout=1200)
        err = (tmp_path / "grade.err").read_text()
        assert run.returncode == 3, f"{stdout}\n{err}"   # zz-killer: not graded
        # The killed workers' kernel folders were swept (autograder/sandbox/scratch.py), nothing else.
        kernels = own_tmp / f"tio-{os.getuid()}"   # autograder.sandbox.scratch.kernel_parent
        left = [p.name for p in own_tmp.glob("tio-*") if p != kernels]
        left += [p.name for p in kernels.iterdir()] if kernels.exists() else []
        assert not left, f"kernel folders outlived their grading: {left}"

        # The killed worker's notebook was started again on another worker; the killer's, twice.
        starts = [ln.split() for ln in log.read_text().splitlines()]
        again = [pid for pid, s in starts if s == victim_student]
        assert str(victim) in again and len(set(again)) >= 2, starts
        assert sum(s == "zz-killer" for _, s in starts) == 2, starts   # bounded: 1 + allowed-failures
        # Recorded exactly once each: one progress line per notebook, one result file each.
        steps = [ln for ln in err.splitlines() if ln.startswith("grading [")]
        assert sorted(ln.split()[-1] for ln in steps) == [f"{s}/{A}" for s in students], err
        results = sorted(p.relative_to(cluster_dir / "results").as_posix()
                         for p in (cluster_dir / "results").rglob("*.json"))
        assert results == [f"{s}/{A}/{A}.json" for s in students]
        killer = json.loads((cluster_dir / "results" / "zz-killer" / A / f"{A}.json").read_text())
        assert killer["status"] == "not graded" and "died" in killer["failure"], killer
        assert "NOT GRADED" in stdout and "zz-killer" in stdout, stdout
        for s in students[:-1]:
            state = json.loads((cluster_dir / "results" / s / A / f"{A}.json").read_text())
            assert state["status"] == "graded", state
    finally:
        tracker.stop_all()
        for fh in files:
            fh.close()
    time.sleep(1)
    assert not tracker.alive(), f"left running: {tracker.alive()}"

    honest = [s for s in students if s != "zz-killer"]
    on_cluster, here = _scores(cluster_dir, honest), _scores(local_dir, honest)
    assert on_cluster == here
    assert sum(v[0] for v in here["alice"].values()) == sum(v[1] for v in here["alice"].values()) > 0
    assert sum(v[0] for v in here["bob"].values()) == 0


def _refuse(job):
    raise AssertionError("never submitted")


def test_no_scheduler_is_a_clear_error(tmp_path, monkeypatch):
    from autograder.course import CourseError
    from autograder.pipeline import cluster
    from autograder.pipeline.cluster import run_on_cluster
    from autograder.pipeline.unit import Job

    # Nothing listens on that port: the error is the same after 3 s as after the default 30.
    monkeypatch.setattr(cluster, "CONNECT_TIMEOUT", 3)
    job = Job("s", A, A, b"", str(release_path(A)), str(release_path(A)))
    with pytest.raises(CourseError, match="cannot reach the Dask scheduler"):
        run_on_cluster([job], f"tcp://127.0.0.1:{_free_port()}", None, _refuse)


def test_importing_the_grader_does_not_import_dask():
    code = "import autograder.cli, autograder.pipeline.grading, sys; print('distributed' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True)
    assert out.stdout.strip() == "False", out.stdout + out.stderr


def test_slurm_recipe_job_script_and_tls(tmp_path):
    import dask
    from distributed.security import Security

    from autograder.deploy import slurm

    saved = copy.deepcopy(dask.config.config)
    try:
        with slurm.cluster(cores=4, walltime="02:00:00", partition="grading", account="cs101",
                           secure_dir=tmp_path / "tls", host="127.0.0.1") as cluster:
            script = cluster.job_script()
            address = cluster.scheduler_address
        # The grader's Client (autograder/pipeline/cluster.py) takes TLS from the config the recipe set.
        client_side = Security()
        assert client_side.require_encryption
        assert client_side.get_connection_args("client")["ssl_context"] is not None
    finally:
        dask.config.config.clear()
        dask.config.config.update(saved)
    lines = script.splitlines()
    for directive in ("#SBATCH --cpus-per-task=4", "#SBATCH --mem=8G", "#SBATCH -t 02:00:00",
                      "#SBATCH -p grading", "#SBATCH -A cs101", "#SBATCH -J tio-grading"):
        assert directive in lines, script
    assert f"cd {REPO}" in lines, script
    (command,) = [ln for ln in lines if "distributed.cli.dask_worker" in ln]
    assert command.startswith(f"{sys.executable} -m distributed.cli.dask_worker {address} ")
    assert address.startswith("tls://")
    for part in ("--nthreads 4", "--lifetime 110m", "--lifetime-stagger 4m", "--nanny",
                 f"--tls-ca-file {tmp_path / 'tls'}"):
        assert part in command, command
    assert (tmp_path / "tls").stat().st_mode & 0o777 == 0o700


def test_kubernetes_recipe_spec_as_generated():
    import yaml

    from autograder.deploy import kubernetes

    shipped = (REPO / "autograder" / "deploy" / "dask-cluster.yaml").read_text()
    assert yaml.safe_load(shipped) == kubernetes.cluster_spec(), \
        "autograder/deploy/dask-cluster.yaml is stale: python -m autograder.deploy.kubernetes > it"
    spec = kubernetes.cluster_spec(image="registry.example.edu/tio-grading:v3", workers=5, cores=3)
    assert spec["apiVersion"].startswith("kubernetes.dask.org/") and spec["kind"] == "DaskCluster"
    worker, scheduler = spec["spec"]["worker"], spec["spec"]["scheduler"]
    assert worker["replicas"] == 5
    for role, pod in (("worker", worker["spec"]), ("scheduler", scheduler["spec"])):
        assert pod["automountServiceAccountToken"] is False
        (container,) = pod["containers"]
        assert container["image"] == "registry.example.edu/tio-grading:v3"
        assert container["workingDir"] == kubernetes.REPO_IN_IMAGE
        ctx = container["securityContext"]
        assert ctx["runAsNonRoot"] and ctx["allowPrivilegeEscalation"] is False
        assert ctx["capabilities"] == {"drop": ["ALL"]}
        res = container["resources"]
        assert res["requests"] == res["limits"], role
    (w,) = worker["spec"]["containers"]
    assert w["args"][:2] == ["dask", "worker"]          # the pinned distributed's CLI
    assert w["securityContext"]["procMount"] == "Unmasked" and worker["spec"]["hostUsers"] is False
    assert w["args"][w["args"].index("--nthreads") + 1] == "3"
    assert w["args"][w["args"].index("--nworkers") + 1] == "1"
    assert w["resources"]["limits"] == {"cpu": "3", "memory": "6Gi"}
    assert w["securityContext"]["seccompProfile"] == {"type": "Unconfined"}  # bwrap's namespaces
    (s,) = scheduler["spec"]["containers"]
    assert s["args"][:2] == ["dask", "scheduler"]
    assert {p["containerPort"] for p in s["ports"]} >= {8786}


def _wait_for_workers(address: str, n: int, security=None, timeout: float = 60) -> dict:
    from distributed import Client

    with Client(address, timeout=timeout, security=security) as client:
        client.wait_for_workers(n, timeout=timeout)
        return client.scheduler_info()["workers"]


def _stop(procs: list[subprocess.Popen]) -> None:
    for proc in procs:
        proc.terminate()
    for proc in procs:
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def test_the_kubernetes_specs_command_lines_start_with_the_pinned_distributed(tmp_path):
    """The very argument lists of the spec's scheduler and worker containers, run from this
    environment's `dask` (only the ports made free, and the name the pod would get), the
    scheduler's address given as the operator gives it (DASK_SCHEDULER_ADDRESS)."""
    from autograder.deploy import kubernetes

    spec = kubernetes.cluster_spec(workers=1, cores=2)
    (sched,) = spec["spec"]["scheduler"]["spec"]["containers"]
    (work,) = spec["spec"]["worker"]["spec"]["containers"]
    port, board = _free_port(), _free_port()
    sched_args = [str(BIN / a) if i == 0 else a for i, a in enumerate(sched["args"])]
    worker_args = [str(BIN / a) if i == 0 else a for i, a in enumerate(work["args"])]
    worker_args = ["w-0" if a == "$(DASK_WORKER_NAME)" else str(_free_port()) if a == "8788" else a
                   for a in worker_args]
    env = {**os.environ, "DASK_SCHEDULER_ADDRESS": f"tcp://127.0.0.1:{port}"}
    procs = [subprocess.Popen([*sched_args, "--port", str(port), "--dashboard-address", f":{board}"],
                              cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)]
    try:
        procs.append(subprocess.Popen(worker_args, cwd=tmp_path, env=env,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.PIPE))
        workers = _wait_for_workers(f"tcp://127.0.0.1:{port}", 1)
        (info,) = workers.values()
        assert info["nthreads"] == 2 and info["name"] == "w-0", info
    finally:
        _stop(procs)


def test_the_grading_image_matches_the_spec():
    """autograder/deploy/Dockerfile: the sandbox's packages, the course at the spec's path, the
    spec's user, the grading pins that tests/requirements.txt holds; it cannot be built here
    (no container runtime), so this is what can be checked of it."""
    from autograder.deploy import kubernetes

    text = (REPO / "autograder" / "deploy" / "Dockerfile").read_text()
    for package in ("bubblewrap", "libseccomp2", "util-linux"):
        assert f" {package}" in text, package
    assert f"WORKDIR {kubernetes.REPO_IN_IMAGE}" in text
    assert f"USER {kubernetes.USER}" in text and f"--uid {kubernetes.USER}" in text
    assert '-e ".[grading]"' in text and "-r requirements.txt" in text
    pins = (REPO / "tests" / "requirements.txt").read_text().splitlines()
    for name in ("dask", "distributed", "copydetect"):
        assert any(line.startswith(f"{name}==") for line in pins), name
    ignored = (REPO / "autograder" / "deploy" / "Dockerfile.dockerignore").read_text().split()
    assert {".venv", ".grading", ".drift", ".git"} <= set(ignored)


def test_slurm_runs_nothing_on_the_login_node(tmp_path, monkeypatch):
    """The login node only writes and submits the driver job; the driver runs this module
    --in-job (scheduler, reference run, grader) on a compute node."""
    import shlex

    from autograder.deploy import slurm

    out = subprocess.run([sys.executable, "-m", "autograder.deploy.slurm", "--workers", "3",
                          "--partition", "grading", "--account", "cs101", "--workdir",
                          str(tmp_path / "w"), "--print", "--", "subs", A, "--timeout", "30"],
                         cwd=tmp_path, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    for directive in ("#SBATCH -J tio-grading-driver", "#SBATCH -p grading", "#SBATCH -A cs101",
                      f"#SBATCH -o {tmp_path / 'w'}/slurm-driver-%j.out"):
        assert directive in lines, out.stdout
    assert f"cd {REPO}" in lines
    command = shlex.split(lines[-1])
    assert command[:5] == ["exec", sys.executable, "-m", "autograder.deploy.slurm", "--in-job"]
    assert command[command.index("--") + 1] == str(tmp_path / "subs")   # made absolute
    assert command[command.index("--") + 2:] == [A, "--timeout", "30"]
    # No Slurm here: a clear error, and the script is left to submit by hand.
    monkeypatch.setenv("PATH", "/nonexistent")
    assert slurm.main(["--workers", "2", "--workdir", str(tmp_path / "w"), "--", "subs"]) == 2
    assert (tmp_path / "w" / "slurm-driver.sbatch").read_text().startswith("#!/usr/bin/env bash")


def test_the_slurm_job_scripts_worker_command_joins_the_tls_scheduler(tmp_path):
    """The command line the worker jobs' script runs, run here as Slurm would run it, joins
    the recipe's TLS scheduler (certificates from the 0700 folder)."""
    import shlex

    import dask
    import dask_jobqueue  # noqa: F401 - registers its config defaults

    from autograder.deploy import slurm

    dask.config.refresh()   # another test may have restored a config from before that import
    saved = copy.deepcopy(dask.config.config)
    procs: list[subprocess.Popen] = []
    try:
        with slurm.cluster(cores=2, walltime="01:00:00", secure_dir=tmp_path / "tls",
                           host="127.0.0.1") as cluster:
            (command,) = [ln for ln in cluster.job_script().splitlines()
                          if "distributed.cli.dask_worker" in ln]
            procs.append(subprocess.Popen(shlex.split(command), cwd=REPO, stdout=subprocess.DEVNULL,
                                          stderr=subprocess.PIPE))
            from distributed import Client

            with Client(cluster) as client:
                client.wait_for_workers(1, timeout=90)
                (info,) = client.scheduler_info()["workers"].values()
                assert info["nthreads"] == 2, info
    finally:
        _stop(procs)
        dask.config.config.clear()
        dask.config.config.update(saved)
