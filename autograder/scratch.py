"""The sandbox's one writable host folder: measured while it runs, removed afterwards.

Contract:

* :func:`measure` walks a folder without recursion and without following links, through
  directory descriptors (so no path grows past ``PATH_MAX``), and stops as soon as the tree
  is over a bound: at most ``max_entries`` entries and ``max_depth`` levels are ever read, so
  a tree built to be slow or deep costs bounded work and is reported as over its limits.
* :func:`remove` deletes a folder whatever it holds (any depth, any permissions the sandbox
  set on its own files), never following a link out of it. It raises :class:`OSError` if the
  folder is still there afterwards, so a caller cannot believe it gone when it is not.
* :func:`private_folder` gives one kernel its folder under the temp directory, holds an
  ``flock`` on it while in use and removes it afterwards. A grader killed outright (SIGKILL,
  the OOM killer) cannot clean up, but its kernel dies with it (bubblewrap's
  ``--die-with-parent``) and the kernel's lock goes with the process: :func:`sweep_abandoned`,
  run before every kernel and at the end of every ``grade``, removes each folder of ours that
  nobody holds. A folder gets its name only once its lock is held (made under another name,
  locked, renamed), so a sweep never takes one that is being set up.
"""

from __future__ import annotations

import fcntl
import os
import stat
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

PREFIX = "tio-kernel-"
CLAIMING = "tio-claim-"
LOCK = "in-use.lock"


@dataclass
class Usage:
    bytes: int = 0
    entries: int = 0
    over: str = ""     # why the walk stopped early ("" when it read everything)


def measure(folder: Path, *, max_bytes: int, max_entries: int, max_depth: int = 16) -> Usage:
    """Bytes and entries under ``folder``, or the first bound it exceeds (see module doc)."""
    usage = Usage()
    try:
        top = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:
        return usage  # already gone
    stack: list[tuple[int, int]] = [(top, 0)]
    try:
        while stack:
            fd, depth = stack.pop()
            try:
                with os.scandir(fd) as entries:
                    for entry in entries:
                        usage.entries += 1
                        if usage.entries > max_entries:
                            usage.over = f"more than {max_entries} files and folders"
                            return usage
                        try:
                            info = entry.stat(follow_symlinks=False)
                        except OSError:
                            continue
                        usage.bytes += info.st_size
                        if usage.bytes > max_bytes:
                            usage.over = f"more than {max_bytes >> 20} MiB"
                            return usage
                        if stat.S_ISDIR(info.st_mode):
                            if depth + 1 >= max_depth:
                                usage.over = f"folders nested deeper than {max_depth} levels"
                                return usage
                            try:
                                sub = os.open(entry.name, os.O_RDONLY | os.O_DIRECTORY
                                              | os.O_NOFOLLOW, dir_fd=fd)
                            except OSError:
                                continue  # made unreadable: its size is bounded by the rest
                            stack.append((sub, depth + 1))
            finally:
                os.close(fd)
    finally:
        for fd, _ in stack:
            os.close(fd)
    return usage


def remove(folder: Path) -> None:
    """Delete ``folder`` and everything in it (see module doc)."""
    if not os.path.lexists(folder):
        return
    # First make every folder writable and searchable again (the sandbox may have set 000):
    # `chmod -R` walks without following links; then `rm -rf`, which handles any depth.
    subprocess.run(["chmod", "-R", "u+rwx", "--", str(folder)], capture_output=True, check=False)
    subprocess.run(["rm", "-rf", "--one-file-system", "--", str(folder)], capture_output=True,
                   check=False)
    if os.path.lexists(folder):
        raise OSError(f"could not remove the sandbox's folder {folder}")


@contextmanager
def private_folder() -> Iterator[Path]:
    """A new folder (mode 0700) for one kernel, locked while the block runs, removed after."""
    sweep_abandoned()
    claim = Path(tempfile.mkdtemp(prefix=CLAIMING))
    lock = os.open(claim / LOCK, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    work = claim
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        named = claim.with_name(PREFIX + claim.name[len(CLAIMING):])
        os.rename(claim, named)  # fails if a folder of that name holds anything (a lock file)
        work = named
        yield work
    finally:
        try:
            remove(work)
        finally:
            os.close(lock)


def sweep_abandoned(parent: Path | None = None) -> list[Path]:
    """Remove this user's kernel folders under ``parent`` (the temp directory) that nobody holds.

    Only folders named like ours, owned by this uid, not links, with a lock file no live
    process holds. Returns what was removed.
    """
    parent = Path(tempfile.gettempdir()) if parent is None else parent
    removed: list[Path] = []
    try:
        names = [n for n in os.listdir(parent) if n.startswith(PREFIX)]
    except OSError:
        return removed
    for name in names:
        folder = parent / name
        try:
            info = os.lstat(folder)
        except OSError:
            continue
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
            continue
        try:
            lock = os.open(folder / LOCK, os.O_RDONLY | os.O_NOFOLLOW)
        except OSError:
            continue  # no lock file: not a folder this code made
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(lock)
            continue  # a grader is using it
        try:
            remove(folder)
            removed.append(folder)
        except OSError:
            pass  # tried again by the next kernel
        finally:
            os.close(lock)
    return removed
