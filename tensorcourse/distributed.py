"""Small, bounded DistributedDataParallel (DDP) experiments on the CPU (gloo backend).

A notebook cannot hand a function it defines itself to a spawned process (the child
re-imports its target by module and name, and a notebook cell is not a module), so the
worker code of notebook 06 lives here. :func:`run_ddp` starts ``world_size`` fresh Python
processes on this machine (with ``subprocess``, so the calling script or notebook needs no
``if __name__ == "__main__"`` guard), lets each run a list of :class:`Scenario` objects
(one model, one DDP setting, a few training steps each) and returns what every rank
observed as plain data (:class:`RankReport`): whether training worked, the error message
DDP raised, which parameters had no gradient, how many gradient bytes were all-reduced
per iteration, how long each step took, and what DDP wrote to its log.

The run is bounded and tidy, whatever happens:

* rendezvous on ``MASTER_ADDR=127.0.0.1`` and a free port (found by binding a socket to
  port 0); ``init_process_group`` and every collective get a timeout;
* the parent waits at most ``timeout_s`` seconds in all, then terminates (and if need be
  kills) the children and raises :class:`DistributedRunError` with their logs;
* each child always calls ``destroy_process_group`` and writes its result to a file in a
  temporary folder that is removed afterwards; no child outlives :func:`run_ddp`.

Only the models in :data:`MODELS` can be used (a child builds them by name)::

    from tensorcourse import distributed
    runs = distributed.run_ddp([distributed.Scenario("plain", "conditional")])
    runs["plain"][0].error   # rank 0's message: "Expected to have finished reduction ..."

Notebook 11 uses :func:`run_hangs` the same way for *hangs*: collectives that do not match
across ranks (a barrier only rank 0 calls, an all-reduce on one rank and a broadcast on
the other), each with a short collective timeout so that the hang ends in an error, and
optionally ``TORCH_DISTRIBUTED_DEBUG=DETAIL``. See :data:`HANG_KINDS` and
:class:`HangScenario`; each rank reports a :class:`HangReport`::

    runs = distributed.run_hangs([distributed.HangScenario("trap", "rank0_barrier")])
    runs["trap"][0].error    # rank 0: "... Timed out waiting 1500ms for recv operation ..."
"""

from __future__ import annotations

import datetime
import os
import pickle
import socket
import subprocess
import sys
import tempfile
import time
import traceback
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import torch
from torch import nn

__all__ = [
    "HANG_KINDS",
    "MODELS",
    "DistributedRunError",
    "HangReport",
    "HangScenario",
    "RankReport",
    "Scenario",
    "free_port",
    "is_available",
    "run_ddp",
    "run_hangs",
]


# ---- the models a child can build by name ----------------------------------------------------

class AllUsed(nn.Module):
    """Two linear layers, both used by every forward pass."""

    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Linear(8, 8)
        self.head = nn.Linear(8, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(torch.relu(self.body(x)))


class Conditional(nn.Module):
    """The article's model: ``branch_a`` or ``branch_b`` depending on the batch.

    The branch that does not run produces no gradient for its parameters in that step.
    """

    def __init__(self) -> None:
        super().__init__()
        self.branch_a = nn.Linear(8, 1)
        self.branch_b = nn.Linear(8, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.sum() > 0:
            return self.branch_a(x)
        return self.branch_b(x)


class ZeroedGrads(Conditional):
    """The article's "fix": inside ``forward``, zero the ``.grad`` of the branch not taken.

    It does not help: DDP learns that a parameter is ready from an autograd hook that
    fires when the gradient is *computed*; writing zeros into ``.grad`` fires no hook.
    """

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.sum() > 0:
            out = self.branch_a(x)
            unused = self.branch_b
        else:
            out = self.branch_b(x)
            unused = self.branch_a
        for p in unused.parameters():
            if p.grad is not None:
                p.grad.zero_()
        return out


class Gated(Conditional):
    """The soft switch: a learned gate mixes both branches, so every parameter is used."""

    def __init__(self) -> None:
        super().__init__()
        self.gate_head = nn.Linear(8, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        gate = torch.sigmoid(self.gate_head(x).mean())
        return gate * self.branch_a(x) + (1 - gate) * self.branch_b(x)


class UnusedHead(AllUsed):
    """A leftover auxiliary head that is defined (so DDP registers it) but never called."""

    def __init__(self) -> None:
        super().__init__()
        self.aux_head = nn.Linear(8, 3)


class FrozenExtra(AllUsed):
    """Has an extra frozen layer (``requires_grad=False``) that ``forward`` never calls."""

    def __init__(self) -> None:
        super().__init__()
        self.frozen = nn.Linear(8, 8)
        self.frozen.requires_grad_(False)


class ZeroTimes(Conditional):
    """Adds ``0 * branch_b(x)`` to ``branch_a(x)``."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.branch_a(x) + 0 * self.branch_b(x)


class DetachedBranch(Conditional):
    """Adds ``branch_b(x).detach()`` to ``branch_a(x)``."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.branch_a(x) + self.branch_b(x).detach()


class NoGradScale(AllUsed):
    """Scales the output by a factor computed from a parameter under ``torch.no_grad()``."""

    def __init__(self) -> None:
        super().__init__()
        self.scale = nn.Parameter(torch.ones(1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            s = self.scale.abs() + 1
        return self.head(torch.relu(self.body(x))) * s


class Tied(nn.Module):
    """Applies the same layer twice (shared weights)."""

    def __init__(self) -> None:
        super().__init__()
        self.layer = nn.Linear(8, 8)
        self.head = nn.Linear(8, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.layer(torch.relu(self.layer(x))))


#: Name -> model class. :class:`Scenario.model` must be one of these names.
MODELS: dict[str, Callable[[], nn.Module]] = {
    "all_used": AllUsed,
    "conditional": Conditional,
    "zeroed_grads": ZeroedGrads,
    "gated": Gated,
    "unused_head": UnusedHead,
    "frozen_extra": FrozenExtra,
    "zero_times": ZeroTimes,
    "detached_branch": DetachedBranch,
    "no_grad_scale": NoGradScale,
    "tied": Tied,
}


# ---- what the parent asks for and what it gets back ------------------------------------------

@dataclass(frozen=True)
class Scenario:
    """One experiment: wrap ``MODELS[model]`` in DDP and train it for ``steps`` steps.

    ``name`` is the experiment's key in :func:`run_ddp`'s result (names must be unique).
    ``find_unused_parameters`` and ``static_graph`` are passed to DDP unchanged.
    Each rank gets different random batches of shape ``(batch, 8)`` (half of them with a
    positive sum on average, so a :class:`Conditional` model takes different branches on
    different steps and ranks). The first step counts as warm-up in ``step_seconds``.
    """

    name: str
    model: str
    find_unused_parameters: bool = False
    steps: int = 3
    batch: int = 4
    static_graph: bool = False

    def validate(self) -> None:
        """Raise ``ValueError`` with a clear message when the scenario cannot run."""
        if self.model not in MODELS:
            raise ValueError(f"Scenario {self.name!r}: unknown model {self.model!r}; "
                             f"choose one of {sorted(MODELS)}")
        if not isinstance(self.steps, int) or self.steps < 1:
            raise ValueError(f"Scenario {self.name!r}: steps must be an int >= 1, got {self.steps!r}")
        if not isinstance(self.batch, int) or self.batch < 1:
            raise ValueError(f"Scenario {self.name!r}: batch must be an int >= 1, got {self.batch!r}")


@dataclass(frozen=True)
class RankReport:
    """What one rank saw while running one :class:`Scenario`.

    ``ok`` is True when every step finished. Otherwise ``error_type``/``error`` hold the
    exception (its type name and full message) and ``steps_done`` how many steps finished
    before it. ``grads_missing`` names the parameters whose ``.grad`` was ``None`` right
    after the last successful ``backward()``; ``comm_bytes`` is the number of gradient
    bytes this rank all-reduced in that step (counted by a DDP communication hook, so it
    is exactly what went through the collective); ``step_seconds`` is the wall time of
    each finished step; ``param_checksum`` is the sum of all parameters at the end (equal
    on every rank when DDP kept the replicas in sync); ``log`` is what DDP and gloo wrote
    to this process's stdout/stderr during the scenario, and ``warnings`` the messages of
    Python warnings raised during it.
    """

    rank: int
    scenario: str
    ok: bool
    steps_done: int
    error_type: str | None = None
    error: str | None = None
    grads_missing: tuple[str, ...] = ()
    comm_bytes: int = 0
    step_seconds: tuple[float, ...] = ()
    param_checksum: float = 0.0
    log: str = ""
    warnings: tuple[str, ...] = field(default_factory=tuple)


class DistributedRunError(RuntimeError):
    """The worker processes did not all report back in time (or crashed); carries their logs."""


def is_available() -> bool:
    """True when this torch build has ``torch.distributed`` with the gloo backend."""
    import torch.distributed as dist

    return bool(dist.is_available() and dist.is_gloo_available())


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port on ``host`` that was free a moment ago (the OS picks it for port 0).

    Another program could take it before the workers bind it; on this kind of demo
    machine that is unlikely, and the rendezvous timeout bounds the damage.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


# ---- the child side ---------------------------------------------------------------------------

def _batch(rank: int, step: int, batch: int) -> torch.Tensor:
    gen = torch.Generator().manual_seed(1000 * rank + step)
    return torch.randn(batch, 8, generator=gen)


def _run_scenario(sc: Scenario, rank: int, world_size: int, timeout: datetime.timedelta,
                  log_path: Path) -> RankReport:
    import torch.distributed as dist
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
    from torch.nn.parallel import DistributedDataParallel as DDP

    _flush_streams()
    start_offset = log_path.stat().st_size
    # A fresh group per scenario: whatever one scenario leaves behind cannot confuse the next.
    group = dist.new_group(ranks=list(range(world_size)), timeout=timeout, backend="gloo")
    torch.manual_seed(0)                                # same initial weights on every rank
    model = MODELS[sc.model]()
    counted = {"bytes": 0}

    # No annotations on the hook: DDP inspects them, and postponed (string) annotations fail.
    def counting_allreduce(state, bucket):  # type: ignore[no-untyped-def]
        buf = bucket.buffer()
        counted["bytes"] += buf.numel() * buf.element_size()
        return default_hooks.allreduce_hook(group, bucket)

    steps_done, times, missing = 0, [], ()
    error_type = error = None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            ddp = DDP(model, process_group=group, find_unused_parameters=sc.find_unused_parameters,
                      static_graph=sc.static_graph)
            ddp.register_comm_hook(None, counting_allreduce)
            opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
            for step in range(sc.steps):
                t0 = time.perf_counter()
                counted["bytes"] = 0
                loss = ddp(_batch(rank, step, sc.batch)).pow(2).mean()
                loss.backward()
                missing = tuple(n.removeprefix("module.") for n, p in ddp.named_parameters()
                                if p.grad is None)
                opt.step()
                opt.zero_grad(set_to_none=True)
                times.append(time.perf_counter() - t0)
                steps_done += 1
        except Exception as err:  # noqa: BLE001 - the report carries any failure to the parent
            error_type, error = type(err).__name__, str(err)
    checksum = float(sum(p.detach().double().sum().item() for p in model.parameters()))
    _flush_streams()
    with open(log_path, encoding="utf-8", errors="replace") as fh:
        fh.seek(start_offset)
        log = fh.read()
    dist.destroy_process_group(group)
    return RankReport(
        rank=rank, scenario=sc.name, ok=error is None, steps_done=steps_done,
        error_type=error_type, error=error, grads_missing=missing, comm_bytes=counted["bytes"],
        step_seconds=tuple(times), param_checksum=checksum, log=log,
        warnings=tuple(str(w.message) for w in caught),
    )


def _flush_streams() -> None:
    """Flush Python's stdout/stderr so the log file offsets are exact (child side)."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (AttributeError, ValueError, OSError):
            pass


def _worker(rank: int, workdir: str) -> None:
    """Entry point of each child process: read job.pkl, run the scenarios, write rank<r>.pkl.

    The parent starts it as ``python -c "...; _worker(rank, workdir)"`` with stdout and
    stderr already going to ``rank<r>.log``, so nothing DDP or gloo prints reaches the
    notebook.
    """
    import torch.distributed as dist

    folder = Path(workdir)
    with open(folder / "job.pkl", "rb") as fh:
        job = pickle.load(fh)
    world_size, timeout_s = job["world_size"], job["timeout_s"]
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(job["port"])
    torch.set_num_threads(1)                       # world_size processes share the cores
    timeout = datetime.timedelta(seconds=timeout_s)
    result: Any
    try:
        dist.init_process_group("gloo", rank=rank, world_size=world_size, timeout=timeout)
        try:
            result = [_run_scenario(sc, rank, world_size, timeout, folder / f"rank{rank}.log")
                      for sc in job["scenarios"]]
        finally:
            dist.destroy_process_group()
    except BaseException:  # noqa: BLE001 - hand the traceback to the parent
        result = "worker failed:\n" + traceback.format_exc()
    tmp = folder / f"rank{rank}.tmp"
    with open(tmp, "wb") as fh:
        pickle.dump(result, fh)
    os.replace(tmp, folder / f"rank{rank}.pkl")     # atomic: the parent never reads half a file


# ---- the parent side --------------------------------------------------------------------------

def _checked_job(caller: str, kind: type, scenarios: Sequence[Any], world_size: int,
                 timeout_s: float, *, min_world: int, why: str = "") -> list[Any]:
    """The arguments of :func:`run_ddp` / :func:`run_hangs`, refused with a clear error
    before any process starts; the scenarios as a list."""
    scenarios = list(scenarios)
    if not scenarios:
        raise ValueError(f"{caller} needs at least one {kind.__name__}")
    for sc in scenarios:
        if not isinstance(sc, kind):
            raise TypeError(f"{caller} takes {kind.__name__} objects, got {type(sc).__name__}")
        sc.validate()
    names = [sc.name for sc in scenarios]
    if len(set(names)) != len(names):
        raise ValueError(f"scenario names must be unique, got {names}")
    if not isinstance(world_size, int) or world_size < min_world:
        raise ValueError(f"world_size must be an int >= {min_world}{why}, got {world_size!r}")
    if not timeout_s > 0:
        raise ValueError(f"timeout_s must be positive, got {timeout_s!r}")
    if not is_available():
        raise RuntimeError("this torch build has no torch.distributed/gloo support; "
                           "install a standard torch wheel from pytorch.org")
    return scenarios


def _child_env() -> dict[str, str]:
    """This environment, with this package importable in the children (a notebook's
    working directory is not the repository)."""
    package_root = str(Path(__file__).resolve().parent.parent)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(x for x in (package_root, env.get("PYTHONPATH")) if x)
    return env


def _start_ranks(entry: str, job: dict[str, Any], folder: Path,
                 procs: list[subprocess.Popen], env: dict[str, str]) -> None:
    """Write ``job`` for the workers and start one process per rank running ``entry``.

    Appends to ``procs`` as it goes, so the caller's ``finally`` stops the ones that
    started even when a later one fails to."""
    with open(folder / "job.pkl", "wb") as fh:
        pickle.dump(job, fh)
    for r in range(job["world_size"]):
        with open(folder / f"rank{r}.log", "wb") as log:
            procs.append(subprocess.Popen(
                [sys.executable, "-c",
                 f"from tensorcourse.distributed import {entry}; {entry}({r}, {str(folder)!r})"],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                env=env, cwd=folder))


def run_ddp(scenarios: Sequence[Scenario], *, world_size: int = 2,
            timeout_s: float = 60.0) -> dict[str, tuple[RankReport, ...]]:
    """Run ``scenarios`` in ``world_size`` fresh processes; return ``{name: reports by rank}``.

    Blocks for at most about ``timeout_s`` seconds (starting the processes, which import
    torch, is part of it: allow 10 s or more on a slow laptop). On timeout, a crash, or a
    worker that cannot join the process group, every child is terminated and
    :class:`DistributedRunError` is raised with the children's logs. Errors *inside* a
    scenario (such as DDP's unused-parameter error) are not raised: they are reported in
    :attr:`RankReport.error`, and the next scenario still runs.
    """
    scenarios = _checked_job("run_ddp", Scenario, scenarios, world_size, timeout_s, min_world=1)
    names = [sc.name for sc in scenarios]
    deadline = time.monotonic() + timeout_s
    with tempfile.TemporaryDirectory(prefix="tc-ddp-") as workdir:
        folder = Path(workdir)
        job = {"world_size": world_size, "port": free_port(), "timeout_s": timeout_s,
               "scenarios": scenarios}
        procs: list[subprocess.Popen] = []
        finished = False
        try:
            _start_ranks("_worker", job, folder, procs, _child_env())
            results = _collect(procs, folder, world_size, deadline, timeout_s)
            finished = True
        finally:
            _stop(procs, grace_s=5.0 if finished else 0.0)
    by_name: dict[str, list[RankReport]] = {name: [] for name in names}
    for per_rank in results:
        for report in per_rank:
            by_name[report.scenario].append(report)
    return {name: tuple(sorted(reports, key=lambda r: r.rank)) for name, reports in by_name.items()}


def _logs(folder: Path, world_size: int) -> str:
    parts = []
    for r in range(world_size):
        path = folder / f"rank{r}.log"
        text = path.read_text(errors="replace")[-3000:] if path.exists() else "(no log)"
        parts.append(f"--- rank {r} ---\n{text}")
    return "\n".join(parts)


def _collect(procs: list[subprocess.Popen], folder: Path, world_size: int, deadline: float,
             timeout_s: float) -> list[list[RankReport]]:
    results: dict[int, Any] = {}
    while len(results) < world_size:
        for r in range(world_size):
            path = folder / f"rank{r}.pkl"
            if r not in results and path.exists():
                with open(path, "rb") as fh:
                    results[r] = pickle.load(fh)
        if len(results) == world_size:
            break
        dead = [r for r, p in enumerate(procs) if r not in results and p.poll() is not None
                and not (folder / f"rank{r}.pkl").exists()]
        if dead:
            raise DistributedRunError(f"rank(s) {dead} exited (code "
                                      f"{[procs[r].returncode for r in dead]}) without a result.\n"
                                      + _logs(folder, world_size))
        if time.monotonic() > deadline:
            raise DistributedRunError(f"no result from rank(s) "
                                      f"{[r for r in range(world_size) if r not in results]} "
                                      f"within {timeout_s:g} s; children terminated.\n"
                                      + _logs(folder, world_size))
        time.sleep(0.02)
    failed = {r: v for r, v in results.items() if isinstance(v, str)}
    if failed:
        raise DistributedRunError("\n".join(f"rank {r}: {msg}" for r, msg in failed.items())
                                  + "\n" + _logs(folder, world_size))
    return [results[r] for r in range(world_size)]


def _stop(procs: list[subprocess.Popen], grace_s: float = 5.0) -> None:
    """Wait for the children; terminate, then kill, any still running after ``grace_s``."""
    end = time.monotonic() + grace_s
    for p in procs:
        try:
            p.wait(max(0.0, end - time.monotonic()))
        except subprocess.TimeoutExpired:
            pass
    for p in procs:
        if p.poll() is None:
            p.terminate()
    for p in procs:
        try:
            p.wait(2.0)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


# ---- hangs: collectives that do not match across ranks (notebook 11) -------------------------

#: Kind -> what each rank does in a :class:`HangScenario` (``delay`` is ``rank0_delay_s``).
HANG_KINDS: dict[str, str] = {
    "barrier": "rank 0 sleeps `delay` (its 'validation'), then every rank calls barrier()",
    "rank0_barrier": "only rank 0 calls barrier() (a barrier inside `if rank == 0:`)",
    "monitored_barrier": "rank 0 sleeps `delay`, then every rank calls monitored_barrier()",
    "rank0_monitored_barrier": "only rank 0 calls monitored_barrier()",
    "allreduce": "every rank all-reduces (sums) torch.ones(4)",
    "rank0_allreduce": "only rank 0 all-reduces torch.ones(4) (a metric inside `if rank == 0:`)",
    "allreduce_vs_broadcast": "rank 0 all-reduces torch.ones(4), the others broadcast it",
    "allreduce_shapes": "rank r all-reduces torch.ones(4 + r): the shapes differ",
}


@dataclass(frozen=True)
class HangScenario:
    """One bounded desynchronisation experiment: see :data:`HANG_KINDS` for ``kind``.

    Each scenario gets a fresh gloo process group whose collectives time out after
    ``timeout_s`` seconds (the default for a real job is 30 minutes: that is why a real
    hang looks like a freeze). ``debug`` is what ``TORCH_DISTRIBUTED_DEBUG`` is set to
    while the group is created and used (``"OFF"``, ``"INFO"`` or ``"DETAIL"``).
    """

    name: str
    kind: str
    timeout_s: float = 1.5
    debug: str = "OFF"
    rank0_delay_s: float = 0.0

    def validate(self) -> None:
        """Raise ``ValueError`` with a clear message when the scenario cannot run."""
        if self.kind not in HANG_KINDS:
            raise ValueError(f"HangScenario {self.name!r}: unknown kind {self.kind!r}; "
                             f"choose one of {sorted(HANG_KINDS)}")
        if not 0 < self.timeout_s <= 60:
            raise ValueError(f"HangScenario {self.name!r}: timeout_s must be in (0, 60] "
                             f"seconds, got {self.timeout_s!r}")
        if self.debug not in ("OFF", "INFO", "DETAIL"):
            raise ValueError(f"HangScenario {self.name!r}: debug must be 'OFF', 'INFO' or "
                             f"'DETAIL', got {self.debug!r}")
        if not 0 <= self.rank0_delay_s <= 30:
            raise ValueError(f"HangScenario {self.name!r}: rank0_delay_s must be in [0, 30], "
                             f"got {self.rank0_delay_s!r}")


@dataclass(frozen=True)
class HangReport:
    """What one rank saw in one :class:`HangScenario`.

    ``ok`` is True when the rank's collective (if it called one) returned. Otherwise
    ``error_type``/``error`` hold the exception's type name and message, or
    ``error_type == "ProcessDied"`` when the process itself was killed (gloo aborts the
    process on some mismatches); ``exit_code`` is then its exit status (negative: the
    signal). ``seconds`` is the time from the moment both ranks started the scenario to
    the end of this rank's part (None if it died). ``value`` is the sum of the all-reduced
    or broadcast tensor when there was one. ``log`` is what torch and gloo wrote to this
    process's stdout/stderr during the scenario: the messages that name the culprit.
    """

    rank: int
    scenario: str
    ok: bool
    error_type: str | None = None
    error: str | None = None
    seconds: float | None = None
    value: float | None = None
    log: str = ""
    exit_code: int | None = None


_MARK = "### tensorcourse scenario "


def _hang_body(sc: HangScenario, rank: int, group: Any) -> float | None:
    import torch.distributed as dist

    if sc.kind in ("barrier", "monitored_barrier") and rank == 0:
        time.sleep(sc.rank0_delay_s)
    timeout = datetime.timedelta(seconds=sc.timeout_s)
    t = torch.ones(4 + (rank if sc.kind == "allreduce_shapes" else 0))
    if sc.kind == "barrier" or (sc.kind == "rank0_barrier" and rank == 0):
        dist.barrier(group=group)
    elif sc.kind == "monitored_barrier" or (sc.kind == "rank0_monitored_barrier" and rank == 0):
        dist.monitored_barrier(group=group, timeout=timeout)
    elif sc.kind in ("allreduce", "allreduce_shapes") or (sc.kind == "rank0_allreduce" and rank == 0):
        dist.all_reduce(t, group=group)
        return float(t.sum())
    elif sc.kind == "allreduce_vs_broadcast":
        if rank == 0:
            dist.all_reduce(t, group=group)
        else:
            dist.broadcast(t, src=0, group=group)
        return float(t.sum())
    return None


def _hang_worker(rank: int, workdir: str) -> None:
    """Entry point of each child of :func:`run_hangs`: one report file per scenario.

    The store (hosted by rank 0) lines the ranks up before and after every scenario, so
    whatever one scenario leaves unmatched cannot leak into the next; every wait on it is
    bounded. Each report is written as soon as its scenario ends, so a later crash cannot
    lose it.
    """
    import torch.distributed as dist

    folder = Path(workdir)
    with open(folder / "job.pkl", "rb") as fh:
        job = pickle.load(fh)
    world_size = job["world_size"]
    torch.set_num_threads(1)
    sync_timeout = datetime.timedelta(seconds=job["sync_timeout_s"])
    store = dist.TCPStore("127.0.0.1", job["port"], world_size, rank == 0, timeout=sync_timeout)
    dist.init_process_group("gloo", store=store, rank=rank, world_size=world_size,
                            timeout=sync_timeout)

    def line_up(tag: str) -> None:
        store.set(f"{tag}/{rank}", "1")
        store.wait([f"{tag}/{r}" for r in range(world_size)], sync_timeout)

    for i, sc in enumerate(job["scenarios"]):
        os.environ["TORCH_DISTRIBUTED_DEBUG"] = sc.debug
        dist.set_debug_level_from_env()
        line_up(f"{i}/pre")
        group = dist.new_group(list(range(world_size)), backend="gloo",
                               timeout=datetime.timedelta(seconds=sc.timeout_s))
        line_up(f"{i}/start")
        print(f"{_MARK}{i}", flush=True)
        t0 = time.monotonic()
        error_type = error = value = None
        try:
            value = _hang_body(sc, rank, group)
        except Exception as err:  # noqa: BLE001 - the report carries any failure to the parent
            error_type, error = type(err).__name__, str(err)
        seconds = time.monotonic() - t0
        _flush_streams()
        report = {"rank": rank, "scenario": sc.name, "ok": error is None, "error_type": error_type,
                  "error": error, "seconds": seconds, "value": value}
        tmp = folder / f"rank{rank}-{i}.tmp"
        with open(tmp, "wb") as fh:
            pickle.dump(report, fh)
        os.replace(tmp, folder / f"rank{rank}-{i}.pkl")
        line_up(f"{i}/end")
        dist.destroy_process_group(group)
    os.environ["TORCH_DISTRIBUTED_DEBUG"] = "OFF"
    dist.set_debug_level_from_env()
    line_up("finished")
    dist.destroy_process_group()


def _split_log(text: str, count: int) -> list[str]:
    """The part of a child's log written during each scenario (split at the markers)."""
    parts = [""] * count
    current = None
    for line in text.splitlines(keepends=True):
        if line.startswith(_MARK):
            current = int(line[len(_MARK):].strip())
            continue
        if current is not None and 0 <= current < count:
            parts[current] += line
    return parts


def run_hangs(scenarios: Sequence[HangScenario], *, world_size: int = 2,
              timeout_s: float = 60.0) -> dict[str, tuple[HangReport, ...]]:
    """Run ``scenarios`` one after the other in ``world_size`` fresh processes (gloo, CPU).

    Returns ``{name: reports by rank}``. A rank that hangs in a collective is freed by the
    scenario's ``timeout_s`` and reports the error it got. A rank whose process dies (gloo
    aborts the process on some mismatches) gets a ``"ProcessDied"`` report for that
    scenario and for every later one; so does its peer for the scenarios it could not reach.
    Put a scenario that may crash last, or run it in a call of its own.

    Bounded: the whole call takes at most about ``timeout_s`` seconds (starting the
    processes, which import torch, is part of it); past that every child is terminated
    and :class:`DistributedRunError` is raised with their logs. No child outlives the call.
    """
    scenarios = _checked_job("run_hangs", HangScenario, scenarios, world_size, timeout_s,
                             min_world=2, why=" (a hang needs two ranks)")
    deadline = time.monotonic() + timeout_s
    env = _child_env()
    env.pop("TORCH_DISTRIBUTED_DEBUG", None)  # each scenario sets its own debug level
    sync_timeout_s = max(10.0, 2 * max(sc.timeout_s + sc.rank0_delay_s for sc in scenarios) + 5)
    with tempfile.TemporaryDirectory(prefix="tc-hang-") as workdir:
        folder = Path(workdir)
        job = {"world_size": world_size, "port": free_port(), "sync_timeout_s": sync_timeout_s,
               "scenarios": scenarios}
        procs: list[subprocess.Popen] = []
        try:
            _start_ranks("_hang_worker", job, folder, procs, env)
            while any(p.poll() is None for p in procs):
                if time.monotonic() > deadline:
                    _stop(procs, grace_s=0.0)
                    raise DistributedRunError(f"run_hangs did not finish within {timeout_s:g} s; "
                                              "children terminated.\n" + _logs(folder, world_size))
                time.sleep(0.02)
        finally:
            _stop(procs, grace_s=0.0)
        return _hang_reports(scenarios, procs, folder, world_size)


def _hang_reports(scenarios: list[HangScenario], procs: list[subprocess.Popen], folder: Path,
                  world_size: int) -> dict[str, tuple[HangReport, ...]]:
    out: dict[str, list[HangReport]] = {sc.name: [] for sc in scenarios}
    for r in range(world_size):
        log_path = folder / f"rank{r}.log"
        text = log_path.read_text(errors="replace") if log_path.exists() else ""
        logs = _split_log(text, len(scenarios))
        code = procs[r].returncode
        died_in = None
        for i, sc in enumerate(scenarios):
            path = folder / f"rank{r}-{i}.pkl"
            if path.exists():
                with open(path, "rb") as fh:
                    out[sc.name].append(HangReport(**pickle.load(fh), log=logs[i]))
                continue
            if died_in is None:
                died_in = sc.name
                why = (f"no report: the process exited with code {code} before finishing "
                       "this scenario (its log says why)")
                tail = logs[i][-3000:]
            else:
                why = (f"not run: the process had exited (code {code}) before finishing "
                       f"scenario {died_in!r}")
                tail = ""
            out[sc.name].append(HangReport(rank=r, scenario=sc.name, ok=False,
                                           error_type="ProcessDied", error=why,
                                           log=tail, exit_code=code))
    return {name: tuple(reports) for name, reports in out.items()}
