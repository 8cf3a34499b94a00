"""Run a learner's kernel in a bubblewrap sandbox, with resource limits.

Contract: :func:`kernel_manager` returns a jupyter_client kernel manager whose kernel runs

* under ``bwrap`` (Debian's bubblewrap): new user, PID, network, IPC and UTS namespaces, so no
  network and no process outlives the sandbox (the PID namespace dies with its first process);
  all capabilities dropped; a filesystem that shows only ``/usr``, a few files of ``/etc``, the
  Python installation and the ``tensorcourse`` package, all read-only (never ``solutions/``,
  the gradebook, other submissions or the rest of the checkout); ``/tmp``, ``/dev/shm`` and
  ``$HOME`` are small private tmpfs; the one host folder it can write is its own socket folder,
  a fresh ``mkdtemp`` the grader removes afterwards;
* with ``RLIMIT_AS`` (memory), ``RLIMIT_CPU``, ``RLIMIT_FSIZE`` and a process limit
  (``RLIMIT_NPROC``, or a pids cgroup when the grader is root, which that limit ignores);
* talking to the grader over ZMQ's ``ipc`` transport: unix sockets in the socket folder.

:func:`unavailable` says why the sandbox cannot run here (``None`` when it can). With
``sandboxed=False`` the same manager runs the kernel without bwrap (limits still apply):
the grader then warns on every run (see :mod:`autograder.cli`).
"""

from __future__ import annotations

import functools
import importlib.util
import os
import shutil
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from jupyter_client.manager import AsyncKernelManager

LIMITER = Path(__file__).with_name("rlimit_exec.py")
SANDBOX_HOME = "/home/learner"
MIB = 1 << 20
# /etc files a Python process reads (dynamic loader cache, fonts, time zone, users).
ETC_FILES = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "alternatives", "fonts", "localtime",
             "passwd", "group", "nsswitch.conf", "mime.types", "ssl/certs")


@dataclass(frozen=True)
class Limits:
    """What one submission's kernel may use. Wall-clock limits are enforced by the runner."""

    cell_timeout: int = 60          # seconds per cell, then interrupted (scores 0)
    notebook_timeout: int = 900     # seconds per notebook, then killed (the rest scores 0)
    memory_bytes: int = 6 * 1024 * MIB   # address space per process (RLIMIT_AS)
    cpu_seconds: int = 1800         # CPU time per process (RLIMIT_CPU)
    file_bytes: int = 64 * MIB      # largest file it may write (RLIMIT_FSIZE)
    processes: int = 64             # processes it may add (RLIMIT_NPROC or a pids cgroup)
    tmpfs_bytes: int = 512 * MIB    # size of each private tmpfs (/tmp, /dev/shm, $HOME)
    output_bytes: int = 1 * MIB     # notebook output kept; beyond, only grading lines are kept


@functools.lru_cache(maxsize=1)
def unavailable() -> str | None:
    """Why bubblewrap cannot sandbox kernels here, or ``None`` when it can (checked once)."""
    if not sys.platform.startswith("linux"):
        return f"bubblewrap needs Linux; this is {sys.platform}"
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return "bubblewrap (`bwrap`) is not installed (Debian/Ubuntu: apt-get install bubblewrap)"
    probe = [bwrap, *_namespace_args(), "--ro-bind", "/usr", "/usr", *_usr_links(), "--",
             "/usr/bin/true"]
    try:
        run = subprocess.run(probe, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as err:
        return f"bubblewrap failed to start: {err}"
    if run.returncode != 0:
        return ("bubblewrap cannot create namespaces here (user namespaces disabled, or a "
                f"container without them): {run.stderr.strip()[:200]}")
    return None


def container_hint() -> str:
    """What to do where bubblewrap cannot run: a Linux container, if a runtime is installed."""
    runtime = next((r for r in ("docker", "podman") if shutil.which(r)), None)
    where = (f"`{runtime}` is installed: grade inside the course's Binder image "
             f"(`{runtime} run --rm --security-opt seccomp=unconfined --security-opt "
             "apparmor=unconfined -v $PWD:/course -w /course IMAGE python -m autograder grade ...`), "
             "where bubblewrap works, or run one container per submission (autograder/README.md, "
             "'Beyond one machine')") if runtime else (
             "install Docker or Podman and grade inside the course's Binder image (see "
             "autograder/README.md, 'Grading safely')")
    return (f"{where}. `--no-sandbox` grades without isolation: only for submissions you trust.")


def _namespace_args() -> list[str]:
    return ["--unshare-all", "--unshare-user", "--uid", "65534", "--gid", "65534",
            "--die-with-parent", "--cap-drop", "ALL", "--hostname", "sandbox"]


def _usr_links() -> list[str]:
    """Merged-/usr systems link /bin, /lib... into /usr; older ones have real folders."""
    args: list[str] = []
    for name in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
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


def bwrap_args(socket_dir: Path, limits: Limits, hidden: list[Path]) -> list[str]:
    """The ``bwrap`` command line, up to and including ``--``."""
    args = ["bwrap", *_namespace_args(), "--ro-bind", "/usr", "/usr", *_usr_links()]
    for name in ETC_FILES:
        args += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
    for d in _python_dirs(hidden):
        args += ["--ro-bind", str(d), str(d)]
    size = str(limits.tmpfs_bytes)
    args += ["--proc", "/proc", "--dev", "/dev",
             "--size", size, "--tmpfs", "/tmp", "--size", size, "--tmpfs", "/dev/shm",
             "--size", size, "--tmpfs", SANDBOX_HOME,
             "--bind", str(socket_dir), str(socket_dir), "--chdir", SANDBOX_HOME,
             "--clearenv"]
    for key, value in kernel_env(SANDBOX_HOME).items():
        args += ["--setenv", key, value]
    return args + ["--"]


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


def _user_process_count() -> int:
    uid = os.getuid()
    count = 0
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                if entry.stat().st_uid == uid:
                    count += 1
            except OSError:
                continue
    return count


def pids_cgroup(limit: int) -> Path | None:
    """A fresh cgroup-v1 pids group capped at ``limit`` (root only), or ``None``."""
    root = Path("/sys/fs/cgroup/pids")
    if os.geteuid() != 0 or not (root / "cgroup.procs").exists() or not os.access(root, os.W_OK):
        return None
    group = root / f"tio-{uuid.uuid4().hex[:12]}"
    try:
        group.mkdir()
        (group / "pids.max").write_text(str(limit))
    except OSError:
        return None
    return group


def remove_cgroup(group: Path | None) -> None:
    if group is not None:
        try:
            group.rmdir()
        except OSError:
            pass  # still has a process: the kernel is being killed; leave it for the OS


def limiter_prefix(limits: Limits, cgroup: Path | None) -> list[str]:
    """``python rlimit_exec.py SPEC --``: sets the limits, then execs the rest."""
    spec = [f"as={limits.memory_bytes}", f"cpu={limits.cpu_seconds}",
            f"fsize={limits.file_bytes}"]
    if cgroup is not None:
        spec.append(f"cgroup={cgroup}")
    elif os.geteuid() != 0:
        spec.append(f"nproc={_user_process_count() + limits.processes}")
    return [sys.executable, "-I", "-S", str(LIMITER), ",".join(spec), "--"]


class SandboxedKernelManager(AsyncKernelManager):
    """An ``AsyncKernelManager`` that prefixes the kernel command with limits and bwrap.

    Set :attr:`wrapper` (the command prefix) before starting the kernel; transport and
    connection file are pointed at the socket folder by :func:`kernel_manager`.
    """

    wrapper: list[str] = []

    def format_kernel_cmd(self, extra_arguments: list[str] | None = None) -> list[str]:
        return [*self.wrapper, *super().format_kernel_cmd(extra_arguments)]

    async def _async_launch_kernel(self, kernel_cmd: list[str], **kw: object) -> None:
        # The kernel's own stdout/stderr (bwrap's messages, C-level warnings) go to a log in
        # its socket folder, not to the grader's terminal; the runner reads it on failure.
        with open(Path(self.connection_file).with_name("kernel.log"), "ab") as log:
            kw["stdout"], kw["stderr"] = log, log
            await super()._async_launch_kernel(kernel_cmd, **kw)
        self.launched = getattr(self.provisioner, "process", None)

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


def kernel_manager(socket_dir: Path, limits: Limits, *, sandboxed: bool, hidden: list[Path],
                   cgroup: Path | None) -> SandboxedKernelManager:
    """A kernel manager for one submission; sockets and connection file live in ``socket_dir``."""
    km = SandboxedKernelManager(kernel_name="python3", transport="ipc",
                                ip=str(socket_dir / "kernel"),
                                connection_file=str(socket_dir / "kernel.json"))
    # Interrupt with a control message: ipykernel then signals itself. A SIGINT to the process
    # group would reach bwrap's own processes too and end the whole sandbox, not the cell.
    km.kernel_spec.interrupt_mode = "message"
    prefix = limiter_prefix(limits, cgroup)
    if sandboxed:
        km.wrapper = [*prefix, *bwrap_args(socket_dir, limits, hidden)]
    else:
        km.wrapper = [*prefix, "env", "-i", *[f"{k}={v}" for k, v in
                                              kernel_env(str(socket_dir / "home")).items()]]
        (socket_dir / "home").mkdir(exist_ok=True)
    return km
