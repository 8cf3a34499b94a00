"""Google Colab: how the course detects it, and the setup cell every student notebook starts with.

Colab opens a notebook straight from GitHub: the repository is not there and neither
is this package. So the first code cell of every student notebook (written by
``python -m autograder generate`` from :func:`setup_cell_source`) does, on Colab only:

1. ``pip install --no-deps git+<repository>@<branch>``: this package and nothing else.
   Colab already ships torch, ipywidgets, matplotlib and numpy in versions inside this
   package's ranges, and they must stay exactly as they are: a second torch would
   replace Colab's CUDA build, ipywidgets 8 would not match Colab's widget frontend.
   (A plain ``pip install`` without ``--upgrade`` would not upgrade them either while
   they satisfy the ranges; ``--no-deps`` makes that a guarantee and skips the
   resolver.) Skipped when the package is already importable, so "Run all" twice
   does not reinstall.
2. ``google.colab.output.enable_custom_widget_manager()``, so the explorers of
   :mod:`tensorcourse.viz` render.

Anywhere else (Binder, JupyterHub, a laptop) the cell does nothing. The cell cannot
import this module (it is what the cell installs), so it repeats :func:`in_colab`'s
test inline; ``tests/test_launch.py`` runs the released cell with a fake
``google.colab`` and a fake pip and checks that both agree.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

__all__ = ["COLAB_ENV_VAR", "in_colab", "package_url", "pip_install_command", "setup_cell_source"]

# Set in every Colab runtime; the module check alone misses a subprocess of the kernel.
COLAB_ENV_VAR = "COLAB_RELEASE_TAG"


def in_colab(modules: Mapping[str, object] | None = None,
             environ: Mapping[str, str] | None = None) -> bool:
    """True inside a Google Colab runtime: ``google.colab`` is imported or Colab's env var is set.

    ``modules`` and ``environ`` default to ``sys.modules`` and ``os.environ`` (tests pass
    their own to simulate Colab).
    """
    modules = sys.modules if modules is None else modules
    environ = os.environ if environ is None else environ
    return "google.colab" in modules or COLAB_ENV_VAR in environ


def package_url(repository: str, branch: str) -> str:
    """What pip installs on Colab: ``git+https://github.com/OWNER/NAME@BRANCH``."""
    if not repository.startswith("https://"):
        raise ValueError(f"repository must be an https:// URL, got {repository!r}")
    if not branch or any(c.isspace() for c in branch):
        raise ValueError(f"branch must be a git branch name, got {branch!r}")
    return f"git+{repository}@{branch}"


def pip_install_command(url: str, python: str | None = None) -> list[str]:
    """The exact command the setup cell runs on Colab (``python`` defaults to this interpreter)."""
    return [python or sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", url]


_CELL = '''\
# Google Colab only (does nothing anywhere else): install the course's helper package
# without touching Colab's own torch, ipywidgets or matplotlib, and turn on widgets.
import os, sys
if "google.colab" in sys.modules or "{env_var}" in os.environ:
    import importlib, importlib.util, subprocess
    if importlib.util.find_spec("tensorcourse") is None:
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                        "{url}"], check=True)
        importlib.invalidate_caches()
    from google.colab import output
    output.enable_custom_widget_manager()'''


def setup_cell_source(repository: str, branch: str) -> str:
    """Source of the Colab setup cell for a course published at ``repository``/``branch``."""
    return _CELL.format(env_var=COLAB_ENV_VAR, url=package_url(repository, branch))
