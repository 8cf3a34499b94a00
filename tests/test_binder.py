"""binder/: the Binder / JupyterHub (repo2docker) configuration, checked without Docker. Fast.

The full build (a fresh environment from binder/requirements.txt, postBuild, notebook 01,
JupyterLab's page config, Validate, the size) is ``binder/check.py``, a separate CI step
(``.ci/run``): it takes minutes. These tests check that configuration's promises cheaply.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from coursefiles import NOTEBOOKS, REPO

BINDER = REPO / "binder"
INSTRUCTOR_PLUGINS = {"formgrader", "create-assignment", "course-list"}
INSTRUCTOR_SERVER_EXTENSIONS = {"formgrader", "course_list"}


def _pins(path: Path) -> dict[str, str]:
    pins = {}
    for line in path.read_text().splitlines():
        line = line.split("#")[0].strip()
        if line and not line.startswith("-"):
            name, version = re.split(r"==", line)
            pins[name.strip().lower()] = version.strip()
    return pins


def test_binder_requirements_are_the_course_pins_with_a_cpu_only_torch():
    binder, course = _pins(BINDER / "requirements.txt"), _pins(REPO / "requirements.txt")
    text = (BINDER / "requirements.txt").read_text()
    assert "--extra-index-url https://download.pytorch.org/whl/cpu" in text
    assert binder["torch"] == course["torch"].split("+")[0] + "+cpu"
    differ = {n: (v, course[n]) for n, v in binder.items() if n != "torch" and course.get(n) != v}
    assert not differ, f"binder/requirements.txt and requirements.txt disagree: {differ}"
    # Binder is the learner's environment: the same projects as requirements.txt, no more, no less.
    assert set(binder) == set(course), set(binder) ^ set(course)
    assert not {"pytest", "ruff", "playwright"} & set(binder), "test tools do not belong in the image"


def test_every_runtime_dependency_is_pinned_for_binder():
    from importlib.metadata import requires

    deps = [d for d in requires("tensorcourse") or [] if "extra ==" not in d]
    names = {re.split(r"[<>=!~ ;\[]", d, maxsplit=1)[0].lower() for d in deps}
    assert names >= {"torch", "ipywidgets", "matplotlib", "numpy"}
    assert names <= set(_pins(BINDER / "requirements.txt")), \
        "postBuild's `pip install .` must not pull anything binder/requirements.txt does not pin"


def test_runtime_is_a_python_the_package_supports():
    runtime = (BINDER / "runtime.txt").read_text().strip()
    assert re.fullmatch(r"python-3\.\d+", runtime)
    assert int(runtime.split(".")[1]) >= 9


def test_postbuild_turns_off_the_instructor_tools_and_keeps_validate():
    text = (BINDER / "postBuild").read_text()
    assert os.access(BINDER / "postBuild", os.X_OK) and text.startswith("#!/usr/bin/env bash")
    plugins = set(re.search(r"for plugin in ([^;]+);", text).group(1).split())
    assert plugins == INSTRUCTOR_PLUGINS
    servers = set(re.search(r"for ext in ([^;]+);", text).group(1).split())
    assert servers == INSTRUCTOR_SERVER_EXTENSIONS
    assert "validate" not in re.sub(r"#.*", "", text)  # comments may mention it; code never
    assert subprocess.run(["bash", "-n", BINDER / "postBuild"]).returncode == 0


def test_the_disabled_names_exist_in_the_installed_nbgrader():
    """The names postBuild disables are nbgrader's own (a typo would disable nothing)."""
    bundle = Path(sys.prefix) / "share" / "jupyter" / "labextensions" / "@jupyter" / "nbgrader"
    if not bundle.is_dir():
        pytest.skip(f"nbgrader's lab extension is not installed under {sys.prefix}")
    code = "".join(p.read_text(errors="replace") for p in bundle.rglob("*.js"))
    for plugin in INSTRUCTOR_PLUGINS | {"validate-assignment"}:
        assert f'"@jupyter/nbgrader:{plugin}"' in code, plugin
    for ext in INSTRUCTOR_SERVER_EXTENSIONS | {"validate_assignment"}:
        assert importlib.util.find_spec(f"nbgrader.server_extensions.{ext}"), ext


# ---- binder/start ---------------------------------------------------------------------------

def _start(repo_dir: Path, home: Path, *command: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "REPO_DIR": str(repo_dir), "HOME": str(home)}
    return subprocess.run(["bash", BINDER / "start", *command], env=env, capture_output=True,
                          text=True, timeout=60)


def test_start_on_binder_leaves_the_repository_alone_and_runs_the_server(tmp_path):
    repo = tmp_path / "home"
    shutil.copytree(NOTEBOOKS, repo / "notebooks")
    before = sorted(p.relative_to(repo) for p in repo.rglob("*"))
    result = _start(repo, repo, "echo", "server", "--arg")
    assert result.returncode == 0 and result.stdout == "server --arg\n", result.stderr
    assert sorted(p.relative_to(repo) for p in repo.rglob("*")) == before


def test_start_on_a_jupyterhub_copies_new_notebooks_and_keeps_learners_work(tmp_path):
    repo, home = tmp_path / "srv-repo", tmp_path / "home"
    shutil.copytree(NOTEBOOKS, repo / "notebooks")
    home.mkdir()
    result = _start(repo, home, "true")
    assert result.returncode == 0, result.stderr
    released = sorted(p.relative_to(repo) for p in (repo / "notebooks").rglob("*.ipynb"))
    assert released and sorted(p.relative_to(home) for p in home.rglob("*.ipynb")) == released

    mine = home / released[0]
    mine.write_text("my work in progress")
    (home / released[-1]).unlink()  # deleted by the learner: comes back
    assert _start(repo, home, "true").returncode == 0
    assert mine.read_text() == "my work in progress"
    assert (home / released[-1]).read_bytes() == (repo / released[-1]).read_bytes()


def test_start_never_blocks_the_server(tmp_path):
    """No notebooks to copy, or no REPO_DIR at all: the server still starts."""
    assert _start(tmp_path / "missing", tmp_path, "echo", "ok").stdout == "ok\n"
    env = {k: v for k, v in os.environ.items() if k != "REPO_DIR"}
    result = subprocess.run(["bash", BINDER / "start", "echo", "ok"], env=env,
                            capture_output=True, text=True, timeout=60)
    assert result.stdout == "ok\n"
