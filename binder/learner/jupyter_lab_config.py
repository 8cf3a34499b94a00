"""JupyterLab as a learner should see the course (used by `python3 tio.py lab`).

In your own environment, from the repository root:

    jupyter lab --config=binder/learner/jupyter_lab_config.py

- The file browser is rooted at ``notebooks/``, so every notebook is reachable, and
  notebook 01 opens first.
- nbgrader's instructor side is off: the formgrader, create-assignment, course-list and
  assignment-list plugins (``labconfig/page_config.json`` next to this file) and their
  server extensions, which log errors when no course is set up (no ``nbgrader_config.py``,
  a course root outside the server root). The learner keeps the Validate button.

Instructors: run plain ``jupyter lab`` from the repository root to get nbgrader's tools.
"""

import os
from pathlib import Path

HERE = Path(__file__).resolve().parent
c = get_config()  # noqa: F821 - provided by traitlets when it loads this file

c.ServerApp.root_dir = str(HERE.parent.parent / "notebooks")
c.LabApp.default_url = "/lab/tree/01-why-tensors/01-why-tensors.ipynb"
c.ServerApp.jpserver_extensions = {f"nbgrader.server_extensions.{name}": False
                                   for name in ("formgrader", "course_list", "assignment_list")}
# JupyterLab reads which plugins are disabled from labconfig/page_config.json in every
# Jupyter config directory; the environment variable puts this folder first. It is read
# when the page is served, so setting it here (at startup) is in time.
os.environ["JUPYTER_CONFIG_PATH"] = os.pathsep.join(
    p for p in (str(HERE), os.environ.get("JUPYTER_CONFIG_PATH", "")) if p)
