#!/usr/bin/env python3
"""Build the Binder environment the way repo2docker would, without Docker, and check it.

    python3 binder/check.py [--keep] [--no-cache] [--output DIR]

Steps (each printed as it runs):

1. copy the repository (tracked and untracked, not ignored files) to a scratch folder:
   repo2docker builds from a clean checkout too;
2. create a fresh virtual environment and, from the copy's root, run repo2docker's
   command ``pip install -r binder/requirements.txt``;
3. run ``binder/postBuild`` there, with that environment first on PATH;
4. execute notebook 01 (the solution version) in that environment's kernel: no error,
   no stderr;
5. start JupyterLab from that environment and check what a learner's browser gets:
   nbgrader's formgrader, create-assignment and course-list plugins disabled, Validate
   enabled, the formgrader server extension gone, and the Validate endpoint working on
   the student notebook;
6. measure the environment (``du``) and fail above 2 GB (mybinder.org gives 2 GB of RAM
   and its images should stay small).

A report goes to ``.test-output/binder/report.json``. Differences from a real
repo2docker build are printed, not hidden: the base environment is a venv of this
Python (repo2docker: a conda env of the version in binder/runtime.txt, plus its own
JupyterLab and jupyterhub-singleuser); pip's cache is used unless ``--no-cache``
(repo2docker passes ``--no-cache-dir``: same result, more downloads); and where
download.pytorch.org is unreachable, pip takes ``torch==2.13.0+cpu`` from a local
wheel directory (pip's own ``find-links`` configuration) if one has it, which the
report names.

Exit status: 0 all good, 1 a check failed, 2 the environment could not be built here.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
import venv
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SIZE_LIMIT = 2 * 1024**3
NOTEBOOK = "01-why-tensors"
DISABLED = ["@jupyter/nbgrader:formgrader", "@jupyter/nbgrader:create-assignment",
            "@jupyter/nbgrader:course-list"]
KEPT = "@jupyter/nbgrader:validate-assignment"
IGNORED_PARTS = {".git", ".venv", ".grading", ".test-output", "__pycache__", ".pytest_cache",
                 ".ruff_cache", ".ipynb_checkpoints", "build", "dist"}


class CheckFailed(Exception):
    pass


class CannotBuild(Exception):
    pass


def step(text: str) -> None:
    print(f"\n== binder check: {text}", flush=True)


def run(cmd: list, *, env: dict[str, str] | None = None, cwd: Path | None = None,
        timeout: int = 900, check: bool = True, label: str | None = None
        ) -> subprocess.CompletedProcess:
    print("+ " + (label or " ".join(str(c) for c in cmd)), flush=True)
    result = subprocess.run([str(c) for c in cmd], env=env, cwd=cwd, timeout=timeout,
                            capture_output=True, text=True)
    if check and result.returncode != 0:
        print(result.stdout[-4000:] + result.stderr[-4000:])
        raise CheckFailed(f"{' '.join(str(c) for c in cmd[:4])} ... exited {result.returncode}")
    return result


def copy_repository(dest: Path) -> int:
    """Copy what a clone would hold (plus untracked, not ignored files): like repo2docker's input."""
    files: list[Path] = []
    try:
        out = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                             cwd=REPO, capture_output=True, check=True).stdout
        files = [REPO / name for name in out.decode().split("\0") if name]
    except (OSError, subprocess.CalledProcessError):
        files = [p for p in REPO.rglob("*") if p.is_file()
                 and not IGNORED_PARTS & set(p.relative_to(REPO).parts)
                 and not p.name.endswith(".egg-info")]
    count = 0
    for path in files:
        if not path.is_file():  # deleted in the working tree
            continue
        target = dest / path.relative_to(REPO)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, target)
        count += 1
    return count


def du_bytes(path: Path) -> tuple[int, int]:
    """(apparent size, disk usage) in bytes, without following symlinks."""
    apparent = disk = 0
    seen: set[tuple[int, int]] = set()
    for root, dirs, names in os.walk(path):
        for name in dirs + names:
            p = Path(root) / name
            st = p.lstat()
            if (st.st_dev, st.st_ino) in seen:
                continue
            seen.add((st.st_dev, st.st_ino))
            if p.is_symlink() or not (p.is_file() or p.is_dir()):
                continue
            apparent += st.st_size if p.is_file() else 0
            disk += st.st_blocks * 512
    return apparent, disk


def extra_index(requirements: Path) -> str | None:
    """The ``--extra-index-url`` of a requirements file, if any."""
    for line in requirements.read_text().splitlines():
        if line.strip().startswith("--extra-index-url"):
            return line.split(None, 1)[1].strip() if " " in line.strip() else \
                line.split("=", 1)[1].strip()
    return None


def reachable(url: str, timeout: float = 10) -> bool:
    """Does the URL answer at all (any HTTP status; proxies from the environment honoured)?"""
    try:
        with urllib.request.urlopen(urllib.request.Request(url, method="HEAD"), timeout=timeout):
            return True
    except urllib.error.HTTPError:
        return True
    except (OSError, ValueError):
        return False


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http(url: str, *, data: bytes | None = None, headers: dict[str, str] | None = None,
         timeout: float = 180) -> tuple[int, str]:
    request = urllib.request.Request(url, data=data, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode(errors="replace")


def mib(n: int) -> str:
    return f"{n / 1024**2:,.0f} MiB"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keep", action="store_true", help="keep the scratch folder")
    parser.add_argument("--no-cache", action="store_true",
                        help="pass --no-cache-dir to pip, as repo2docker does (slower)")
    parser.add_argument("--output", type=Path, default=REPO / ".test-output" / "binder",
                        help="where report.json goes (default .test-output/binder/)")
    args = parser.parse_args(argv)
    started = time.monotonic()
    scratch = Path(tempfile.mkdtemp(prefix="tio-binder-"))
    report: dict = {"notes": []}
    try:
        return _check(scratch, args, report)
    except CannotBuild as err:
        print(f"\nbinder check: CANNOT BUILD HERE: {err}", file=sys.stderr)
        report["result"] = f"cannot build: {err}"
        return 2
    except (CheckFailed, subprocess.TimeoutExpired) as err:
        print(f"\nbinder check: FAILED: {err}", file=sys.stderr)
        report["result"] = f"failed: {err}"
        return 1
    finally:
        report["seconds"] = round(time.monotonic() - started, 1)
        args.output.mkdir(parents=True, exist_ok=True)
        (args.output / "report.json").write_text(json.dumps(report, indent=2) + "\n")
        print(f"binder check: report in {args.output / 'report.json'} "
              f"({report['seconds']} s)")
        if args.keep:
            print(f"binder check: scratch folder kept: {scratch}")
        else:
            shutil.rmtree(scratch, ignore_errors=True)


def _check(scratch: Path, args: argparse.Namespace, report: dict) -> int:
    repo, env_dir = scratch / "repo", scratch / "env"
    step("copy the repository (a clean checkout's files)")
    print(f"{copy_repository(repo)} files -> {repo}")

    runtime = (repo / "binder" / "runtime.txt").read_text().strip()
    here = f"python-{sys.version_info.major}.{sys.version_info.minor}"
    report["python"] = {"runtime.txt": runtime, "used": here}
    if runtime != here:
        report["notes"].append(f"binder/runtime.txt asks for {runtime}; this check uses {here}")
        print(f"note: binder/runtime.txt asks for {runtime}; this check runs {here}")

    step("fresh environment + pip install -r binder/requirements.txt (repo2docker's command)")
    venv.create(env_dir, with_pip=True)
    bindir = env_dir / "bin"
    jupyter_home = scratch / "jupyter"
    env = {**os.environ,
           "PATH": f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}",
           "VIRTUAL_ENV": str(env_dir),
           # A clean image has no user-level Jupyter configuration, kernels or settings.
           "JUPYTER_CONFIG_DIR": str(jupyter_home / "config"),
           "JUPYTER_DATA_DIR": str(jupyter_home / "data"),
           "JUPYTER_RUNTIME_DIR": str(jupyter_home / "runtime"),
           "JUPYTERLAB_SETTINGS_DIR": str(jupyter_home / "lab-settings"),
           "JUPYTERLAB_WORKSPACES_DIR": str(jupyter_home / "lab-workspaces"),
           "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    env.pop("PYTHONPATH", None)
    requirements = "binder/requirements.txt"
    index = extra_index(repo / requirements)
    if index and not reachable(index):
        # pip would retry the index for every package (minutes of back-off) and then need
        # the same wheel from elsewhere anyway: install from a copy without that line.
        requirements = str(scratch / "requirements-without-extra-index.txt")
        Path(requirements).write_text("".join(
            line for line in (repo / "binder" / "requirements.txt").read_text().splitlines(True)
            if not line.strip().startswith("--extra-index-url")))
        note = (f"{index} is not reachable from here: installed binder/requirements.txt without "
                "its --extra-index-url line, so torch==2.13.0+cpu came from pip's configured "
                "sources (see 'torch' below)")
        report["notes"].append(note)
        print("note: " + note)
    pip = [bindir / "python", "-m", "pip", "install"]
    install = pip + (["--no-cache-dir"] if args.no_cache else []) + \
        ["--report", scratch / "pip-report.json", "-r", requirements]
    result = run(install, env=env, cwd=repo, check=False)
    if result.returncode != 0:
        tail = (result.stdout + result.stderr)[-3000:]
        print(tail)
        if "torch" in tail and "matching distribution" in tail:
            raise CannotBuild("pip found no torch==2.13.0+cpu: the PyTorch CPU index is not "
                              "reachable and no local copy of that wheel is configured")
        raise CheckFailed("pip install -r binder/requirements.txt failed")
    installed = json.loads((scratch / "pip-report.json").read_text())["install"]
    torch_item = next(i for i in installed if i["metadata"]["name"] == "torch")
    torch_from = torch_item.get("download_info", {}).get("url", "?")
    report["torch"] = {"version": torch_item["metadata"]["version"], "from": torch_from}
    print(f"torch {torch_item['metadata']['version']} from {torch_from}")
    if index and index not in torch_from:
        note = f"torch came from {torch_from}, not from {index}"
        report["notes"].append(note)
        print("note: " + note)
    nvidia = sorted(i["metadata"]["name"] for i in installed
                    if i["metadata"]["name"].lower().startswith("nvidia"))
    if nvidia or "+cpu" not in torch_item["metadata"]["version"]:
        raise CheckFailed(f"not a CPU-only torch: {torch_item['metadata']['version']}, {nvidia}")

    step("binder/postBuild")
    print(run(["bash", "binder/postBuild"], env=env, cwd=repo).stdout.strip())
    run([bindir / "python", "-m", "pip", "check"], env=env, cwd=repo)

    step(f"execute notebook {NOTEBOOK} (solution version) in this environment")
    runner = """
import sys, nbformat
from nbclient import NotebookClient
nb = nbformat.read(sys.argv[1], as_version=4)
NotebookClient(nb, timeout=180, allow_errors=True, kernel_name="python3",
               resources={"metadata": {"path": sys.argv[2]}}).execute()
bad = [f"cell {i}: {o.get('ename', o.get('name'))}: {o.get('evalue', o.get('text', ''))[:300]}"
       for i, c in enumerate(nb.cells) for o in c.get("outputs", [])
       if o.output_type == "error" or (o.output_type == "stream" and o.name == "stderr")]
print("\\n".join(bad) or "no error, no stderr")
sys.exit(1 if bad else 0)
"""
    t0 = time.monotonic()
    work = scratch / "run"
    work.mkdir()
    nb_env = {**env, "TENSORCOURSE_DEVICE": "cpu", "MPLBACKEND": "agg"}
    solution = repo / "solutions" / NOTEBOOK / f"{NOTEBOOK}.ipynb"
    out = run([bindir / "python", "-c", runner, solution, work], env=nb_env, cwd=work,
              check=False, label=f"{bindir / 'python'} <nbclient runner> {solution}")
    print(out.stdout.strip()[-3000:])
    report["notebook_seconds"] = round(time.monotonic() - t0, 1)
    if out.returncode != 0:
        print(out.stderr.strip()[-3000:])
        raise CheckFailed(f"notebook {NOTEBOOK} failed in the Binder environment")

    step("JupyterLab from this environment: nbgrader's learner side only")
    report["jupyterlab"] = check_server(bindir, env, repo)

    step("size")
    apparent, disk = du_bytes(env_dir)
    torch_dir = next((env_dir / "lib").glob("python3*/site-packages/torch"))
    torch_apparent, _ = du_bytes(torch_dir)
    report["size"] = {"env_bytes": apparent, "env_disk_bytes": disk, "torch_bytes": torch_apparent,
                      "limit_bytes": SIZE_LIMIT}
    print(f"environment: {mib(apparent)} (disk usage {mib(disk)}), of which torch {mib(torch_apparent)}")
    if apparent > SIZE_LIMIT:
        raise CheckFailed(f"the Binder environment is {mib(apparent)}, over the 2 GB target")
    report["result"] = "ok"
    print("\nbinder check: OK")
    return 0


def check_server(bindir: Path, env: dict[str, str], repo: Path) -> dict:
    port, token = free_port(), "binder-check"
    base = f"http://127.0.0.1:{port}"
    cmd = [bindir / "python", "-m", "jupyterlab", "--ServerApp.open_browser=False",
           "--ServerApp.allow_root=True", f"--ServerApp.token={token}",
           f"--ServerApp.port={port}", "--ServerApp.port_retries=0", "--ServerApp.ip=127.0.0.1",
           f"--ServerApp.root_dir={repo}"]
    print("+ " + " ".join(str(c) for c in cmd))
    log = open(repo.parent / "jupyterlab.log", "w")  # closed in the finally below
    server = subprocess.Popen([str(c) for c in cmd], env={**env, "TENSORCOURSE_DEVICE": "cpu"},
                              cwd=repo, stdout=log, stderr=subprocess.STDOUT,
                              start_new_session=True)
    auth = {"Authorization": f"token {token}"}
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                if http(f"{base}/api/status", headers=auth, timeout=5)[0] == 200:
                    break
            except OSError:
                pass
            if server.poll() is not None or time.monotonic() > deadline:
                raise CheckFailed("JupyterLab did not start: see "
                                  f"{repo.parent / 'jupyterlab.log'}")
            time.sleep(0.5)
        status, page = http(f"{base}/lab", headers=auth)
        match = re.search(r'<script id="jupyter-config-data" type="application/json">(.*?)</script>',
                          page, re.DOTALL)
        if status != 200 or not match:
            raise CheckFailed(f"/lab answered {status} without its page config")
        disabled = json.loads(match.group(1)).get("disabledExtensions", [])
        print(f"disabled lab plugins: {disabled}")
        missing = [p for p in DISABLED if p not in disabled]
        if missing or KEPT in disabled:
            raise CheckFailed(f"lab plugins: {missing} should be disabled, {KEPT} enabled")
        status, body = http(f"{base}/lab/api/settings/@jupyterlab/apputils-extension:notification",
                            headers=auth)
        news = json.loads(body)["schema"]["properties"]["fetchNews"]["default"] \
            if status == 200 else None
        print(f"JupyterLab news fetching by default: {news!r} (postBuild sets 'false')")
        if news != "false":
            raise CheckFailed("postBuild's JupyterLab settings (no news) are not applied")
        formgrader = http(f"{base}/formgrader", headers=auth)[0]
        print(f"/formgrader answers {formgrader} (404: server extension disabled)")
        if formgrader != 404:
            raise CheckFailed("the formgrader server extension is still enabled")
        student = f"notebooks/{NOTEBOOK}/{NOTEBOOK}.ipynb"
        status, body = http(f"{base}/assignments/validate",
                            data=urllib.parse.urlencode({"path": student}).encode(),
                            headers={**auth, "Content-Type": "application/x-www-form-urlencoded"},
                            timeout=300)
        result = json.loads(body) if status == 200 else {}
        value = result.get("value") if isinstance(result.get("value"), dict) else {}
        failed = len(value.get("failed", []))
        print(f"Validate on {student}: HTTP {status}, success={result.get('success')}, "
              f"{failed} failing cells (unsolved exercises), changed={'changed' in value}")
        if status != 200 or not result.get("success") or not failed or "changed" in value \
                or "type_changed" in value:
            raise CheckFailed(f"Validate did not work on the student notebook: {body[:500]}")
        return {"disabled_plugins": disabled, "formgrader_status": formgrader, "fetch_news": news,
                "validate_failed_cells_in_unsolved_notebook": failed}
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()
        log.close()


if __name__ == "__main__":
    sys.exit(main())
