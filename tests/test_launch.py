"""Launch links and the Colab setup cell: one setting, generated everywhere, tested on a fake Colab.

The setting is ``[tool.tensorcourse]`` in pyproject.toml (repository URL and branch).
``python -m autograder generate`` writes the README's badges and, at the top of every
student notebook, a badges cell and the Colab setup cell. Colab itself is not
reachable from CI: the setup cell is executed here with a fake ``google.colab``
module and a fake pip, and the exact pip command is asserted.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
import types

import nbformat
import pytest

from autograder.authoring import generate as gen
from autograder.authoring.verified import report_url, verified_markdown
from autograder.course import CourseError, Publication, _tool_table_fallback, publication
from coursefiles import REPO, assignments, pip_would_install, read, release_path
from tensorcourse import colab

PUB = publication()
ALL = assignments()


# ---- the setting and the URLs built from it ---------------------------------------------------

def test_the_setting_is_one_github_repository_and_branch():
    assert PUB.repository.startswith("https://github.com/") and PUB.owner_name.count("/") == 1
    assert PUB.branch
    # Python 3.9/3.10 read the table without tomllib: both readers agree on the real file.
    assert _tool_table_fallback((REPO / "pyproject.toml").read_text()) == \
        {"repository": PUB.repository, "branch": PUB.branch}


def test_url_formats():
    pub = Publication("https://github.com/someone/fork", "main")
    path = "notebooks/01-why-tensors/01-why-tensors.ipynb"
    assert gen.colab_url(pub, path) == ("https://colab.research.google.com/github/someone/fork/"
                                        "blob/main/notebooks/01-why-tensors/01-why-tensors.ipynb")
    assert gen.binder_url(pub, path) == ("https://mybinder.org/v2/gh/someone/fork/main"
                                         "?urlpath=lab/tree/notebooks/01-why-tensors/"
                                         "01-why-tensors.ipynb")
    # mybinder.org wants a branch with a slash URL-encoded in the path.
    assert "/v2/gh/someone/fork/feature%2Fwidgets?" in gen.binder_url(
        Publication("https://github.com/someone/fork", "feature/widgets"), path)
    assert colab.package_url(pub.repository, pub.branch) == "git+https://github.com/someone/fork@main"


@pytest.mark.parametrize("table, message", [
    ("", "must be a GitHub URL"),
    ('repository = "https://gitlab.com/a/b"\nbranch = "main"', "must be a GitHub URL"),
    ('repository = "https://github.com/a"\nbranch = "main"', "must be a GitHub URL"),
    ('repository = "https://github.com/a/b"\nbranch = "has space"', "git branch name"),
    ('repository = "https://github.com/a/b"', "git branch name"),
])
def test_a_bad_setting_is_a_clear_error(tmp_path, table, message):
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text(f"[project]\nname = 'x'\n\n[tool.tensorcourse]\n{table}\n")
    with pytest.raises(CourseError, match=message):
        publication(pyproject)


def test_a_git_suffix_and_trailing_slash_are_tolerated(tmp_path):
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text('[tool.tensorcourse]\nrepository = "https://github.com/a/b.git"\n'
                         'branch = "dev"  # a comment\n')
    assert publication(pyproject) == Publication("https://github.com/a/b", "dev")
    assert _tool_table_fallback(pyproject.read_text()) == \
        {"repository": "https://github.com/a/b.git", "branch": "dev"}


# ---- what generate wrote ------------------------------------------------------------------------

def _links(markdown: str) -> list[str]:
    return re.findall(r"\]\((https://[^)]+)\)", markdown)


def test_readme_badges_point_at_the_configured_repository():
    text = (REPO / "README.md").read_text()
    first = f"notebooks/{ALL[0]}/{ALL[0]}.ipynb"
    assert (REPO / first).is_file()
    assert gen.readme_badges(PUB, first) in text
    links = _links(text.split(gen.BADGES_START)[1].split(gen.BADGES_END)[0])
    assert links == [gen.COLAB_BADGE, gen.colab_url(PUB, first),
                     gen.BINDER_BADGE, gen.binder_url(PUB, first)]
    assert f"/github/{PUB.owner_name}/blob/{PUB.branch}/{first}" in links[1]
    assert f"/v2/gh/{PUB.owner_name}/" in links[3] and f"urlpath=lab/tree/{first}" in links[3]


@pytest.mark.parametrize("assignment", ALL)
def test_every_student_notebook_starts_with_badges_then_the_colab_setup_cell(assignment):
    path = f"notebooks/{assignment}/{assignment}.ipynb"
    nb = read(REPO / path)
    badges, setup = nb.cells[0], nb.cells[1]
    assert badges.cell_type == "markdown" and gen.is_launch_cell(badges)
    assert _links(badges.source) == [gen.COLAB_BADGE, gen.colab_url(PUB, path),
                                     gen.BINDER_BADGE, gen.binder_url(PUB, path), report_url(PUB)]
    assert "Change runtime type" in badges.source  # how to get a GPU on Colab
    assert verified_markdown(assignment) in badges.source  # the builds it was verified on
    assert setup.cell_type == "code" and gen.is_launch_cell(setup)
    assert setup.source == colab.setup_cell_source(PUB.repository, PUB.branch)
    assert "nbgrader" not in setup.metadata and "nbgrader" not in badges.metadata  # not graded
    assert len(setup.source.splitlines()) <= 12, "keep the setup cell short"
    assert not any(gen.is_launch_cell(c) for c in nb.cells[2:])


def test_a_fork_changes_one_setting_and_generate_follows(tmp_path, monkeypatch):
    fork = Publication("https://github.com/a-school/tio-fork", "autumn-term")
    monkeypatch.setattr(gen, "publication", lambda: fork)
    folder = gen.generate_into(ALL[0], tmp_path)
    nb = read(folder / f"{ALL[0]}.ipynb")
    assert gen.colab_url(fork, f"notebooks/{ALL[0]}/{ALL[0]}.ipynb") in nb.cells[0].source
    assert report_url(fork) in nb.cells[0].source
    assert "git+https://github.com/a-school/tio-fork@autumn-term" in nb.cells[1].source
    assert PUB.owner_name not in nbformat.writes(nb)
    readme = tmp_path / "README.md"
    readme.write_text("# Course\n\n" + gen.BADGES_START + "\nold\n" + gen.BADGES_END + "\n\nText.\n")
    assert gen.write_readme_badges(readme) is True
    assert "https://mybinder.org/v2/gh/a-school/tio-fork/autumn-term?" in readme.read_text()
    assert readme.read_text().endswith("\n\nText.\n")
    assert gen.write_readme_badges(readme) is False  # idempotent


def test_the_drift_check_covers_the_readme_badges(tmp_path, monkeypatch):
    readme = tmp_path / "README.md"
    first = f"notebooks/{ALL[0]}/{ALL[0]}.ipynb"
    readme.write_text(gen.readme_badges(Publication("https://github.com/old/place", "main"), first))
    monkeypatch.setattr(gen, "README", readme)
    assert gen.drift([]) == ["README.md: the badges block differs from [tool.tensorcourse] in "
                             "pyproject.toml"]
    readme.write_text(gen.readme_badges(PUB, first))
    assert gen.drift([]) == []


def test_a_readme_without_the_badges_block_is_a_clear_error(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text("# Course\n")
    with pytest.raises(CourseError, match="badges:start"):
        gen.write_readme_badges(readme)


# ---- the Colab setup cell, run on a simulated Colab -------------------------------------------

def _setup_source() -> str:
    """The setup cell exactly as learners get it (from the released notebook, not the template)."""
    return read(release_path(ALL[0])).cells[1].source


class FakeColab:
    """``google.colab`` as far as the setup cell uses it, plus a recording pip."""

    def __init__(self, monkeypatch, *, installed: bool, via: str = "module"):
        self.pip_calls: list[tuple[list[str], dict]] = []
        self.widget_manager_enabled = 0
        output = types.SimpleNamespace(enable_custom_widget_manager=self._enable)
        google = types.ModuleType("google")
        google.__path__ = []  # a package
        google_colab = types.ModuleType("google.colab")
        google_colab.output = output
        google.colab = google_colab
        if via == "module":
            monkeypatch.setitem(sys.modules, "google", google)
            monkeypatch.setitem(sys.modules, "google.colab", google_colab)
            monkeypatch.delenv(colab.COLAB_ENV_VAR, raising=False)
        else:  # Colab's environment variable; google.colab importable but not yet imported
            monkeypatch.setenv(colab.COLAB_ENV_VAR, "release-colab_20260101-060000_RC00")
            for name in ("google", "google.colab"):
                # set-then-delete, so that undoing removes what the cell imports
                monkeypatch.setitem(sys.modules, name, None)
                monkeypatch.delitem(sys.modules, name)
            monkeypatch.setattr(sys, "meta_path", [_Provide({"google": google,
                                                            "google.colab": google_colab})]
                                + sys.meta_path)
        real_find_spec = importlib.util.find_spec
        monkeypatch.setattr(importlib.util, "find_spec",
                            lambda name, *a: None if name == "tensorcourse" and not installed
                            else real_find_spec(name, *a))
        monkeypatch.setattr(subprocess, "run", self._run)

    def _enable(self):
        self.widget_manager_enabled += 1

    def _run(self, args, **kwargs):
        self.pip_calls.append((list(args), kwargs))
        return subprocess.CompletedProcess(args, 0)


class _Provide:
    """A meta-path finder serving given module objects (for ``from google.colab import output``)."""

    def __init__(self, modules: dict[str, types.ModuleType]):
        self.modules = modules

    def find_spec(self, name, path=None, target=None):
        if name not in self.modules:
            return None
        return importlib.util.spec_from_loader(name, self, is_package=name == "google")

    def create_module(self, spec):
        return self.modules[spec.name]

    def exec_module(self, module):
        pass


@pytest.mark.parametrize("via", ["module", "env"])
def test_on_colab_the_cell_installs_the_helper_without_deps_and_enables_widgets(monkeypatch, via):
    fake = FakeColab(monkeypatch, installed=False, via=via)
    assert colab.in_colab()  # the package's detection sees the same simulated Colab
    exec(compile(_setup_source(), "<colab setup cell>", "exec"), {})
    url = colab.package_url(PUB.repository, PUB.branch)
    assert url == f"git+{PUB.repository}@{PUB.branch}"
    assert fake.pip_calls == [(colab.pip_install_command(url), {"check": True})]
    assert fake.pip_calls[0][0] == [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                                    url]
    assert fake.widget_manager_enabled == 1


def test_on_colab_with_the_helper_already_installed_the_cell_only_enables_widgets(monkeypatch):
    fake = FakeColab(monkeypatch, installed=True)
    exec(compile(_setup_source(), "<colab setup cell>", "exec"), {})
    assert fake.pip_calls == []
    assert fake.widget_manager_enabled == 1


def test_outside_colab_the_cell_does_nothing(monkeypatch):
    monkeypatch.delenv(colab.COLAB_ENV_VAR, raising=False)
    monkeypatch.delitem(sys.modules, "google.colab", raising=False)
    calls = []
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: calls.append(a))
    namespace: dict = {}
    exec(compile(_setup_source(), "<colab setup cell>", "exec"), namespace)
    assert calls == []
    assert "google.colab" not in sys.modules and "output" not in namespace
    assert not colab.in_colab()


def test_in_colab_reads_modules_and_environment():
    assert colab.in_colab(modules={"google.colab": object()}, environ={})
    assert colab.in_colab(modules={}, environ={colab.COLAB_ENV_VAR: "x"})
    assert not colab.in_colab(modules={"google": object()}, environ={"COLAB": "1"})


def test_the_pip_command_never_upgrades_anything():
    command = colab.pip_install_command("git+https://github.com/a/b@main", python="python3")
    assert command == ["python3", "-m", "pip", "install", "--quiet", "--no-deps",
                       "git+https://github.com/a/b@main"]
    assert not {"-U", "--upgrade", "--force-reinstall"} & set(command)
    with pytest.raises(ValueError):
        colab.package_url("git@github.com:a/b.git", "main")


@pytest.mark.slow
def test_installing_the_helper_keeps_the_installed_torch_ipywidgets_matplotlib(tmp_path):
    """What pip would change, asked of pip itself (dry run, this environment as the stand-in for
    Colab's). With --no-deps it installs the helper alone; and even without it, deps already
    satisfying the package's ranges stay as they are. The source is this checkout, since GitHub
    is not reachable from CI."""
    for extra in (["--no-deps"], []):
        report = tmp_path / "report.json"
        result = subprocess.run([sys.executable, "-m", "pip", "install", "--dry-run", "--quiet",
                                 "--disable-pip-version-check", "--report", str(report), *extra,
                                 str(REPO)], capture_output=True, text=True, timeout=300)
        assert result.returncode == 0, result.stdout + result.stderr
        names = pip_would_install(report)
        assert names == ["tensorcourse"], f"pip {' '.join(extra)} would install {names}"


def test_the_helper_package_imports_without_optional_extras():
    """On Colab only the four runtime dependencies exist: the package must not need more."""
    code = ("import sys, tensorcourse, tensorcourse.viz, tensorcourse.colab; "
            "bad = sorted(m for m in ('nbgrader', 'playwright', 'pytest', 'jupyterlab') "
            "if m in sys.modules); print(bad); sys.exit(bool(bad))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            cwd=REPO, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.slow
def test_a_non_editable_install_ships_every_module(tmp_path):
    """Colab's `pip install git+...` and Binder's postBuild build a wheel: it must hold every
    module of the helper package and the autograder (a subpackage missing from the build
    configuration breaks `import tensorcourse` there, and only there)."""
    import shutil
    import zipfile

    # Build from a copy: setuptools leaves build/ behind, and a stale build/ hides mistakes.
    src = tmp_path / "src"
    for package in ("tensorcourse", "autograder"):
        shutil.copytree(REPO / package, src / package,
                        ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, src / name)
    result = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet",
                             "--disable-pip-version-check", "-w", str(tmp_path), str(src)],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    (wheel,) = tmp_path.glob("tensorcourse-*.whl")
    shipped = set(zipfile.ZipFile(wheel).namelist())
    expected = {str(p.relative_to(REPO)) for package in ("tensorcourse", "autograder")
                for p in (REPO / package).rglob("*.py") if "__pycache__" not in p.parts}
    assert expected - shipped == set(), f"missing from the wheel: {sorted(expected - shipped)}"
