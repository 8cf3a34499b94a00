#!/usr/bin/env python3
"""Set up and run the Tensors Inside Out course with nothing but python3.

    python3 tio.py lab     # create .venv, install, open the course in JupyterLab
    python3 tio.py test    # create .venv, install, run every check (what CI runs)

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
USAGE = "usage: python3 tio.py lab [jupyter args...] | python3 tio.py test [pytest args...]"


def _bin(name: str) -> str:
    folder = "Scripts" if os.name == "nt" else "bin"
    return str(VENV / folder / name)


def _fingerprint() -> str:
    h = hashlib.sha256()
    for name in ("requirements.txt", "pyproject.toml"):
        h.update((ROOT / name).read_bytes())
    return h.hexdigest()


def ensure_environment() -> None:
    """Create the venv and install the pinned requirements plus the helper package."""
    if sys.version_info < (3, 9):  # noqa: UP036 - tell users of an old python3 clearly
        sys.exit(f"Python 3.9 or newer is needed; this is {sys.version.split()[0]}.")
    stamp = VENV / ".tio-installed"
    if stamp.exists() and stamp.read_text() == _fingerprint():
        return
    if not Path(_bin("python")).exists():
        print(f"Creating a virtual environment in {VENV} ...", flush=True)
        venv.create(VENV, with_pip=True)
    print("Installing the course's requirements (the first time takes a few minutes) ...",
          flush=True)
    pip = [_bin("python"), "-m", "pip", "install", "--disable-pip-version-check", "-q"]
    subprocess.run(pip + ["--upgrade", "pip"], check=True)
    subprocess.run(pip + ["-r", str(ROOT / "requirements.txt"), "-e", str(ROOT)], check=True)
    stamp.write_text(_fingerprint())


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in {"lab", "test"}:
        print(USAGE, file=sys.stderr)
        return 2
    command, rest = argv[0], argv[1:]
    try:
        ensure_environment()
    except subprocess.CalledProcessError as err:
        print(f"Installing failed ({err}). Check your network connection and that python3 "
              "can create virtual environments (Debian/Ubuntu: apt install python3-venv).",
              file=sys.stderr)
        return 1
    env = dict(os.environ)
    env["PATH"] = str(Path(_bin("python")).parent) + os.pathsep + env.get("PATH", "")
    if command == "lab":
        args = [_bin("jupyter"), "lab", FIRST_NOTEBOOK, *rest]
    else:
        args = [_bin("python"), "-m", "pytest", *(rest or ["-q"])]
    print("+ " + " ".join(args), flush=True)
    return subprocess.run(args, cwd=ROOT, env=env).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
