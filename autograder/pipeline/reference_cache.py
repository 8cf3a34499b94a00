"""The solutions' reference runs, kept between grading runs while nothing they depend on changed.

Before a class is graded, each notebook's solution is graded like a submission: its recorded
value checks are the oracle every learner's checks are decided against
(:mod:`autograder.judge.values`). That run costs as much as grading one more student, on every
``grade`` command: a regrade of one student, ``--retry-failed``, each section of a course. This
module keeps a reference the solution passed in full, keyed by everything that could change it:

* the exact solution and release bytes the reference run graded (an edited exercise or test);
* the grader's and the course package's source (``autograder/``, ``tensorcourse/``: the kernel's
  bootstrap and checks are there);
* the Python and every distribution installed in this environment (a new torch may compute
  differently), the machine's architecture and whether an NVIDIA device is present;
* the limits the kernel runs under.

Anything else is a different key, so a stale reference is never used; ``grade
--fresh-references`` runs the solutions again regardless.

The oracle is trusted, so where it is kept is checked like the kernels' own folders
(:mod:`autograder.sandbox.scratch`): ``$TIO_REFERENCE_CACHE`` if set (the test suite gives each
run its own), else ``~/.cache/tensors-inside-out/references`` (``$XDG_CACHE_HOME`` if set). The
folder is the grader's (mode 0700, not a link, on a path nobody else can swap) and outside
everything a sandbox mounts; a file is read only if it is a regular file of the grader's, not
a link, not too large, and names exactly the solution's tests. Whatever fails a check is a miss
(the solution runs again), never an error. A ``--no-sandbox`` run neither reads nor writes
here, and empties the folder afterwards: its submissions ran as the grader's user and could
have written to it.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import platform
import stat
import sys
import sysconfig
import tempfile
from dataclasses import asdict
from functools import lru_cache
from pathlib import Path

import nbformat

from ..judge.answers import is_test, meta
from ..sandbox.launch import Limits, mounted_folders
from ..sandbox.scratch import unsafe_ancestor

# Bump when the stored format or what a reference means changes.
FORMAT = 2
MAX_BYTES = 32 * 2**20     # a reference is kilobytes; anything near this is not one of ours
_PACKAGES = ("autograder", "tensorcourse")

Reference = dict[str, list[dict]]


def folder() -> Path:
    """Where references are kept: ``$TIO_REFERENCE_CACHE``, else the grader's user cache."""
    chosen = os.environ.get("TIO_REFERENCE_CACHE")
    if chosen:
        return Path(os.path.abspath(chosen))   # not resolved: a link there is refused, not followed
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(os.path.abspath(base)) / "tensors-inside-out" / "references"


@lru_cache(maxsize=1)
def _code_digest() -> str:
    """Every file of the grader and of the course package, by path and content."""
    root = Path(__file__).resolve().parents[2]
    h = hashlib.sha256()
    for package in _PACKAGES:
        for path in sorted(p for p in (root / package).rglob("*")
                           if p.is_file() and "__pycache__" not in p.parts):
            h.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


@lru_cache(maxsize=1)
def _environment() -> str:
    """Python, machine, GPU presence, and the distributions installed in this environment (read
    from its own site-packages, whatever ``sys.path`` holds at the moment)."""
    paths = sorted({sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]})
    dists = sorted({f"{d.metadata['Name']}=={d.version}".lower()
                    for d in importlib.metadata.distributions(path=paths) if d.metadata["Name"]})
    return json.dumps([sys.version, platform.machine(), Path("/dev/nvidiactl").exists(), dists])


def key(assignment: str, notebook: str, solution: bytes, release: bytes, limits: Limits) -> str:
    """The cache key of one notebook's reference: the bytes graded, under ``limits``."""
    h = hashlib.sha256(f"tio-reference-{FORMAT}\0{assignment}\0{notebook}\0".encode())
    for part in (solution, release, json.dumps(asdict(limits), sort_keys=True).encode(),
                 _code_digest().encode(), _environment().encode()):
        h.update(hashlib.sha256(part).digest())
    return h.hexdigest()


def tests_of(solution: bytes) -> list[str]:
    """The grade ids of the solution's test cells: what a kept reference must name, no more."""
    nb = nbformat.reads(solution.decode(), as_version=4)
    return sorted(meta(c)["grade_id"] for c in nb.cells if is_test(c) and meta(c).get("grade_id"))


class Cache:
    """The references folder, once it passed its checks (:meth:`open`)."""

    def __init__(self, where: Path) -> None:
        self.where = where

    @classmethod
    def open(cls) -> tuple[Cache | None, str]:
        """The cache, made if missing; or ``None`` and why it is not used (said to the
        instructor)."""
        where = folder()
        seen = [d for d in mounted_folders() if where.is_relative_to(d)]
        if seen:
            return None, (f"{where} is not used to keep references: every sandbox sees {seen[0]}, "
                          "and a kept reference holds the expected answers. Point "
                          "TIO_REFERENCE_CACHE at a folder of your own elsewhere.")
        try:
            if "TIO_REFERENCE_CACHE" not in os.environ:
                where.parent.mkdir(parents=True, exist_ok=True)
            os.mkdir(where, 0o700)   # only the last folder: its parent must exist and be safe
        except FileExistsError:
            pass
        except OSError as err:
            return None, f"references are not kept: {where} cannot be made ({err})."
        why = unsafe_ancestor(where.parent)
        info = os.lstat(where)
        if not why and not stat.S_ISDIR(info.st_mode):
            why = f"{where} is {'a link' if stat.S_ISLNK(info.st_mode) else 'not a folder'}"
        if not why and (info.st_uid != os.geteuid() or info.st_mode & 0o077):
            why = (f"{where} must be a folder of the grader's user with mode 700 (uid "
                   f"{info.st_uid}, mode {stat.S_IMODE(info.st_mode):o})")
        if why:
            return None, f"references are not kept: {why}."
        return cls(where), ""

    def load(self, cache_key: str, tests: list[str]) -> Reference | None:
        """The kept reference, or ``None``: none kept, or a file that fails a check (see the
        module's docstring): then the solution runs again."""
        try:
            fd = os.open(self.where / f"{cache_key}.json",
                         os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError:
            return None
        try:
            with os.fdopen(fd, "rb") as f:
                info = os.fstat(f.fileno())
                if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid() \
                        or info.st_mode & 0o077 or info.st_size > MAX_BYTES:
                    return None
                stored = json.loads(f.read(MAX_BYTES + 1))
            reference = stored["reference"]
            if stored["tests"] != tests or not isinstance(reference, dict) \
                    or not set(reference) <= set(tests):
                return None
            if not all(isinstance(v, list) and all(isinstance(r, dict) for r in v)
                       for v in reference.values()):
                return None
            return reference
        except Exception:  # noqa: BLE001 - any damage (deep nesting, huge, not JSON) is a miss
            return None

    def store(self, cache_key: str, tests: list[str], reference: Reference) -> None:
        """Keep a reference (atomically: a reader sees the old file or the new one, never half)."""
        try:
            with tempfile.NamedTemporaryFile("w", dir=self.where, prefix=".new-", delete=False) as f:
                json.dump({"tests": tests, "reference": reference}, f)
            os.replace(f.name, self.where / f"{cache_key}.json")
        except OSError:
            pass  # a cache that cannot be written only costs the next run its reference run

    def clear(self) -> None:
        """Forget every kept reference (after a run whose submissions were not sandboxed)."""
        for entry in os.scandir(self.where):
            try:
                os.unlink(entry.path)
            except OSError:
                pass
