"""Headless notebook execution in which a lost socket wake-up costs a fraction of a second.

nbclient waits for a cell's ``execute_reply`` with one long ``poll`` of the shell socket
(as long as the cell timeout), and for its outputs with an unbounded poll of the IOPub
socket. A ZeroMQ socket tells asyncio it is readable through an *edge-triggered* file
descriptor; when that edge is consumed or missed, the poll is not woken, pyzmq checks the
socket once more only when the poll times out, and a reply that had been waiting is picked
up exactly at the deadline, the kernel long idle. That is the symptom reported for headless
runs of notebook 04 after its widget cell (and in jupyter/nbclient#312 for widget cells);
under grading the cell would be cut off and score 0. (It did not reproduce in about a hundred
runs with ipykernel 7.4.0, pyzmq 27.3.0 and nbclient 0.11.0, whose asyncio sockets re-check
after their own sends and EVENTS reads, so which operation ate the edge there is not known;
this module bounds the wait whatever consumed the client-side edge; a reply stuck inside
the kernel would not be helped by it.)

:class:`NoLostWakeups` turns every wait on those two channels into a series of short polls
(``SLICE_S``). Each ends with a direct check of the socket, so a missed wake-up costs at
most one slice instead of the whole timeout, whatever consumed the edge. Timeouts keep
their meaning (the total wait is unchanged). Mixed in front of nbclient's
``NotebookClient`` by ``tests/nbrun.py`` and of nbgrader's ``Execute`` by
``autograder/execute.py``; ``tests/test_headless.py`` tests both.
"""

from __future__ import annotations

from queue import Empty
from time import monotonic
from typing import Any

from jupyter_core.utils import run_sync
from nbclient import NotebookClient

SLICE_S = 0.2


def slice_waits(channel: Any, slice_s: float = SLICE_S) -> None:
    """Make ``channel.get_msg(timeout)`` poll in slices of at most ``slice_s`` seconds.

    Same contract as the original: a message as soon as one is there (at the latest one
    slice later), ``queue.Empty`` after ``timeout`` seconds (``None``: wait for ever).
    """
    original = channel.get_msg
    if getattr(original, "_sliced", False):
        return

    async def get_msg(timeout: float | None = None) -> dict[str, Any]:
        deadline = None if timeout is None else monotonic() + timeout
        while True:
            remaining = None if deadline is None else max(0.0, deadline - monotonic())
            step = slice_s if remaining is None else min(slice_s, remaining)
            try:
                return await original(timeout=step)
            except Empty:
                if remaining is not None and remaining <= slice_s:
                    raise

    get_msg._sliced = True  # type: ignore[attr-defined]
    channel.get_msg = get_msg


class NoLostWakeups:
    """Mixin for an nbclient ``NotebookClient`` (or a subclass): sliced waits on the
    shell and IOPub channels of every kernel client it starts."""

    async def async_start_new_kernel_client(self):  # type: ignore[no-untyped-def]
        kc = await super().async_start_new_kernel_client()  # type: ignore[misc]
        slice_waits(kc.shell_channel)
        slice_waits(kc.iopub_channel)
        return kc

    # nbclient binds the synchronous variant to its own coroutine: rebind it to ours.
    start_new_kernel_client = run_sync(async_start_new_kernel_client)


class HeadlessClient(NoLostWakeups, NotebookClient):
    """nbclient for headless runs (tests, the website build, the GPU check).

    Sliced waits (above), and no emulation of widget Output areas: nbclient's emulation can
    stall a widget cell until the timeout (jupyter/nbclient#312). Widget cells still run;
    what they display lands in the cell's outputs.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.comm_open_handlers = {}
