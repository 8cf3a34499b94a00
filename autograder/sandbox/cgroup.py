"""One sandbox, one budget: memory and tasks bounded for a sandbox as a whole.

``RLIMIT_AS`` and ``RLIMIT_NPROC`` (:mod:`autograder.sandbox.rlimit_exec`) bound each process; a
sandbox whose cell starts four DataLoader workers of 1.2 GB each held 4.8 GB under ``--memory
4096``. Enough of those graded at once empty the host, and the kernel's OOM killer then picks a
victim anywhere: a classmate's kernel ("kernel died", a real 0) or the grader. So each sandbox
gets a control group of its own where the grader can make one:

* **cgroup v2** (``memory.max``, ``memory.swap.max`` 0, ``pids.max``, ``memory.oom.group`` 1: an
  OOM kill in the group kills all of it, so the kernel dies and nobody else's does), under
  ``tio-grader/`` in the grader's own group (enabling the controllers there; when the grader is
  alone in a delegated group, as under ``systemd-run --user --scope -p Delegate=yes``, it first
  moves itself into a leaf ``tio-leader/``, since v2 forbids processes in a group whose
  controllers are enabled for its children);
* **cgroup v1** memory and pids controllers (``memory.limit_in_bytes`` and, where swap is
  accounted, ``memory.memsw.limit_in_bytes``, so swap does not escape the bound; ``pids.max``)
  under ``tio-grader/`` in the grader's group of each hierarchy. v1 has no group-wide OOM kill,
  so its OOM killer is switched off in the group: at the limit its tasks wait, the grader's
  watchdog sees ``under_oom`` within a second and kills the whole sandbox;
* **none** (a normal user without delegation, no controllers): the fallback below.

The launcher (:mod:`autograder.sandbox.rlimit_exec`) writes its own pid into the group's
``cgroup.procs`` files *before* it execs bubblewrap, so every process of the sandbox starts
inside; a launcher that cannot join fails, and the kernel never starts (not graded, never run
unbounded). :meth:`Group.close` kills what is left (``cgroup.kill`` on v2, each pid on v1) and
removes the group. A group is named after the process that made it (pid and start time):
:func:`sweep_abandoned` removes the groups of graders that are gone (killed outright), as
:mod:`autograder.sandbox.scratch` sweeps their folders.

**The fallback** (no cgroup): each process keeps ``RLIMIT_AS`` = the budget, and the grader's
watchdog adds up, every :data:`POLL_SECONDS`, the proportional set size (PSS: shared pages
split between their users, so forked workers are not counted twice) of every process in the
sandbox *and* what its private tmpfs mounts hold (``/tmp``, ``/dev/shm``, ``$HOME``, read
through a sandbox process's ``/proc/PID/root``: files written there and never mapped are in no
process's PSS), and kills the sandbox above the budget. The one other place a process can hold
memory outside its mappings, a ``memfd``, is refused by the seccomp filter
(:mod:`autograder.sandbox.seccomp`). A tmpfs file that is also mapped counts twice (safe side). This
bounds the total, but not hard: between two looks the sandbox can exceed it (at most
``RLIMIT_AS`` per process, and the tmpfs mounts' fixed sizes). A hard
division (``RLIMIT_AS`` = budget / task cap) cannot work for this course: ``RLIMIT_NPROC``
counts threads, an ipykernel with torch has about ten, and torch alone reserves over a GiB of
address space; :func:`fallback_hard_share` gives the arithmetic and ``grade`` says which mode
is in force.
"""

from __future__ import annotations

import errno
import functools
import os
import secrets
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path

MIB = 1 << 20
PARENT = "tio-grader"     # the folder of sandbox groups, in the grader's own group
LEADER = "tio-leader"     # v2: the leaf the grader moves itself into (see the module doc)
PREFIX = "g-"             # + owner pid, its start time, random: one sandbox's group
POLL_SECONDS = 0.25       # the fallback's look at the sandbox's memory
GRADER_RESERVE = 512 * MIB  # what the grader's own processes need, kept out of --jobs' budget


@dataclass(frozen=True)
class Support:
    """How sandboxes are bounded here: ``mode`` is ``v2``, ``v1`` or ``none``."""

    mode: str
    parents: dict[str, Path] = field(default_factory=dict)   # controller -> folder of groups
    why: str = ""                                             # mode none: why no cgroup

    def describe(self, memory_bytes: int, processes: int) -> str:
        """One line for ``grade``'s output: which bound is in force."""
        if self.mode == "none":
            return (f"memory: no cgroup here ({self.why}); each process is limited to "
                    f"{memory_bytes // MIB} MiB and the grader stops a sandbox whose processes "
                    f"together hold more (measured every {POLL_SECONDS} s, so not a hard bound); "
                    f"tasks: {processes} per sandbox (per user when not graded by root)")
        where = ", ".join(f"{c} {p}" for c, p in sorted(self.parents.items()))
        return (f"memory and tasks: one cgroup {self.mode} per sandbox ({where}): "
                f"{memory_bytes // MIB} MiB and {processes} tasks for all its processes together")


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def _mounts() -> list[tuple[str, Path, str, str]]:
    """(mount root, mount point, fstype, super options) of each cgroup mount."""
    found = []
    for line in _read(Path("/proc/self/mountinfo")).splitlines():
        left, _, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if len(fields) >= 5 and len(tail) >= 3 and tail[0] in ("cgroup", "cgroup2"):
            found.append((fields[3], Path(fields[4]), tail[0], tail[2]))
    return found


def _own_paths() -> dict[str, str]:
    """This process's group per v1 controller, and ``""`` -> its v2 group."""
    own: dict[str, str] = {}
    for line in _read(Path("/proc/self/cgroup")).splitlines():
        _, controllers, path = line.split(":", 2)
        for name in controllers.split(",") if controllers else [""]:
            own[name] = path
    return own


def _inside(mount_root: str, mount: Path, path: str) -> Path | None:
    if not (path + "/").startswith(mount_root.rstrip("/") + "/"):
        return None  # our group is not visible through this mount
    return mount / path[len(mount_root.rstrip("/")):].lstrip("/")


def _write(path: Path, text: str) -> None:
    with open(path, "w") as fh:
        fh.write(text)


def _enable(group: Path, controllers: tuple[str, ...]) -> None:
    have = _read(group / "cgroup.subtree_control").split()
    missing = [c for c in controllers if c not in have]
    if missing:
        _write(group / "cgroup.subtree_control", " ".join(f"+{c}" for c in missing))


def _probe(parent: Path) -> None:
    """Make and remove one group under ``parent``: the parent may exist and still be closed to
    us (made by root on an earlier run, graded now by a normal user). Raises OSError."""
    probe = parent / f"probe-{os.getpid()}-{secrets.token_hex(4)}"
    probe.mkdir()
    probe.rmdir()


def _detect_v2() -> tuple[Support | None, str]:
    mount = next((m for m in _mounts() if m[2] == "cgroup2"), None)
    if mount is None:
        return None, "no cgroup2 mount"
    own = _inside(mount[0], mount[1], _own_paths().get("", "/"))
    if own is None or not own.is_dir():
        return None, "this process's cgroup2 group is not visible"
    need = ("memory", "pids")
    if not all(c in _read(own / "cgroup.controllers").split() for c in need):
        return None, "cgroup2 lacks the memory and pids controllers"
    parent = own / PARENT
    try:
        if not all(c in _read(parent / "cgroup.subtree_control").split() for c in need):
            try:
                _enable(own, need)
            except OSError as err:
                if err.errno != errno.EBUSY:
                    raise
                # Processes in `own`: v2 lets a group with processes give its children no
                # controllers. Alone there (a delegated scope), the grader moves to a leaf.
                procs = _read(own / "cgroup.procs").split()
                if procs != [str(os.getpid())]:
                    raise
                (own / LEADER).mkdir(exist_ok=True)
                _write(own / LEADER / "cgroup.procs", str(os.getpid()))
                _enable(own, need)
            parent.mkdir(exist_ok=True)
            _enable(parent, need)
        _probe(parent)
    except OSError as err:
        return None, f"cannot use cgroup2 group {own} ({err.strerror or err})"
    return Support("v2", {"memory": parent, "pids": parent}), ""


def _detect_v1() -> tuple[Support | None, str]:
    own = _own_paths()
    parents: dict[str, Path] = {}
    for root, point, fstype, options in _mounts():
        if fstype != "cgroup":
            continue
        for controller in ("memory", "pids"):
            if controller in options.split(",") and controller in own:
                where = _inside(root, point, own[controller])
                if where is not None and where.is_dir():
                    parents[controller] = where / PARENT
    if "memory" not in parents:
        return None, "no cgroup v1 memory controller"
    try:
        for parent in parents.values():
            parent.mkdir(exist_ok=True)
            _probe(parent)
    except OSError as err:
        return None, f"cannot make groups under {parent.parent} ({err.strerror or err})"
    return Support("v1", parents), ""


@functools.lru_cache(maxsize=1)
def support() -> Support:
    """How this host bounds sandboxes (checked once per process; see the module doc).

    ``TIO_CGROUP=none`` forces the fallback (to test it, or where groups must not be made).
    """
    if os.environ.get("TIO_CGROUP") == "none":
        return Support("none", why="TIO_CGROUP=none")
    found, why2 = _detect_v2()
    if found is None:
        found, why1 = _detect_v1()
        if found is None:
            user = "" if os.geteuid() == 0 else "not root and no delegated group; "
            return Support("none", why=f"{user}{why2}; {why1}")
    return found


def _start_time(pid: int) -> str:
    stat = _read(Path(f"/proc/{pid}/stat"))
    return stat.rsplit(")", 1)[1].split()[19] if ")" in stat else ""


def _pids(group: Path) -> list[int]:
    return [int(p) for p in _read(group / "cgroup.procs").split()]


class Group:
    """One sandbox's group (mode v1 or v2), or its fallback monitor (mode none)."""

    def __init__(self, memory_bytes: int, processes: int, where: Support | None = None,
                 tmpfs: tuple[str, ...] = ()) -> None:
        self.support = support() if where is None else where
        self.memory_bytes, self.processes = memory_bytes, processes
        self.tmpfs = tmpfs                     # the sandbox's private tmpfs mounts (fallback)
        self.root_pid: int | None = None       # the launcher's pid (fallback: what to measure)
        self.dirs: dict[str, Path] = {}
        self.peak = 0
        if self.support.mode == "none":
            return
        name = f"{PREFIX}{os.getpid()}-{_start_time(os.getpid())}-{secrets.token_hex(4)}"
        try:
            for controller, parent in sorted(self.support.parents.items()):
                folder = parent / name
                folder.mkdir()
                self.dirs[controller] = folder
            self._limit()
        except OSError:
            self.close()
            raise

    def _limit(self) -> None:
        memory, pids = self.dirs["memory"], self.dirs.get("pids")
        if self.support.mode == "v2":
            _write(memory / "memory.max", str(self.memory_bytes))
            if (memory / "memory.swap.max").exists():
                _write(memory / "memory.swap.max", "0")
            _write(memory / "memory.oom.group", "1")
        else:
            _write(memory / "memory.limit_in_bytes", str(self.memory_bytes))
            if (memory / "memory.memsw.limit_in_bytes").exists():
                _write(memory / "memory.memsw.limit_in_bytes", str(self.memory_bytes))
            _write(memory / "memory.oom_control", "1")  # wait at the limit; see exceeded()
        if pids is not None:
            _write(pids / "pids.max", str(self.processes))

    def pids(self) -> list[int]:
        """Every process of the sandbox now (its groups' members; the fallback: the launcher's
        descendants)."""
        if self.support.mode == "none":
            return _descendants(self.root_pid) if self.root_pid is not None else []
        return sorted({pid for folder in self.dirs.values() for pid in _pids(folder)})

    def join_files(self) -> list[Path]:
        """The ``cgroup.procs`` files the launcher writes its pid to (none in the fallback)."""
        return sorted({d / "cgroup.procs" for d in self.dirs.values()})

    def exceeded(self) -> str:
        """Why the sandbox is over its memory budget, or ``""``: cheap, called every tick."""
        if self.support.mode == "none":
            return self._measured()
        memory = self.dirs["memory"]
        if self.support.mode == "v2":
            events = dict(line.split() for line in _read(memory / "memory.events").splitlines()
                          if len(line.split()) == 2)
            hit = int(events.get("oom_kill", 0)) + int(events.get("oom_group_kill", 0)) > 0
        else:
            state = dict(line.split() for line in _read(memory / "memory.oom_control").splitlines()
                         if len(line.split()) == 2)
            hit = state.get("under_oom") == "1" or int(state.get("oom_kill", 0)) > 0
        return self.budget_message() if hit else ""

    def budget_message(self) -> str:
        return (f"memory budget exceeded: the sandbox's processes together needed more than "
                f"{self.memory_bytes // MIB} MiB (--memory)")

    def _measured(self) -> str:
        if self.root_pid is None:
            return ""
        pids = _descendants(self.root_pid)
        total = sum(_pss(pid) for pid in pids) + _tmpfs_used(pids, self.tmpfs)
        self.peak = max(self.peak, total)
        return self.budget_message() if total > self.memory_bytes else ""

    def kill(self) -> None:
        """SIGKILL every process in the group (the fallback: every process of the sandbox)."""
        if self.support.mode == "none":
            pids = _descendants(self.root_pid) if self.root_pid is not None else []
            for pid in pids:
                _kill(pid)
            return
        for folder in self.dirs.values():
            if (folder / "cgroup.kill").exists():
                try:
                    _write(folder / "cgroup.kill", "1")
                    continue
                except OSError:
                    pass
            for _ in range(100):  # v1: a fork between reading and killing: read again
                pids = _pids(folder)
                if not pids:
                    break
                for pid in pids:
                    _kill(pid)

    def close(self) -> None:
        """Kill what is left and remove the group; one that resists is left for the sweep."""
        self.kill()
        for folder in self.dirs.values():
            _remove(folder)
        self.dirs = {}


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass


def _remove(folder: Path, wait: float = 5.0) -> bool:
    """rmdir a group, after its killed tasks are gone (EBUSY until then)."""
    deadline = time.monotonic() + wait
    while True:
        try:
            folder.rmdir()
            return True
        except FileNotFoundError:
            return True
        except OSError:
            if time.monotonic() > deadline:
                return False
            for pid in _pids(folder):
                _kill(pid)
            time.sleep(0.05)


def _descendants(root: int) -> list[int]:
    """``root`` and every process below it. A sandbox's orphans are re-parented to its PID
    namespace's first process, a child of ``root``: nothing in the sandbox escapes this."""
    found, todo = [], [root]
    while todo and len(found) < 100_000:
        pid = todo.pop()
        found.append(pid)
        try:
            tasks = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for task in tasks:
            todo += [int(c) for c in _read(Path(f"/proc/{pid}/task/{task}/children")).split()]
    return found


def _tmpfs_used(pids: list[int], mounts: tuple[str, ...]) -> int:
    """Bytes the sandbox's own tmpfs ``mounts`` hold, seen from the first of ``pids`` that lives
    in another mount namespace than the grader (the launcher and bubblewrap's outer process
    see the host's ``/tmp``, which is not the sandbox's to count)."""
    if not mounts:
        return 0
    try:
        ours = os.readlink("/proc/self/ns/mnt")
    except OSError:
        return 0
    for pid in pids:
        try:
            if os.readlink(f"/proc/{pid}/ns/mnt") == ours:
                continue
            used = 0
            for mount in mounts:
                st = os.statvfs(f"/proc/{pid}/root{mount}")
                used += (st.f_blocks - st.f_bfree) * st.f_frsize
            return used
        except OSError:
            continue  # gone between two looks, or not ours to read: try the next
    return 0


def _pss(pid: int) -> int:
    for line in _read(Path(f"/proc/{pid}/smaps_rollup")).splitlines():
        if line.startswith("Pss:"):
            return int(line.split()[1]) * 1024
    return 0


def sweep_abandoned(where: Support | None = None) -> list[Path]:
    """Remove the groups whose maker is gone (its pid dead, or reused: the start time differs)."""
    where = support() if where is None else where
    removed: list[Path] = []
    for parent in set(where.parents.values()):
        try:
            names = os.listdir(parent)
        except OSError:
            continue
        for name in names:
            if not name.startswith(PREFIX):
                continue
            owner, _, rest = name[len(PREFIX):].partition("-")
            started = rest.rpartition("-")[0]
            if owner.isdigit() and _start_time(int(owner)) == started and started:
                continue  # its grader is alive
            for pid in _pids(parent / name):
                _kill(pid)
            if _remove(parent / name, wait=1.0):
                removed.append(parent / name)
    return removed


def fallback_hard_share(memory_bytes: int, tasks: int) -> int:
    """Without a cgroup, the ``RLIMIT_AS`` per process that would bound a sandbox's total hard:
    ``tasks`` processes (``RLIMIT_NPROC`` counts threads too) of this much each. Shown to say
    why the fallback measures instead (see the module doc)."""
    return memory_bytes // max(1, tasks)


def available_memory() -> int:
    """What this machine can give sandboxes now: ``MemAvailable``, less what the grader's own
    group still may use where it is limited (a container's memory limit)."""
    available = 0
    for line in _read(Path("/proc/meminfo")).splitlines():
        if line.startswith("MemAvailable:"):
            available = int(line.split()[1]) * 1024
    own = _own_paths()
    for root, point, fstype, options in _mounts():
        if fstype == "cgroup2" and "" in own:
            group, files = _inside(root, point, own[""]), ("memory.max", "memory.current")
        elif fstype == "cgroup" and "memory" in options.split(",") and "memory" in own:
            group, files = (_inside(root, point, own["memory"]),
                            ("memory.limit_in_bytes", "memory.usage_in_bytes"))
        else:
            continue
        if group is None:
            continue
        limit, used = (_read(group / f).strip() for f in files)
        if limit.isdigit() and used.isdigit() and int(limit) < 1 << 60:
            available = min(available, max(0, int(limit) - int(used)))
    return available


def jobs_that_fit(jobs: int, memory_bytes: int, available: int, held_bytes: int = 0,
                  ) -> tuple[int, str]:
    """How many sandboxes of ``memory_bytes`` may run at once in ``available`` bytes, each also
    costing the grader ``held_bytes`` (what one notebook's output may make it hold:
    ``autograder.sandbox.flood.GRADER_HELD_BYTES``), and what to tell the instructor (``""`` when all
    ``jobs`` fit; 0 jobs: even one does not fit)."""
    usable = max(0, available - GRADER_RESERVE)
    fit = min(jobs, usable // (memory_bytes + held_bytes))
    if fit >= jobs:
        return jobs, ""
    have = (f"{available // MIB} MiB available, {GRADER_RESERVE // MIB} MiB kept for the grader"
            + (f" and {held_bytes // MIB} MiB per notebook for the output it reads" if held_bytes
               else ""))
    if fit < 1:
        return 0, (f"one sandbox of --memory {memory_bytes // MIB} MiB does not fit in this "
                   f"machine's memory ({have}): lower --memory (at most "
                   f"{max(0, usable - held_bytes) // MIB} MiB) or free memory")
    return fit, (f"--jobs {jobs} x --memory {memory_bytes // MIB} MiB does not fit in this "
                 f"machine's memory ({have}): grading {fit} at a time")
