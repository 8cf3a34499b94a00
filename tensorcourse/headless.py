"""Headless notebook execution that cannot stall a cell until its timeout on a lost wake-up.

The stall (issue #14): now and then a headless run of notebook 04 sat idle for exactly the
cell timeout in its broadcast-explorer cell, then went on as if nothing had happened (one
run in five in the report; with stock nbclient on a 2-core machine, 3 runs in 58, two of
them while another run shared the machine).
The cause, reproduced deterministically by ``tests/test_headless.py``:

1. nbclient waits for a cell's ``execute_reply`` by polling the shell socket (a
   ``zmq.asyncio`` socket) for as long as the cell timeout. asyncio is woken by the
   socket's notification file descriptor, which libzmq makes readable when a message
   arrives and drains whenever *any* operation on the socket processes its pending
   commands.
2. nbclient's emulation of widget ``Output`` areas answers the kernel's output messages
   with a ``comm_msg`` that it *sends on that same shell socket*, from its IOPub handler.
3. jupyter_client's ``Session.send`` sends through a synchronous shadow of the asyncio
   socket, so pyzmq's asyncio layer never learns of the send and does not re-check the
   socket afterwards (its own sends do).
4. When the reply arrives while the client is busy in that handler, the send drains the
   notification; the reply sits in the socket and asyncio is never woken. pyzmq looks
   again only when the poll's timeout fires: the reply is picked up at the deadline and
   the cell "succeeds" after the full timeout (under grading, a lower timeout would cost
   the student the notebook).

The explorer cell is the only cell of 04 whose output goes through an ``Output`` widget,
hence that cell; the race needs the reply to arrive in a window of milliseconds, hence
one run in several. (Reported upstream for widget cells as jupyter/nbclient#312.)

:class:`NoLostWakeups` makes that impossible three ways, each enough on its own:

* **No trigger.** Headless runs do not emulate widget Output areas, so the client never
  sends on the shell socket while it waits there (widget cells still run; what they
  print lands in the cell's outputs).
* **Re-armed after every send** (:func:`rearm_after_send`): after a send through the
  shadow, the asyncio socket is asked for its events, which makes pyzmq schedule the
  wake-up a drained notification would have caused.
* **Sliced waits** (:func:`slice_waits`): every wait on the shell and IOPub channels is
  a series of polls of at most ``SLICE_S`` seconds, each ending in a direct check of the
  socket, so any other way of losing a wake-up costs at most one slice, not the timeout.

Mixed in front of nbclient's ``NotebookClient`` (:class:`HeadlessClient`: the test runner,
the website build, the GPU check) and of nbgrader's ``Execute`` (``autograder/pipeline/execute.py``).
"""

from __future__ import annotations

from queue import Empty
from time import monotonic
from typing import Any

import zmq
from jupyter_core.utils import run_sync
from nbclient import NotebookClient

SLICE_S = 0.2


def rearm_after_send(channel: Any) -> None:
    """After each ``channel.send(msg)``, let the asyncio socket notice what the send hid.

    ``Session.send`` uses a synchronous shadow of the socket, which can drain the
    notification of a message that arrived meanwhile. Reading ``EVENTS`` through the
    asyncio socket makes pyzmq schedule its handler when a waiter wants an event that is
    pending, exactly as after a send of its own.
    """
    original = channel.send
    if getattr(original, "_rearms", False):
        return

    def send(msg: dict[str, Any]) -> None:
        try:
            original(msg)
        finally:
            socket = channel.socket
            if socket is not None and not socket.closed:
                socket.get(zmq.EVENTS)

    send._rearms = True  # type: ignore[attr-defined]
    channel.send = send


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
    """Mixin for an nbclient ``NotebookClient`` (or a subclass such as nbgrader's
    ``Execute``): no widget emulation, shell sends re-armed, sliced waits."""

    def on_comm_open_jupyter_widget(self, msg: dict[str, Any]) -> None:
        # nbclient registers this bound method as the "jupyter.widget" comm handler; with
        # no handler object returned, nothing is emulated and nothing is sent back.
        return None

    async def async_start_new_kernel_client(self):  # type: ignore[no-untyped-def]
        kc = await super().async_start_new_kernel_client()  # type: ignore[misc]
        rearm_after_send(kc.shell_channel)
        slice_waits(kc.shell_channel)
        slice_waits(kc.iopub_channel)
        return kc

    # nbclient binds the synchronous variant to its own coroutine: rebind it to ours.
    start_new_kernel_client = run_sync(async_start_new_kernel_client)


class HeadlessClient(NoLostWakeups, NotebookClient):
    """nbclient for headless runs: the test runner, the website build, the GPU check."""
