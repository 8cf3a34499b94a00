"""A new learner's first hour: the README's two ways to open the course, run for real.

`python3 tio.py lab` and the two "own environment" lines of the README must open JupyterLab
rooted where every notebook is reachable, with notebook 01 open, nbgrader's instructor tools
off and no nbgrader errors in the log, as a normal user and as root. The servers started here
are bounded (a startup deadline) and always stopped.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from coursefiles import NOTEBOOKS, REPO, assignments, pip_would_install, predict_exercises

TOKEN = "first-hour"
INSTRUCTOR_PLUGINS = ["@jupyter/nbgrader:formgrader", "@jupyter/nbgrader:create-assignment",
                      "@jupyter/nbgrader:course-list", "@jupyter/nbgrader:assignment-list"]
NBGRADER_ERRORS = ["not a subdirectory", "nbgrader_config.py", "Traceback"]


def _tio():
    spec = importlib.util.spec_from_file_location("tio", REPO / "tio.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _readme_section(title: str) -> str:
    text = (REPO / "README.md").read_text()
    start = text.index(title)
    end = text.find("\n## ", start + len(title))
    return text[start:end]


def _bash_blocks(markdown: str) -> list[list[str]]:
    return [[line for line in block.strip().splitlines()]
            for block in re.findall(r"```bash\n(.*?)```", markdown, flags=re.S)]


def _own_environment_lines() -> list[str]:
    section = _readme_section("### In your own environment")
    (block,) = _bash_blocks(section)
    return block


# ---- the command tio.py builds -----------------------------------------------------------------

def test_lab_uses_the_learner_config_and_passes_arguments_through():
    tio = _tio()
    args = tio.lab_command(["--port", "9999", "--no-browser"], as_root=False)
    assert args[:2] == [tio._bin("jupyter"), "lab"]
    assert args[2] == f"--config={REPO / 'binder' / 'learner' / 'jupyter_lab_config.py'}"
    assert args[3:] == ["--port", "9999", "--no-browser"]  # the user's arguments, last, intact
    assert "--allow-root" not in args
    # No notebook path as an argument: with one, Jupyter roots the server at its folder and
    # notebooks 02-06 cannot be reached from the file browser.
    assert not any(a.endswith(".ipynb") for a in args)


def test_as_root_lab_adds_allow_root_once():
    tio = _tio()
    assert tio.lab_command([], as_root=True)[-1] == "--allow-root"
    assert tio.lab_command(["--allow-root"], as_root=True).count("--allow-root") == 1


def test_the_readme_names_the_lab_command_and_the_two_own_environment_lines():
    start = _readme_section("## Start learning")
    assert _bash_blocks(start)[0] == ["python3 tio.py lab"]
    assert "--allow-root" in start and "go to JupyterLab" in start
    install, launch = _own_environment_lines()
    assert install == "python -m pip install -r requirements.txt -e ."
    assert launch == "jupyter lab --config=binder/learner/jupyter_lab_config.py"


# ---- the learner's environment: what `lab` installs --------------------------------------------

LEARNER = (REPO / "requirements.txt").read_text()


def _learner(**kwargs) -> list[str]:
    text = _tio().learner_requirements(text=LEARNER, **kwargs)
    return [line for line in text.splitlines() if line.strip() and not line.startswith("#")]


def test_lab_takes_the_cpu_only_torch_and_no_triton_on_linux_without_a_gpu():
    lines = _learner(gpu=False, triton=False, linux_x86=True, index_reachable=True)
    torch_pin = next(line for line in LEARNER.splitlines() if line.startswith("torch=="))
    assert torch_pin + "+cpu" in lines and torch_pin not in lines
    assert "--extra-index-url https://download.pytorch.org/whl/cpu" in lines
    assert not [line for line in lines if line.startswith("triton")]
    # ... and never the instructor's or the tests' tools
    tools = {"dask", "distributed", "copydetect", "pytest", "playwright", "sphinx", "ruff"}
    assert not {re.split(r"[=<> ;]", line)[0] for line in lines} & tools


def test_lab_adds_triton_when_asked_and_keeps_pypis_torch_with_a_gpu_or_off_linux():
    assert any(line.startswith("triton==") for line in
               _learner(gpu=False, triton=True, linux_x86=True, index_reachable=True))
    for kwargs in ({"gpu": True, "linux_x86": True}, {"gpu": False, "linux_x86": False}):
        lines = _learner(triton=False, index_reachable=True, **kwargs)
        assert next(line for line in LEARNER.splitlines() if line.startswith("torch==")) in lines
        assert not any("+cpu" in line or "extra-index-url" in line for line in lines)
    assert any(line.startswith("triton==") for line in _learner(gpu=True, triton=False, linux_x86=True))


def test_an_unreachable_cpu_index_is_left_out_so_a_local_wheel_can_serve():
    lines = _learner(gpu=False, triton=False, linux_x86=True, index_reachable=False)
    assert not any("extra-index-url" in line for line in lines)
    assert any(line.endswith("+cpu") and line.startswith("torch==") for line in lines)


def test_tio_torch_overrides_the_gpu_detection_and_refuses_a_typo(monkeypatch):
    tio = _tio()
    monkeypatch.setenv("TIO_TORCH", "cuda")
    assert tio.has_nvidia_gpu() is True
    monkeypatch.setenv("TIO_TORCH", "cpu")
    assert tio.has_nvidia_gpu() is False
    monkeypatch.setenv("TIO_TORCH", "gpu")
    with pytest.raises(SystemExit, match="'cpu' or 'cuda'"):
        tio.has_nvidia_gpu()


def test_lab_becomes_jupyterlab_so_ctrl_c_and_sigterm_stop_the_server(monkeypatch, capsys):
    """`lab` replaces itself with JupyterLab (exec): no tio.py process is left between the
    terminal and the server to die alone and leave it running."""
    tio = _tio()
    calls = {}
    monkeypatch.setattr(tio, "ensure_environment", lambda *a, **k: calls.setdefault("installed", k))
    monkeypatch.setattr(tio, "describe_learner_environment", lambda *a, **k: "size")

    def fake_exec(path, args, env):
        calls["exec"] = (path, args)
        raise SystemExit(0)

    monkeypatch.setattr(tio.os, "execve", fake_exec)
    monkeypatch.setattr(tio.os, "chdir", lambda path: None)
    with pytest.raises(SystemExit):
        tio.main(["lab", "--triton", "--no-browser"])
    path, args = calls["exec"]
    assert path == tio._bin("jupyter") and args[1] == "lab" and args[-1] == "--no-browser"
    assert "--triton" not in args and calls["installed"] == {"name": "learner-triton"}


def test_lab_install_only_prints_the_size_and_where_the_rest_lives(tmp_path):
    tio = _tio()
    site = tmp_path / "lib" / "python3" / "site-packages" / "torch"
    site.mkdir(parents=True)
    (site / "lib.so").write_bytes(b"x" * 300_000)
    text = tio.describe_learner_environment(tmp_path, gpu=False, triton=False)
    assert f"in {tmp_path}" in text and "torch" in text
    assert "pip install -e .[grading]" in text and "python3 tio.py test" in text
    assert "--triton" in text if sys.platform.startswith("linux") else True


# ---- JupyterLab started for real ------------------------------------------------------------------

def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str) -> tuple[int, str, str]:
    """(status, final URL, body) without following redirects."""
    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args, **kwargs):
            return None
    opener = urllib.request.build_opener(NoRedirect)
    try:
        with opener.open(url, timeout=10) as response:
            return response.status, response.geturl(), response.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.headers.get("Location", ""), ""


def _serve_and_check(command: list[str], *, cwd: Path, tmp_path: Path, env: dict | None = None
                     ) -> str:
    """Start ``command`` (a JupyterLab command line), check what a learner gets, stop it.

    Returns the server log."""
    port = _free_port()
    environ = dict(os.environ if env is None else env)
    # A private runtime and user config dir: no stray server files, no user settings.
    environ.update(JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"),
                   JUPYTER_CONFIG_DIR=str(tmp_path / "user-config"))
    extra = ["--no-browser", f"--port={port}", "--ServerApp.port_retries=0",
             "--ServerApp.ip=127.0.0.1", f"--IdentityProvider.token={TOKEN}"]
    log_path = tmp_path / "lab.log"
    with log_path.open("w") as log:
        server = subprocess.Popen(command + extra, cwd=cwd, env=environ, stdout=log,
                                  stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            assert server.poll() is None, "JupyterLab exited:\n" + log_path.read_text()
            try:
                if _get(f"{base}/api/status?token={TOKEN}")[0] == 200:
                    break
            except OSError:
                pass
            assert time.monotonic() < deadline, "JupyterLab did not start:\n" + log_path.read_text()
            time.sleep(0.5)

        # Rooted at notebooks/: every course notebook is in the file browser.
        status, _, body = _get(f"{base}/api/contents?token={TOKEN}")
        assert status == 200
        listed = {item["name"] for item in json.loads(body)["content"]}
        released = sorted(path.parent.name for path in NOTEBOOKS.glob("*/*.ipynb"))
        assert len(released) >= 6 and set(released) <= listed, f"the file browser shows {sorted(listed)}"
        for name in released:
            status, _, _ = _get(f"{base}/api/contents/{name}/{name}.ipynb?content=0&token={TOKEN}")
            assert status == 200, f"{name} cannot be opened"
        # Notebook 01 opens first.
        status, location, _ = _get(f"{base}/?token={TOKEN}")
        assert status in (301, 302) and "/lab/tree/01-why-tensors/01-why-tensors.ipynb" in location
        # The learner's view: nbgrader's instructor plugins disabled, Validate kept, ...
        status, _, page = _get(f"{base}/lab?token={TOKEN}")
        config = json.loads(re.search(r'id="jupyter-config-data"[^>]*>\s*(\{.*?\})\s*</script>',
                                      page, flags=re.S).group(1))
        disabled = config["disabledExtensions"]
        assert all(plugin in disabled for plugin in INSTRUCTOR_PLUGINS), disabled
        assert "@jupyter/nbgrader:validate-assignment" not in disabled
        # ... and the formgrader's server side is not there at all.
        assert _get(f"{base}/formgrader?token={TOKEN}")[0] == 404
        log = log_path.read_text()  # what it logged while serving (stopping logs at [C] level)
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()
    for text in NBGRADER_ERRORS:
        assert text not in log, f"the server log mentions {text!r}:\n{log}"
    assert not re.search(r"^\[(E|C) ", log, flags=re.M), f"errors in the server log:\n{log}"
    return log


def _with_venv_path(env: dict) -> dict:
    env = dict(env)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    return env


@pytest.mark.slow
def test_tio_lab_opens_every_notebook_with_a_clean_learner_view(tmp_path):
    """What `python3 tio.py lab` runs (its environment is this interpreter's), from elsewhere:
    the command must not depend on the current directory."""
    tio = _tio()
    command = tio.lab_command([])
    command[0] = str(Path(sys.executable).parent / "jupyter")
    _serve_and_check(command, cwd=tmp_path, tmp_path=tmp_path,
                     env=_with_venv_path(dict(os.environ)))


def _as_normal_user() -> list[str] | None:
    """A prefix that runs a command as an unprivileged user, when we are root and can."""
    if getattr(os, "geteuid", lambda: -1)() != 0:
        return []
    for tool in ("setpriv", "runuser"):
        if subprocess.run(["which", tool], capture_output=True).returncode == 0:
            return (["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
                    if tool == "setpriv" else ["runuser", "-u", "nobody", "--"])
    return None


@pytest.mark.slow
def test_the_readme_lines_open_the_course_as_root_and_as_a_normal_user(tmp_path):
    """The README's second line, from the repository root, with the environment on PATH.
    As root, with --allow-root as the README says; as an unprivileged user, as written."""
    _, launch = _own_environment_lines()
    command = shlex.split(launch)
    env = _with_venv_path(dict(os.environ))
    as_root = getattr(os, "geteuid", lambda: -1)() == 0
    runs = [("root" if as_root else "user", command + (["--allow-root"] if as_root else []), [])]
    prefix = _as_normal_user()
    unreadable = ""
    if as_root and prefix:
        # A clone inside a folder private to root (`mktemp -d` makes them 0700) cannot be read by
        # an unprivileged user at all: that half cannot run there, and says so.
        probe = subprocess.run(prefix + [sys.executable, "-c", f"open({str(REPO / 'README.md')!r}).close()"],
                               capture_output=True, text=True)
        if probe.returncode != 0:
            unreadable = (f"the unprivileged user cannot read {REPO} (a parent folder is private "
                          "to root); ran as root only")
            prefix = None
    if as_root and prefix:
        # The unprivileged user reads the repository and writes only to a folder of its own
        # (pytest's tmp_path is private to root).
        own = Path(tempfile.mkdtemp(prefix="tio-first-hour-"))
        os.chmod(own, 0o777)
        runs.append(("user", prefix + command, ["HOME", str(own)]))
    try:
        for who, cmd, home in runs:
            run_env = dict(env)
            folder = tmp_path / who
            if home:
                run_env[home[0]] = home[1]
                folder = Path(home[1]) / "lab"
            folder.mkdir(exist_ok=True)
            os.chmod(folder, 0o777)
            _serve_and_check(cmd, cwd=REPO, tmp_path=folder, env=run_env)
    finally:
        if as_root and prefix:
            shutil.rmtree(own, ignore_errors=True)
    if unreadable:
        pytest.skip(unreadable)
    if as_root and not prefix:
        pytest.skip("ran as root only: no setpriv/runuser to try an unprivileged user")


@pytest.mark.slow
def test_the_readme_install_line_resolves_in_this_environment(tmp_path):
    """The first line, as pip would run it (a dry run: this environment has the pins, so pip
    must have nothing to install but the helper package itself, and what tio.py removed from
    the test environment after installing it: TEST_ENVIRONMENT_DROPS)."""
    install, _ = _own_environment_lines()
    args = shlex.split(install)
    assert args[:4] == ["python", "-m", "pip", "install"]
    report = tmp_path / "report.json"
    result = subprocess.run([sys.executable, *args[1:], "--dry-run", "--quiet",
                             "--disable-pip-version-check", "--report", str(report)],
                            cwd=REPO, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    names = pip_would_install(report)
    assert names == ["tensorcourse"], f"pip would install {names}"
    assert (NOTEBOOKS / "01-why-tensors" / "01-why-tensors.ipynb").is_file()


# ---- predict exercises: a self-check after committing, without weakening the graded test ------



@pytest.mark.parametrize("folder", ["solutions", "notebooks"])
@pytest.mark.parametrize("assignment", assignments())
def test_every_predict_exercise_is_followed_by_an_ungraded_check_yourself(folder, assignment):
    import nbformat

    nb = nbformat.read(REPO / folder / assignment / f"{assignment}.ipynb", as_version=4)
    tests = predict_exercises(nb)
    assert tests, f"{assignment}: no predict exercise found"
    for i in tests:
        text, check = nb.cells[i + 1], nb.cells[i + 2]
        assert text.cell_type == "markdown" and "**Check yourself.**" in text.source, (assignment, i)
        assert check.cell_type == "code" and "tc.check.reveal(" in check.source, (assignment, i)
        for cell in (text, check):   # not graded, not locked: nbgrader ignores them
            assert "nbgrader" not in cell.metadata, (assignment, i)


def test_the_check_reveals_nothing_before_the_learner_commits(capsys):
    """The released template (None answers, or (None, None) pairs as in notebooks 02 and 06,
    even half filled in) prints a request to commit first, not the truth."""
    import torch

    import tensorcourse as tc

    truth = {"a": 1, "b": 2}
    assert tc.check.reveal({"a": None, "b": None}, truth, name="p") is None
    out = capsys.readouterr().out
    assert "Commit to every answer first" in out and "truth" not in out
    pairs = {"a": ((3,), torch.float32), "b": ((2, 2), torch.int64)}
    for template in ({"a": (None, None), "b": (None, None)},
                     {"a": ((3,), None), "b": ((2, 2), torch.int64)}):
        assert tc.check.reveal(template, pairs, name="p") is None
        out = capsys.readouterr().out
        assert "Commit to every answer first" in out and "float32" not in out
    assert tc.check.reveal({"a": 1, "b": 3}, truth, name="p") is None
    assert "1 of 2 right" in capsys.readouterr().out


def test_quick_runs_the_tests_a_change_touches():
    """`tio.py test --quick` (#32's inner loop): a changed notebook selects its own run,
    release and wrong-answer tests; a changed module, the test files that name it."""
    tio = _tio()
    runs = tio.quick_runs(["solutions/03-indexing-and-views/03-indexing-and-views.ipynb",
                           "tests/wrong_answers/a05_memory_and_performance.py",
                           "autograder/sandbox/flood.py", "tensorcourse/variants/spec.py", "README.md"])
    assert runs[0] == [*tio.NOTEBOOK_TESTS, "-k",
                       "03-indexing-and-views or 05-memory-and-performance"]
    assert {"tests/test_flood.py", "tests/test_grading_sandbox.py",
            "tests/test_variants.py"} <= set(runs[1])
    assert "tests/test_term.py" not in runs[1]   # it imports the pipeline, not the sandbox
    assert "tests/test_notebooks.py" not in runs[1]
    assert tio.quick_runs(["README.md"]) == []


def test_the_suite_prints_each_stages_time(monkeypatch):
    tio = _tio()
    clock = iter([0.0, 61.0, 61.0, 1000.0])
    monkeypatch.setattr(tio.time, "monotonic", lambda: next(clock))
    stages = tio.Stages()
    stages.start("1/4 pytest: everything")
    stages.start("2/4 ipywidgets 7.7")
    assert stages.summary().splitlines() == [
        "==== stage times", "    1 m 01 s  1/4 pytest", "   15 m 39 s  2/4 ipywidgets 7.7",
        "   16 m 40 s  in all"]
