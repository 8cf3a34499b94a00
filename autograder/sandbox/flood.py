"""What a kernel may send the grader: an output flood costs the learner, never the grader.

The grader reads every message the kernel sends (the test results are in them), so a
submission that prints without end would otherwise grow the grader's memory: ZMQ queues what
the grader has not read yet, up to 1000 messages a socket, each as large as the kernel can make
it (red team of #29: a cell printing 60 MB 120 times held 3.9 GB in the grader). Three bounds,
each *seen* when crossed, so that a cell never waits for what was dropped:

* **One message:** none over :data:`MAX_MESSAGE_BYTES` is read (ZMQ's ``MAXMSGSIZE`` on the
  client's own sockets). libzmq then drops the connection for good, so a monitor on each
  socket reports the disconnect, and :meth:`FloodGuard.why_stopped` names it once the kernel
  is seen alive after it with its control channel still connected (a dying kernel disconnects
  every socket, and is reported as dying).
* **Waiting:** at most :data:`MAX_QUEUED` messages wait in the grader per socket (``RCVHWM``);
  the rest wait in the kernel's own ZMQ queue, in the sandbox's memory budget. Where even that
  is full (1000 more), ZMQ drops output: the guard notes when the grader fell that far behind
  during a cell (:attr:`FloodGuard.behind`: :data:`BEHIND_STREAK` reads without a pause), so
  a flooding cell whose last output then never arrives costs that cell (what was dropped
  counts as never printed, and the cell says so), not the notebook, and is never taken for
  the machine's failure ("not graded").
* **In all:** at most :data:`OUTPUT_BUDGET_BYTES` read over a notebook; the grader keeps 1 MiB
  of output and the course's own lines, so more is a flood whatever its pace.
* **Shape:** a message is parsed into Python objects before anything can look at it, and a
  learner's ``_repr_json_`` chooses its shape: 8 MB of ``[[[...]]]`` parses into 370 MB of
  lists (red team of the flood bound). A message with more than :data:`MAX_NESTED_VALUES`
  opening brackets is not parsed: :class:`FloodStop` ends the notebook.

Crossing a bound sets the reason the watchdog (:mod:`autograder.pipeline.unit`) stops the sandbox for:
the cells that did not run score 0, and the notebook's Problems line says which bound.
:data:`GRADER_HELD_BYTES` is what one notebook may make the grader hold, counted per job by
``--jobs`` (:func:`autograder.sandbox.cgroup.jobs_that_fit`).
"""

from __future__ import annotations

import threading
import time
from typing import Any

import zmq
import zmq.asyncio
from jupyter_client.asynchronous import AsyncKernelClient
from zmq.utils.monitor import parse_monitor_message

MIB = 1 << 20
MAX_MESSAGE_BYTES = 8 * MIB      # an honest notebook's largest message (a figure) is well under 1 MiB
MAX_QUEUED = 16                  # messages waiting in the grader, per socket
OUTPUT_BUDGET_BYTES = 256 * MIB  # read from one kernel over a whole notebook
# Waiting messages, plus the one being read, its parsed copy and the grader's measure of it.
GRADER_HELD_BYTES = (MAX_QUEUED + 3) * MAX_MESSAGE_BYTES
MAX_NESTED_VALUES = 100_000      # '[' and '{' in one message: each may become a list or dict
# Messages read without the kernel pausing (no wait over QUIET_S) before the grader counts as
# fallen behind: ZMQ drops output only once the kernel's own queue is full too (its send limit,
# ZMQ's default of 1000 messages; ipykernel sets none). An honest cell's burst (its test's value
# lines, a figure) is tens: red team of this bound, when it was MAX_QUEUED read with more
# waiting, saw every honest notebook flagged. ("More waiting" also flickers off while ZMQ's
# thread refills the grader's queue: time is the steadier sign.)
BEHIND_STREAK = 1000
QUIET_S = 0.05
FLOOD_IOPUB_WAIT = 10            # s: how long a cell's last output is awaited once the grader fell behind
CHANNELS = ("shell", "iopub", "control", "stdin")
SETTLE_S = 1.0  # after a disconnect, how long a dying kernel has to show it is dying


class FloodStop(Exception):
    """Raised instead of parsing a message the grader must not parse; the run stops with its
    text as the reason (a graded cut: the learner's output, never a grader failure)."""


class BoundedKernelClient(AsyncKernelClient):
    """The kernel client whose sockets read no message over MAX_MESSAGE_BYTES and queue at most
    MAX_QUEUED: options set on its own context before any socket is made (jupyter_client's
    client makes a context of its own; options on the manager's never reach it)."""

    def _context_default(self) -> zmq.asyncio.Context:
        self._created_context = True
        context = zmq.asyncio.Context()
        context.setsockopt(zmq.MAXMSGSIZE, MAX_MESSAGE_BYTES)
        context.setsockopt(zmq.RCVHWM, MAX_QUEUED)
        return context


class FloodGuard:
    """One notebook's count of what its kernel sent, and whether a bound was crossed.

    :meth:`attach` wraps a started :class:`BoundedKernelClient`'s channels (in the client's
    event-loop thread); :meth:`why_stopped` is asked by the watchdog's thread.
    """

    def __init__(self) -> None:
        self.read_bytes = 0
        self.behind = False             # the grader fell behind during this cell (new_cell)
        self.disconnected: str = ""     # the channel ZMQ dropped first, if any
        self._gone: set[str] = set()    # every channel ZMQ dropped
        self._disconnected_at = 0.0
        self._over_budget = False
        self._stop = ""                 # a message refused unparsed (FloodStop)
        self.on_behind: Any = None      # called when the grader falls behind, once a cell
        self._lock = threading.Lock()
        self._monitors: list[tuple[str, zmq.asyncio.Socket]] = []

    def attach(self, kc: Any) -> None:
        for name in CHANNELS:
            socket = getattr(kc, f"{name}_channel").socket
            if socket is None:
                continue
            address = f"inproc://tio-monitor-{id(self)}-{name}"
            socket.monitor(address, zmq.EVENT_DISCONNECTED)
            monitor = kc.context.socket(zmq.PAIR)  # the client's context closes it with the rest
            monitor.connect(address)
            self._monitors.append((name, monitor))
            streak = [0]  # this socket's messages read since the kernel last paused
            self._count_reads(socket, streak)
            self._watch_waits(socket, streak)

    def _count_reads(self, socket: Any, streak: list[int]) -> None:
        original = socket.recv_multipart

        async def recv_multipart(*args: Any, **kwargs: Any) -> list[Any]:
            frames = await original(*args, **kwargs)
            raw = [f if isinstance(f, bytes) else f.bytes for f in frames]
            with self._lock:
                self.read_bytes += sum(len(f) for f in raw)
                self._over_budget = self.read_bytes > OUTPUT_BUDGET_BYTES
            if sum(f.count(b"[") + f.count(b"{") for f in raw) > MAX_NESTED_VALUES:
                with self._lock:
                    self._stop = (f"output flood: the kernel sent one message with more than "
                                  f"{MAX_NESTED_VALUES} nested values")
                raise FloodStop(self._stop)
            streak[0] += 1
            if streak[0] >= BEHIND_STREAK and not self.behind:
                self.behind = True
                if self.on_behind is not None:
                    self.on_behind()
            return frames

        socket.recv_multipart = recv_multipart

    def _watch_waits(self, socket: Any, streak: list[int]) -> None:
        """Look at the monitors after every poll (a wait is a poll every 0.2 s at most,
        ``tensorcourse.headless.slice_waits``): a dropped connection is noticed while the cell
        still waits for what it lost. A poll that waited over QUIET_S: the kernel paused."""
        original = socket.poll

        async def poll(*args: Any, **kwargs: Any) -> int:
            start = time.monotonic()
            try:
                return await original(*args, **kwargs)
            finally:
                if time.monotonic() - start > QUIET_S:
                    streak[0] = 0
                await self._read_monitors()

        socket.poll = poll

    async def _read_monitors(self) -> None:
        for name, monitor in self._monitors:
            while not monitor.closed and await monitor.poll(0):
                event = parse_monitor_message(await monitor.recv_multipart())
                if event["event"] == zmq.EVENT_DISCONNECTED:
                    with self._lock:
                        self._gone.add(name)
                        if not self.disconnected:
                            self.disconnected, self._disconnected_at = name, time.monotonic()

    def why_stopped(self, kernel_alive: bool) -> str:
        """Why the sandbox must stop now (``""``: no bound crossed). ``kernel_alive``: the
        kernel's process still runs; a disconnect is a bound only while it does."""
        with self._lock:
            if self._stop:
                return self._stop
            if self._over_budget:
                return (f"output flood: the notebook sent more than {OUTPUT_BUDGET_BYTES // MIB} "
                        "MiB of output")
            # A kernel that dies closes every socket; an oversized message drops one (two for
            # an error: its output and its reply), never the control channel, whose replies
            # the learner cannot make large. Its process can outlive it by a moment (the
            # sandbox's launcher): a pipeline run under load called a death a flood.
            if self.disconnected and kernel_alive and "control" not in self._gone \
                    and time.monotonic() - self._disconnected_at >= SETTLE_S:
                return (f"output flood: the kernel sent one message over "
                        f"{MAX_MESSAGE_BYTES // MIB} MiB ({self.disconnected} channel)")
        return ""

    def new_cell(self) -> None:
        """A cell starts: whether the grader falls behind is asked again (a flood costs the
        cell it happened in; the next cell's last output is awaited in full)."""
        self.behind = False

    def lost_output(self) -> str:
        """When a cell's last output never arrived: what the cell says if the grader fell behind
        during it (ZMQ dropped output the kernel sent too fast: the learner's), else ``""``
        (the machine's failure)."""
        if not self.behind:
            return ""
        return ("[output flood: this cell sent output faster than the grader reads it; the rest "
                "of its output was lost]\n")
