"""The sandbox's one writable host folder: measured while it runs, removed afterwards.

Contract:

* :func:`measure` walks a folder without recursion and without following links, through
  directory descriptors (so no path grows past ``PATH_MAX``), and stops as soon as the tree
  is over a bound: at most ``max_entries`` entries and ``max_depth`` levels are ever read, so
  a tree built to be slow or deep costs bounded work and is reported as over its limits.
* :func:`remove` deletes a folder whatever it holds (any depth, any permissions the sandbox
  set on its own files), never following a link out of it. It raises :class:`OSError` if the
  folder is still there afterwards, so a caller cannot believe it gone when it is not.
"""

from __future__ import annotations

import os
import stat
import subprocess
from dataclasses import dataclass
from pathlib import Path


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
