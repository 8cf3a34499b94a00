"""The solutions' reference runs, kept between grading runs while nothing they depend on changed.

Before a class is graded, each notebook's solution is graded like a submission: its recorded
value checks are the oracle every learner's checks are decided against
(:mod:`autograder.judge.values`). That run costs as much as grading one more student, on every
``grade`` command: a regrade of one student, ``--retry-failed``, each section of a course. This
module keeps a reference the solution passed in full, keyed by everything that could change it:

* the solution's and the release's notebook bytes (an edited exercise or hidden test);
* the grader's and the course package's source (``autograder/``, ``tensorcourse/``: the kernel's
  bootstrap and checks are there);
* the Python and every installed distribution's version (a new torch may compute differently),
  the machine's architecture and whether an NVIDIA device is present;
* the limits the kernel runs under.

Anything else is a different key, so a stale reference is never used; ``grade
--fresh-references`` runs the solutions again regardless. Only references of sandboxed runs are
kept: an unsandboxed submission runs as the grader's user and could write here.

The cache is a folder of JSON files, ``$TIO_REFERENCE_CACHE`` if set (the test suite gives each
run its own), else under the grader's user cache (``$XDG_CACHE_HOME`` or ``~/.cache``, then
``tensors-inside-out/references``); created private to that user (0700), hidden from every
sandbox. A file that cannot be read is a miss, never an error: the solution runs again.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import platform
import sys
import tempfile
from dataclasses import asdict
from functools import lru_cache
from pathlib import Path

from ..course import NOTEBOOKS, SOLUTIONS
from ..sandbox.launch import Limits

# Bump when the stored format or what a reference means changes.
FORMAT = 1
_PACKAGES = ("autograder", "tensorcourse")

Reference = dict[str, list[dict]]


def folder() -> Path:
    """Where references are kept: ``$TIO_REFERENCE_CACHE``, else the grader's user cache."""
    chosen = os.environ.get("TIO_REFERENCE_CACHE")
    if chosen:
        return Path(chosen).resolve()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base).resolve() / "tensors-inside-out" / "references"


@lru_cache(maxsize=1)
def _code_digest() -> str:
    """Every Python file of the grader and of the course package, by path and content."""
    root = Path(__file__).resolve().parents[2]
    h = hashlib.sha256()
    for package in _PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            h.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


@lru_cache(maxsize=1)
def _environment() -> str:
    dists = sorted({f"{d.metadata['Name']}=={d.version}".lower()
                    for d in importlib.metadata.distributions() if d.metadata["Name"]})
    return json.dumps([sys.version, platform.machine(), Path("/dev/nvidiactl").exists(), dists])


def key(assignment: str, notebook: str, limits: Limits) -> str:
    """The cache key of one notebook's reference under ``limits`` (a hex digest)."""
    h = hashlib.sha256(f"tio-reference-{FORMAT}\0{assignment}\0{notebook}\0".encode())
    for base in (SOLUTIONS, NOTEBOOKS):
        h.update((base / assignment / f"{notebook}.ipynb").read_bytes() + b"\0")
    h.update(json.dumps(asdict(limits), sort_keys=True).encode())
    h.update(_code_digest().encode() + _environment().encode())
    return h.hexdigest()


def _private(path: Path) -> bool:
    """Ours, and writable by nobody else: a folder others can write to could hand the grader a
    forged oracle (``$TIO_REFERENCE_CACHE`` may name any folder)."""
    try:
        st = path.stat()
    except OSError:
        return False
    return st.st_uid == os.geteuid() and not st.st_mode & 0o022


def load(cache_key: str) -> Reference | None:
    """The stored reference, or ``None`` (none stored, unreadable, or in a folder or file others
    could have written: then the solution runs again)."""
    where = folder()
    path = where / f"{cache_key}.json"
    if not (_private(where) and _private(path)):
        return None
    try:
        stored = json.loads(path.read_text())
        reference = stored["reference"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not (isinstance(reference, dict) and all(
            isinstance(v, list) and all(isinstance(r, dict) for r in v) for v in reference.values())):
        return None
    return reference


def store(cache_key: str, assignment: str, notebook: str, reference: Reference) -> None:
    """Keep a reference (atomically: a reader sees the old file or the new one, never half)."""
    where = folder()
    try:
        where.mkdir(parents=True, exist_ok=True, mode=0o700)
        if not _private(where):
            return
        with tempfile.NamedTemporaryFile("w", dir=where, suffix=".tmp", delete=False) as f:
            json.dump({"assignment": assignment, "notebook": notebook,
                       "reference": reference}, f)
        os.replace(f.name, where / f"{cache_key}.json")
    except OSError:
        pass  # a cache that cannot be written only costs the next run its reference run
