"""Run a learner's kernel in a bubblewrap sandbox, with resource limits.

Contract: :func:`kernel_manager` returns a jupyter_client kernel manager whose kernel runs

* under ``bwrap`` (Debian's bubblewrap), **never as host root**: graded by root, bwrap sets the
  sandbox up and ``setpriv`` then drops to a fresh unprivileged uid of its own (no entry in
  ``/etc/passwd``, one per notebook, so its process limit is its own), with no capabilities, an
  empty bounding set and ``no_new_privs``; graded by anyone else, a user namespace maps the
  sandbox's uid 65534 to that user, and bwrap's ``--disable-userns`` forbids nesting another;
* in new PID, network, IPC and UTS namespaces and a new session (no network, no terminal to
  type into, no process outlives the sandbox: the PID namespace dies with its first process);
* under a seccomp filter (:mod:`autograder.sandbox.seccomp`): no mounts, namespaces, ptrace, keyring,
  BPF, perf events, userfaultfd, io_uring, device nodes or setuid/setgid bits;
* on a filesystem that shows only ``/usr``, a few files of ``/etc``, the Python installation and
  the ``tensorcourse`` package, read-only (never ``solutions/``, the gradebook, other
  submissions or the rest of the checkout); ``/proc`` is the sandbox's own, with ``/proc/sys``
  read-only; ``/tmp``, ``/dev/shm`` and ``$HOME`` are small private tmpfs; the one host folder
  it can write is its socket folder, inside a private folder of the grader's (mode 0700) that
  the grader measures while it runs (:mod:`autograder.sandbox.scratch`) and removes afterwards;
* with ``RLIMIT_AS`` (memory), ``RLIMIT_CPU``, ``RLIMIT_FSIZE`` and ``RLIMIT_NPROC`` (tasks) per
  process, and memory and tasks bounded for the sandbox as a whole: in a cgroup of its own,
  joined before bwrap starts, or, where none can be made, measured by the grader
  (:mod:`autograder.sandbox.cgroup`);
* talking to the grader over ZMQ's ``ipc`` transport: unix sockets in the socket folder.

:func:`unavailable` says why the sandbox cannot run here (``None`` when it can). With
``sandboxed=False`` the same manager runs the kernel without bwrap (limits still apply):
the grader then warns on every run (see :mod:`autograder.cli`).
"""

from __future__ import annotations

import functools
import importlib.util
import os
import secrets
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from jupyter_client.manager import AsyncKernelManager

from .cgroup import Group

LIMITER = Path(__file__).with_name("rlimit_exec.py")
SANDBOX_HOME = "/home/learner"
TMPFS_MOUNTS = ("/tmp", "/dev/shm", SANDBOX_HOME)  # private, each limits.tmpfs_bytes
OPEN_FILES = 4096   # per process (RLIMIT_NOFILE): torch and ipykernel use about a hundred
MIB = 1 << 20
# /etc files a Python process reads (dynamic loader cache, fonts, time zone, users).
ETC_FILES = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "alternatives", "fonts", "localtime",
             "passwd", "group", "nsswitch.conf", "mime.types", "ssl/certs")


@dataclass(frozen=True)
class Limits:
    """What one submission's kernel may use. Wall-clock limits are enforced by the runner."""

    cell_timeout: int = 60          # seconds per cell, then interrupted (scores 0)
    notebook_timeout: int = 900     # seconds per notebook, then killed (the rest scores 0)
    memory_bytes: int = 6 * 1024 * MIB   # per process (RLIMIT_AS), and all of them together
    cpu_seconds: int = 1800         # CPU time per process (RLIMIT_CPU)
    file_bytes: int = 64 * MIB      # largest file it may write (RLIMIT_FSIZE); socket folder total
    processes: int = 256            # tasks (processes and threads): RLIMIT_NPROC, pids.max
    tmpfs_bytes: int = 512 * MIB    # size of each private tmpfs (/tmp, /dev/shm, $HOME)
    output_bytes: int = 1 * MIB     # notebook output kept; beyond, only grading lines are kept
    scratch_entries: int = 4096     # files and folders the socket folder may hold


# Graded by root, each sandbox gets a uid of its own from this range: far above the ranges
# systems give to users (1000-60000) and to subordinate ids (/etc/subuid, from 100000).
UID_BASE, UID_SPAN = 0x60000000, 0x10000000


def grader_is_root() -> bool:
    return os.geteuid() == 0


def sandbox_uid() -> int:
    """A fresh unprivileged host uid for one sandbox (root graders only)."""
    return UID_BASE + secrets.randbelow(UID_SPAN)


@functools.lru_cache(maxsize=1)
def unavailable() -> str | None:
    """Why bubblewrap cannot sandbox kernels here, or ``None`` when it can (checked once).

    The probe runs the sandbox's own Python (as the sandbox's user) importing ``ipykernel``
    and reading ``tensorcourse`` (not importing it: that would import torch): an environment
    the sandbox cannot read fails here, with a message, not later as kernels that never start.
    """
    if not sys.platform.startswith("linux"):
        return f"bubblewrap needs Linux; this is {sys.platform}"
    if shutil.which("bwrap") is None:
        return "bubblewrap (`bwrap`) is not installed (Debian/Ubuntu: apt-get install bubblewrap)"
    if grader_is_root() and shutil.which("setpriv") is None:
        return "`setpriv` (util-linux) is missing: graded as root, it drops the sandbox's privileges"
    from .seccomp import SeccompUnavailable, program

    try:
        program()
    except SeccompUnavailable as err:
        return str(err)
    from .scratch import UnsafeTempDir, private_folder

    try:
        with private_folder() as work:
            socket_dir = prepare_socket_dir(work, Limits())
            probe = [*limiter_prefix(Limits(), work), *bwrap_args(socket_dir, Limits(), []),
                     sys.executable, "-c", "import ipykernel, importlib.util as u; "
                     "assert u.find_spec('tensorcourse'), 'tensorcourse is not visible'; "
                     "open(u.find_spec('tensorcourse').origin).close()"]
            try:
                run = subprocess.run(probe, capture_output=True, text=True, timeout=120)
            except (OSError, subprocess.TimeoutExpired) as err:
                return f"bubblewrap failed to start: {err}"
    except UnsafeTempDir as err:
        return str(err)
    except OSError as err:
        return (f"the grader cannot make or remove its private folder in the temp folder "
                f"({err}): point TMPDIR at a writable folder of your own")
    if run.returncode != 0:
        detail = run.stderr.strip()[-300:]
        if "Permission denied" in detail or "PermissionError" in detail:
            return ("the sandbox's unprivileged user cannot read the course's Python environment "
                    f"({sys.prefix}); make it readable by all users (chmod -R a+rX on it and its "
                    f"parent folders) or install it elsewhere: {detail}")
        if "mount proc" in detail.lower():
            return ("bubblewrap cannot mount the sandbox's own /proc: this container's /proc is "
                    "masked (the runtime's default). In Kubernetes run the pod with `hostUsers: "
                    "false` and `procMount: Unmasked` (autograder/deploy/kubernetes.py); with "
                    f"Docker or Podman, `--security-opt systempaths=unconfined`: {detail}")
        return ("bubblewrap cannot create the sandbox here (user namespaces disabled, or a "
                f"container without them): {detail}")
    return None


def container_hint() -> str:
    """What to do where bubblewrap cannot run: a Linux container, if a runtime is installed."""
    runtime = next((r for r in ("docker", "podman") if shutil.which(r)), None)
    where = (f"`{runtime}` is installed: grade inside the course's Binder image "
             f"(`{runtime} run --rm --security-opt seccomp=unconfined --security-opt "
             "apparmor=unconfined -v $PWD:/course -w /course IMAGE python -m autograder grade ...`), "
             "where bubblewrap works") if runtime else (
             "install Docker or Podman and grade inside the course's Binder image (see "
             "autograder/README.md, 'Grading safely')")
    return (f"{where}. `--no-sandbox` grades without isolation: only for submissions you trust.")


SECCOMP_FD = 10


def _namespace_args() -> list[str]:
    common = ["--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts",
              "--unshare-cgroup-try", "--new-session", "--die-with-parent",
              "--hostname", "sandbox", "--seccomp", str(SECCOMP_FD)]
    if grader_is_root():
        # No user namespace: bwrap mounts as root, then setpriv (the command's prefix) drops
        # to the sandbox's own uid. A user namespace made by root would map its uid to root.
        return common
    return [*common, "--unshare-user", "--uid", "65534", "--gid", "65534", "--disable-userns",
            "--cap-drop", "ALL"]


def _privilege_drop(uid: int) -> list[str]:
    """Root graders: become ``uid`` with no capabilities and no way to regain any."""
    return ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--inh-caps=-all",
            "--bounding-set=-all", "--no-new-privs", "--"]


# Merged-/usr systems link these into /usr; older ones have real folders.
TOP_FOLDERS = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")


def _usr_links() -> list[str]:
    """Each of TOP_FOLDERS as the host has it: a link into /usr, or the real folder bound."""
    args: list[str] = []
    for name in TOP_FOLDERS:
        path = Path("/") / name
        if path.is_symlink():
            args += ["--symlink", os.readlink(path), str(path)]
        elif path.is_dir():
            args += ["--ro-bind", str(path), str(path)]
    return args


def _python_dirs(hidden: list[Path]) -> list[Path]:
    """Folders the kernel's Python needs: its installation, its environment, tensorcourse."""
    dirs = {Path(sys.base_prefix).resolve(), Path(sys.prefix).resolve()}
    spec = importlib.util.find_spec("tensorcourse")
    if spec is not None and spec.origin:
        dirs.add(Path(spec.origin).resolve().parent)
    keep = []
    for d in sorted(dirs):
        if d == Path("/") or str(d).startswith("/usr/") or d == Path("/usr"):
            continue  # /usr is mounted anyway
        if any(h == d or h.is_relative_to(d) for h in hidden):
            # A folder that holds what must stay hidden (a repository root on the path):
            # mounting it would show solutions/; the kernel must do without it.
            continue
        keep.append(d)
    return keep


def mounted_folders() -> list[Path]:
    """Host folders every sandbox sees (read-only): what must never hold a secret."""
    real = [Path("/") / n for n in TOP_FOLDERS
            if (Path("/") / n).is_dir() and not (Path("/") / n).is_symlink()]
    return [Path("/usr"), *(Path("/etc") / n for n in ETC_FILES), *real, *_python_dirs([])]


def bwrap_args(socket_dir: Path, limits: Limits, hidden: list[Path],
               uid: int | None = None) -> list[str]:
    """The sandbox's command prefix: ``bwrap ... --`` (and, for root graders, ``setpriv``).

    Order matters: bwrap mounts in order, so the private tmpfs come before the Python
    installation and the socket folder, which may live under ``/tmp`` on the host.
    """
    # bwrap itself starts with an empty environment: it is PID 1 inside, and a kernel graded by
    # the same (unprivileged) user could read its /proc/1/environ, the grader's whole
    # environment (red team of #32). --clearenv below only clears what the kernel inherits.
    args = [shutil.which("env") or "/usr/bin/env", "-i", shutil.which("bwrap") or "/usr/bin/bwrap",
            *_namespace_args(), "--ro-bind", "/usr", "/usr", *_usr_links()]
    for name in ETC_FILES:
        args += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
    size = str(limits.tmpfs_bytes)
    args += ["--proc", "/proc", "--ro-bind", "/proc/sys", "/proc/sys", "--dev", "/dev"]
    for folder in TMPFS_MOUNTS:
        args += ["--size", size, "--perms", "1777", "--tmpfs", folder]
    # /dev itself (bwrap's --dev: a tmpfs of device nodes) read-only: writable by the sandbox's
    # user when graded unprivileged, and half the host's RAM in size, it held 3.6 GB outside
    # every count (red team of #29). Writing to /dev/null and the like still works.
    args += ["--remount-ro", "/dev"]
    binds = [(d, "--ro-bind") for d in _python_dirs(hidden)] + [(socket_dir, "--bind")]
    # bwrap makes a bind target's missing parents private (0700): make them 0755 first, or the
    # unprivileged uid could not reach what is bound below them.
    made: set[Path] = {Path("/"), Path("/tmp"), Path("/dev"), Path("/dev/shm"), Path("/usr")}
    for target, _ in binds:
        for parent in reversed(target.parents):
            if parent not in made and not parent.is_relative_to("/usr"):
                args += ["--perms", "0755", "--dir", str(parent)]
                made.add(parent)
    for target, how in binds:
        args += [how, str(target), str(target)]
    args += ["--chdir", SANDBOX_HOME, "--clearenv"]
    for key, value in kernel_env(SANDBOX_HOME).items():
        args += ["--setenv", key, value]
    args.append("--")
    if grader_is_root():
        args += _privilege_drop(uid if uid is not None else sandbox_uid())
    return args


def kernel_env(home: str) -> dict[str, str]:
    """The kernel's whole environment: nothing of the grader's (no PYTHONPATH, no tokens).

    One thread per library: scores must not depend on how many submissions run at once, and
    parallel grading gains more from processes than from threads. No ``JPY_PARENT_PID``:
    ipykernel would poll a parent that a new PID namespace cannot see, and exit at once.
    """
    env = {"HOME": home, "TMPDIR": "/tmp", "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin",
           "LANG": "C.UTF-8", "MPLCONFIGDIR": f"{home}/.matplotlib", "OMP_NUM_THREADS": "1",
           "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "PYTHONDONTWRITEBYTECODE": "1",
           "PYDEVD_DISABLE_FILE_VALIDATION": "1", "TORCHINDUCTOR_COMPILE_THREADS": "1",
           "PYTHONHASHSEED": "0"}
    return env


def _user_task_count() -> int:
    """Tasks (processes and their threads) of this real uid: what RLIMIT_NPROC counts."""
    uid = os.getuid()
    count = 0
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                if entry.stat().st_uid == uid:
                    count += len(os.listdir(f"/proc/{entry.name}/task"))
            except OSError:
                continue
    return count


def limiter_prefix(limits: Limits, work: Path, *, sandboxed: bool = True,
                   join: list[Path] | None = None) -> list[str]:
    """``python rlimit_exec.py SPEC --``: sets the limits (and the seccomp fd), then execs the rest.

    The seccomp filter is written into ``work`` (the grader's private folder for this kernel),
    so it is removed with it.

    Graded by root, the sandbox's uid is fresh, so its task limit is the whole budget; graded by
    a user, every sandbox shares that user's count, so the limit is added to what runs now.
    ``join``: the sandbox's ``cgroup.procs`` files, joined before anything else runs.
    """
    # nofile: open files (each can hold a file up to fsize, unlinked or not, and the watchdog
    # reads every one); core: no core dump is ever written into the socket folder.
    spec = [f"as={limits.memory_bytes}", f"cpu={limits.cpu_seconds}",
            f"fsize={limits.file_bytes}", f"nofile={OPEN_FILES}", "core=0"]
    spec += [f"cg={os.fsencode(path).hex()}" for path in join or []]
    if grader_is_root() and sandboxed:
        spec.append(f"nproc={limits.processes}")
    elif not grader_is_root():
        spec.append(f"nproc={_user_task_count() + limits.processes}")
    if sandboxed:
        from .seccomp import write_filter

        spec.append(f"fd={SECCOMP_FD}:{write_filter(work)}")
    return [sys.executable, "-I", "-S", str(LIMITER), ",".join(spec), "--"]


def prepare_socket_dir(work: Path, limits: Limits, uid: int | None = None) -> Path:
    """``work/sock``: the one host folder the sandbox may write (its sockets).

    ``work`` is the grader's own (mode 0700: no other local user reaches inside). Graded by
    root, the folder belongs to the sandbox's uid, which must create its sockets there.
    """
    os.chmod(work, 0o700)
    sock = work / "sock"
    sock.mkdir(mode=0o700)
    if grader_is_root() and uid is not None:
        os.chown(sock, uid, uid)
    return sock


class SandboxedKernelManager(AsyncKernelManager):
    """An ``AsyncKernelManager`` that prefixes the kernel command with limits and bwrap.

    Set :attr:`wrapper` (the command prefix), :attr:`log_path` and, for root graders,
    :attr:`sandbox_uid` before starting the kernel; transport and connection file are
    pointed at the socket folder by :func:`kernel_manager`.
    """

    wrapper: list[str] = []
    log_path: str = ""
    sandbox_uid: int | None = None
    group: Group | None = None

    def format_kernel_cmd(self, extra_arguments: list[str] | None = None) -> list[str]:
        return [*self.wrapper, *super().format_kernel_cmd(extra_arguments)]

    async def _async_launch_kernel(self, kernel_cmd: list[str], **kw: object) -> None:
        if self.sandbox_uid is not None:
            # The connection file is written 0600 by the grader; the kernel must read it.
            os.chown(self.connection_file, self.sandbox_uid, self.sandbox_uid)
        # The kernel's own stdout/stderr (bwrap's messages, C-level warnings) go to a log in
        # the grader's private folder, not to its terminal; the runner reads it on failure.
        with open(self.log_path, "ab") as log:
            kw["stdout"], kw["stderr"] = log, log
            await super()._async_launch_kernel(kernel_cmd, **kw)
        self.launched = getattr(self.provisioner, "process", None)
        if self.group is not None and self.launched is not None:
            self.group.root_pid = self.launched.pid

    def reap(self, grace: float = 0.0) -> None:
        """End the sandbox (after ``grace`` seconds) and wait until it is gone.

        A kernel manager handed to nbclient is not shut down by it, and nothing in a finished
        sandbox is worth a graceful exit: by default it is killed at once. bwrap exits only after
        the first process of its PID namespace has, and the kernel reaps every other process of
        a namespace before its first one is gone: once this returns, nothing the learner
        started is still running.
        """
        import signal

        process = getattr(self, "launched", None)
        if process is None:
            if self.group is not None:
                self.group.close()
            return
        inner = _children(process.pid)  # bwrap's process inside: the PID namespace's first
        try:
            process.wait(timeout=grace if grace > 0 else 0.001)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except OSError:
                process.kill()
            process.wait()
        # Killing the outer bwrap does not wait for the namespace: wait until its first
        # process is gone, which the kernel allows only after every other one is.
        deadline = time.monotonic() + 30
        while any(_running(pid) for pid in inner) and time.monotonic() < deadline:
            time.sleep(0.05)
        if self.group is not None:
            self.group.close()  # whatever is left, and the group itself


def _children(pid: int) -> list[int]:
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return []
    return [int(p) for p in text.split()]


def _running(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def kernel_manager(work: Path, limits: Limits, *, sandboxed: bool,
                   hidden: list[Path]) -> SandboxedKernelManager:
    """A kernel manager for one submission, in the grader's private folder ``work``.

    Sockets and connection file live in ``work/sock`` (see :func:`prepare_socket_dir`), the
    kernel's log in ``work/kernel.log``. The sandbox's group (:mod:`autograder.sandbox.cgroup`) is made
    here and removed by :meth:`SandboxedKernelManager.reap`; raises :class:`OSError` when it
    cannot be made (the kernel never starts: not graded).
    """
    uid = sandbox_uid() if sandboxed and grader_is_root() else None
    socket_dir = prepare_socket_dir(work, limits, uid)
    km = SandboxedKernelManager(kernel_name="python3", transport="ipc",
                                ip=str(socket_dir / "k"),  # short: see scratch.SOCKET_TAIL
                                connection_file=str(socket_dir / "kernel.json"))
    km.log_path = str(work / "kernel.log")
    km.sandbox_uid = uid
    # Interrupt with a control message: ipykernel then signals itself. A SIGINT to the process
    # group would reach bwrap's own processes too and end the whole sandbox, not the cell.
    km.kernel_spec.interrupt_mode = "message"
    km.group = Group(limits.memory_bytes, limits.processes,
                     tmpfs=TMPFS_MOUNTS if sandboxed else ())
    try:
        prefix = limiter_prefix(limits, work, sandboxed=sandboxed, join=km.group.join_files())
    except BaseException:
        km.group.close()
        raise
    if sandboxed:
        km.wrapper = [*prefix, *bwrap_args(socket_dir, limits, hidden, uid)]
    else:
        km.wrapper = [*prefix, "env", "-i", *[f"{k}={v}" for k, v in
                                              kernel_env(str(work / "home")).items()]]
        (work / "home").mkdir(exist_ok=True)
    return km
