"""The sandbox's one writable host folder: measured while it runs, removed afterwards.

Contract:

* :func:`measure` walks a folder without recursion and without following links, through
  directory descriptors (so no path grows past ``PATH_MAX``), and stops as soon as the tree
  is over a bound: at most ``max_entries`` entries and ``max_depth`` levels are ever read, so
  a tree built to be slow or deep costs bounded work and is reported as over its limits.
* :func:`remove` deletes a folder whatever it holds (any depth, any permissions the sandbox
  set on its own files), never following a link out of it. It raises :class:`OSError` if the
  folder is still there afterwards, so a caller cannot believe it gone when it is not.
* :func:`private_folder` gives one kernel its folder, inside this user's private
  :func:`kernel_parent` (so no other local user can plant, block or list names there), holds an
  ``flock`` on it while in use and removes it afterwards. A grader killed outright (SIGKILL,
  the OOM killer) cannot clean up, but its kernel dies with it (bubblewrap's
  ``--die-with-parent``) and the lock goes with the process: :func:`sweep_abandoned`, run before
  every kernel and at the end of every ``grade``, removes each folder there that nobody holds.
  The names say the state (see :func:`private_folder`), so a sweep never takes a folder that
  is being set up or used, and always finds one whose removal was cut short.
"""

from __future__ import annotations

import fcntl
import os
import stat
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

PARENT = "tio-"          # + uid: the one folder in the temp directory, see kernel_parent
# Names are short: a kernel's sockets are $TMPDIR/tio-UID/k-XXXXXXXX/sock/k-N (launch.py), and
# a socket's path has at most 107 bytes (the old layout, $TMPDIR/tio-XXXXXXXX/sock/kernel-N,
# was as long).
PREFIX = "k-"            # a kernel's folder, in use while its lock is held
CLAIMING = "new-"        # being set up (no lock yet)
TRASH = "rm-"            # being removed
LOCK = "in-use.lock"
CLAIM_STALE = 3600       # seconds: a claim is named within milliseconds, unless its owner died
SOCKET_TAIL = len("/k-XXXXXXXX/sock/k-N")
MAX_SOCKET_PATH = 107


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
                                # made unreadable (chmod 000 by the sandbox's user, who is the
                                # grader's own when not graded by root): readable again, or
                                # over the bounds; what it holds is never unseen (red team
                                # of #29: 240 MiB hid in one)
                                try:
                                    os.chmod(entry.name, 0o700, dir_fd=fd, follow_symlinks=False)
                                    sub = os.open(entry.name, os.O_RDONLY | os.O_DIRECTORY
                                                  | os.O_NOFOLLOW, dir_fd=fd)
                                except (OSError, NotImplementedError):
                                    usage.over = "a folder the grader cannot read"
                                    return usage
                            stack.append((sub, depth + 1))
            finally:
                os.close(fd)
    finally:
        for fd, _ in stack:
            os.close(fd)
    return usage


def unlinked_bytes(pids: list[int], folder: Path) -> int:
    """Bytes of files under ``folder`` that were deleted but that the processes ``pids`` still
    hold open: in no directory :func:`measure` reads, yet on the disk until closed (red team of
    #29: 480 MiB that way). Read from ``/proc/PID/fd``; never raises."""
    prefix, held = f"{folder}/", {}
    for pid in pids:
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            link = f"/proc/{pid}/fd/{fd}"
            try:
                target = os.readlink(link)
                if not (target.startswith(prefix) and target.endswith(" (deleted)")):
                    continue
                info = os.stat(link)   # the open file itself
            except OSError:
                continue
            if stat.S_ISREG(info.st_mode):
                held[(info.st_dev, info.st_ino)] = max(info.st_size, info.st_blocks * 512)
    return sum(held.values())


def remove(folder: Path) -> None:
    """Delete ``folder`` and everything in it (see module doc); a link is unlinked, never followed."""
    try:
        info = os.lstat(folder)
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(info.st_mode):
        os.unlink(folder)  # `chmod -R` would follow a link given as its argument
        return
    # First make every folder writable and searchable again (the sandbox may have set 000):
    # `chmod -R` walks without following links; then `rm -rf`, which handles any depth.
    subprocess.run(["chmod", "-R", "u+rwx", "--", str(folder)], capture_output=True, check=False)
    subprocess.run(["rm", "-rf", "--one-file-system", "--", str(folder)], capture_output=True,
                   check=False)
    if os.path.lexists(folder):
        raise OSError(f"could not remove the sandbox's folder {folder}")


class UnsafeTempDir(OSError):
    """The temp directory's folder for kernel folders is not a private folder of this user."""


def kernel_parent() -> Path:
    """``$TMPDIR/tio-UID`` (mode 0700): this user's kernel folders, where no one else
    can create, plant, list or rename a name. Raises :class:`UnsafeTempDir` saying what to do."""
    top = Path(tempfile.gettempdir())
    parent = top / f"{PARENT}{os.getuid()}"
    if len(os.fsencode(parent)) + SOCKET_TAIL > MAX_SOCKET_PATH:
        raise UnsafeTempDir(f"the temp folder {top} has too long a path for the kernels' "
                            f"sockets (at most {MAX_SOCKET_PATH - SOCKET_TAIL} bytes with "
                            f"{PARENT}UID): point TMPDIR at a shorter one, e.g. /tmp")
    _check_ancestors(top)
    try:
        os.mkdir(parent, 0o700)
    except FileExistsError:
        pass
    info = os.lstat(parent)
    if stat.S_ISDIR(info.st_mode) and info.st_uid != os.getuid():
        raise UnsafeTempDir(f"{parent} was made by another user (uid {info.st_uid}): ask an "
                            "administrator to remove it, or point TMPDIR at a folder of your "
                            "own (e.g. mkdir -m 700 ~/tmp; export TMPDIR=~/tmp)")
    if not stat.S_ISDIR(info.st_mode) or info.st_mode & 0o077:
        what = ("a link" if stat.S_ISLNK(info.st_mode) else "not a folder"
                if not stat.S_ISDIR(info.st_mode) else f"mode {stat.S_IMODE(info.st_mode):o}")
        raise UnsafeTempDir(f"{parent} must be a folder with mode 700 ({what}): remove it, "
                            "or point TMPDIR at a folder of your own")
    return parent


def unsafe_ancestor(folder: Path) -> str:
    """Why ``folder``'s path is not safe to trust, or ``""``: each folder from ``/`` to it must be
    root's or ours, and writable by others only with the sticky bit; a link on the way must be
    root's or ours too. Anyone else who may rename an entry there, or who made a link we follow,
    could swap our folder for theirs between a check and its use (the same rule as OpenSSH's
    for its key files)."""
    for path in [folder, *folder.parents]:
        try:
            link, info = os.lstat(path), os.stat(path)
        except OSError as err:
            return f"{folder} cannot be used ({err})"
        for what, st in (("a link that", link), ("which", info)):
            if st.st_uid not in (0, os.getuid()):
                return f"{folder} is inside {path}, {what} belongs to another user (uid {st.st_uid})"
        if info.st_mode & 0o022 and not info.st_mode & stat.S_ISVTX:
            return (f"{folder} is inside {path}, which others may write to (mode "
                    f"{stat.S_IMODE(info.st_mode):o}, no sticky bit)")
    return ""


def _check_ancestors(folder: Path) -> None:
    why = unsafe_ancestor(folder)
    if why:
        raise UnsafeTempDir(f"the temp folder {why}: point TMPDIR at a folder of your own, "
                            "e.g. /tmp")


@contextmanager
def private_folder() -> Iterator[Path]:
    """A new folder (mode 0700) for one kernel, locked while the block runs, removed after.

    Made as ``new-X``, named ``k-X`` once its lock is held, renamed ``rm-X`` (still locked)
    before it is removed: a ``k-`` folder without a lock file, or whose lock no process holds,
    is abandoned.
    """
    parent = kernel_parent()
    sweep_abandoned(parent)
    work = Path(tempfile.mkdtemp(prefix=CLAIMING, dir=parent))
    suffix = work.name[len(CLAIMING):]
    lock = -1
    try:
        lock = os.open(work / LOCK, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX)
        except OSError as err:   # e.g. ENOSYS: a network file system without locks
            raise UnsafeTempDir(f"the temp folder {parent.parent} cannot lock files ({err}): "
                                "point TMPDIR at a local disk, e.g. /tmp") from None
        os.rename(work, parent / f"{PREFIX}{suffix}")
        work = parent / f"{PREFIX}{suffix}"
        yield work
    finally:
        try:
            if work.name.startswith(PREFIX):
                os.rename(work, parent / f"{TRASH}{suffix}")
                work = parent / f"{TRASH}{suffix}"
        finally:
            try:
                remove(work)
            finally:
                if lock >= 0:
                    os.close(lock)


def sweep_abandoned(parent: Path | None = None) -> list[Path]:
    """Remove what killed graders left in ``parent`` (:func:`kernel_parent`); return it.

    ``rm-`` folders (their owner was removing them), ``k-`` folders whose lock file is gone
    (removal cut short) or held by no process, ``new-`` folders older than ``CLAIM_STALE``
    seconds (their owner died before naming them). Errors are skipped: the
    next sweep tries again.
    """
    removed: list[Path] = []
    try:
        parent = kernel_parent() if parent is None else parent
        names = os.listdir(parent)
    except OSError:
        return removed  # an unsafe parent is refused (and said) where a kernel needs it
    for name in names:
        folder = parent / name
        try:
            if name.startswith(TRASH):
                abandoned = True
            elif name.startswith(PREFIX):
                abandoned = _unheld(folder)
            elif name.startswith(CLAIMING):
                abandoned = time.time() - os.lstat(folder).st_mtime > CLAIM_STALE
            else:
                continue
            if abandoned:
                remove(folder)
                removed.append(folder)
        except OSError:
            continue
    return removed


def _unheld(folder: Path) -> bool:
    """No live process holds ``folder``'s lock (or its lock file is already gone)."""
    top = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        try:
            lock = os.open(LOCK, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=top)
        except FileNotFoundError:
            return True
        try:
            if not stat.S_ISREG(os.fstat(lock).st_mode):
                return False  # not a lock this code made: leave it
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return False  # a grader is using it
            return True
        finally:
            os.close(lock)
    finally:
        os.close(top)
