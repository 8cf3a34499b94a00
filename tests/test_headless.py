"""Headless runs (tests, grading, site, GPU check) cannot stall a cell until its timeout.

The cause (tensorcourse/headless.py) is reproduced deterministically at three levels, each
time against the fix:

1. sockets: a reply that arrives while the client is busy, then a send through
   jupyter_client's ``Session`` (a synchronous shadow of the asyncio socket), leaves the
   waiting poll asleep until its timeout; re-arming after the send wakes it at once;
2. a real kernel and stock nbclient: a cell printing into a widget ``Output`` stalls for
   exactly the cell timeout when the reply lands while the client is busy answering the
   widget (the race made certain), and does not with re-arming alone nor with sliced
   waits alone; the headless client never answers;
3. notebook 04: stock nbclient sends on the shell socket in the broadcast explorer cell
   and nowhere else; the headless client runs the notebook repeatedly with a short cell
   timeout and no stall.

Sliced waits, the backstop for any other lost wake-up, are also tested on a fake channel.
"""

from __future__ import annotations

import asyncio
import time
from queue import Empty

import nbformat
import pytest
import zmq
import zmq.asyncio
from jupyter_client.channels import AsyncZMQSocketChannel
from jupyter_client.session import Session
from jupyter_core.utils import run_sync
from nbclient import NotebookClient, output_widget
from nbclient.exceptions import CellTimeoutError
from nbformat.v4 import new_code_cell, new_notebook

from autograder.pipeline.execute import SurvivingExecute
from coursefiles import solution_path
from nbrun import run_notebook
from tensorcourse.headless import (
    SLICE_S,
    HeadlessClient,
    NoLostWakeups,
    rearm_after_send,
    slice_waits,
)

# --- 1. the sockets ---------------------------------------------------------------------


def _reply_waited(*, send_while_busy: bool, rearm: bool, timeout: float = 2.0) -> float:
    """Seconds a pending ``get_msg`` takes to return a reply that arrived while the
    client's event loop was busy, optionally followed by a send on the same socket."""

    async def scenario() -> float:
        session = Session(key=b"test")
        kernel = zmq.Context().socket(zmq.ROUTER)
        client = zmq.asyncio.Context().socket(zmq.DEALER)
        try:
            port = kernel.bind_to_random_port("tcp://127.0.0.1")
            client.connect(f"tcp://127.0.0.1:{port}")
            shell = AsyncZMQSocketChannel(client, session)
            if rearm:
                rearm_after_send(shell)
            shell.send(session.msg("execute_request", {"code": "1"}))
            ident = kernel.recv_multipart()[0]
            waiting = asyncio.ensure_future(shell.get_msg(timeout=timeout))
            await asyncio.sleep(0.1)  # the poll is registered; the loop sleeps in epoll
            session.send(kernel, "execute_reply", {"status": "ok"}, ident=ident)
            time.sleep(0.5)  # the client is busy (an IOPub handler) while the reply lands
            if send_while_busy:  # ...and that handler sends on the shell socket
                shell.send(session.msg("comm_msg", {"comm_id": "c", "data": {}}))
            start = time.monotonic()
            reply = await waiting
            assert reply["msg_type"] == "execute_reply"
            return time.monotonic() - start
        finally:
            client.close(linger=0)
            kernel.close(linger=0)

    return asyncio.run(scenario())


def test_a_reply_that_lands_while_the_client_is_busy_is_picked_up_at_once():
    assert _reply_waited(send_while_busy=False, rearm=False) < 0.5


def test_a_send_through_the_session_hides_the_reply_until_the_timeout():
    """The stall itself: the reply was there all along, found only when the poll timed out
    (2 s, of which 0.5 s had passed)."""
    assert _reply_waited(send_while_busy=True, rearm=False) > 1.2


def test_rearming_after_the_send_wakes_the_wait_at_once():
    assert _reply_waited(send_while_busy=True, rearm=True) < 0.5


def test_rearming_wraps_once_and_keeps_send_errors():
    class Closed:
        socket = None

        def send(self, msg):
            raise zmq.ZMQError(zmq.ENOTSOCK, "closed")

    channel = Closed()
    rearm_after_send(channel)
    wrapped = channel.send
    rearm_after_send(channel)
    assert channel.send is wrapped
    with pytest.raises(zmq.ZMQError):
        channel.send({})


# --- 2. a real kernel, stock nbclient ---------------------------------------------------

WIDGET_CELL = "import ipywidgets as w\nout = w.Output()\ndisplay(out)\nwith out:\n    print('hi')\n"
# The race made certain: the kernel ends the cell (and sends execute_reply) only once the
# client is busy answering the widget, so the reply lands while the client cannot look.
WAIT_FOR_BUSY_CLIENT = ("import os, time\n"
                        "while not os.path.exists({busy!r}):\n"
                        "    time.sleep(0.01)\n")


@pytest.fixture
def busy_widget_answers(monkeypatch, tmp_path):
    """nbclient's Output emulation answers the kernel on the shell socket; make it a busy
    client: it says so in a file, waits 1 s (the reply lands meanwhile), then sends.
    Yields (the answers sent, the file)."""
    sent, busy = [], tmp_path / "client-busy"
    original = output_widget.OutputWidget._publish_msg

    def slow(self, *args, **kwargs):
        busy.touch()
        time.sleep(1.0)
        sent.append(args[0] if args else kwargs.get("msg_type"))
        return original(self, *args, **kwargs)

    monkeypatch.setattr(output_widget.OutputWidget, "_publish_msg", slow)
    return sent, busy


class RearmOnly(NotebookClient):
    """Stock nbclient, widget emulation on, plain waits: only the shell sends re-armed."""

    async def async_start_new_kernel_client(self):
        kc = await super().async_start_new_kernel_client()
        rearm_after_send(kc.shell_channel)
        return kc

    start_new_kernel_client = run_sync(async_start_new_kernel_client)  # setup_kernel's path


class SliceOnly(NotebookClient):
    """Stock nbclient, widget emulation on, sends not re-armed: only the waits sliced."""

    async def async_start_new_kernel_client(self):
        kc = await super().async_start_new_kernel_client()
        slice_waits(kc.shell_channel)
        slice_waits(kc.iopub_channel)
        return kc

    start_new_kernel_client = run_sync(async_start_new_kernel_client)


def _cell_seconds(client_class, source: str, timeout: int) -> tuple[float, list]:
    nb = new_notebook(cells=[new_code_cell(source)])
    client = client_class(nb, timeout=timeout, kernel_name="python3")
    with client.setup_kernel():
        start = time.monotonic()
        client.execute_cell(nb.cells[0], 0)
        return time.monotonic() - start, nb.cells[0].outputs


@pytest.mark.slow
def test_stock_nbclient_stalls_a_widget_cell_for_exactly_its_timeout(busy_widget_answers):
    sent, busy = busy_widget_answers
    cell = WIDGET_CELL + WAIT_FOR_BUSY_CLIENT.format(busy=str(busy))
    seconds, _ = _cell_seconds(NotebookClient, cell, timeout=6)
    assert sent, "the Output emulation did not answer the kernel"
    # No error: the reply was found at the deadline, so the stall passes silently.
    assert 5.9 <= seconds < 8, f"{seconds:.2f} s"


@pytest.mark.slow
@pytest.mark.parametrize("client_class", [RearmOnly, SliceOnly])
def test_rearming_or_slicing_alone_saves_stock_nbclient_from_the_stall(busy_widget_answers,
                                                                       client_class):
    sent, busy = busy_widget_answers
    cell = WIDGET_CELL + WAIT_FOR_BUSY_CLIENT.format(busy=str(busy))
    seconds, _ = _cell_seconds(client_class, cell, timeout=6)
    assert sent and seconds < 4.5, f"{client_class.__name__}: {seconds:.2f} s"


@pytest.mark.slow
def test_the_headless_client_never_answers_a_widget(busy_widget_answers):
    sent, _ = busy_widget_answers
    seconds, outputs = _cell_seconds(HeadlessClient, WIDGET_CELL, timeout=6)
    assert not sent and seconds < 4.5, f"{seconds:.2f} s"
    assert any(o.get("text") == "hi\n" for o in outputs)  # the print is kept, in the cell


# --- sliced waits, the backstop ------------------------------------------------------------


class LosesWakeups:
    """A channel whose poll is never woken by an arriving message: it finds the message
    only by checking again when the poll's own timeout ends (as pyzmq does above)."""

    def __init__(self, arrives_after: float | None):
        self.arrival = None if arrives_after is None else time.monotonic() + arrives_after

    def _ready(self) -> bool:
        return self.arrival is not None and time.monotonic() >= self.arrival

    async def get_msg(self, timeout: float | None = None) -> dict:
        if self._ready():
            return {"msg": "reply"}
        if timeout is None:
            await asyncio.sleep(3600)
        await asyncio.sleep(timeout)
        if self._ready():
            return {"msg": "reply"}
        raise Empty


def _timed(channel, timeout):
    async def wait():
        start = time.monotonic()
        try:
            return await channel.get_msg(timeout=timeout), time.monotonic() - start
        except Empty:
            return None, time.monotonic() - start
    return asyncio.run(wait())


def test_a_lost_wakeup_stalls_a_plain_wait_until_its_timeout():
    reply, waited = _timed(LosesWakeups(arrives_after=0.1), timeout=2.0)
    assert reply == {"msg": "reply"} and waited >= 1.9


def test_sliced_waits_pick_the_reply_up_within_a_slice():
    channel = LosesWakeups(arrives_after=0.1)
    slice_waits(channel)
    reply, waited = _timed(channel, timeout=2.0)
    assert reply == {"msg": "reply"} and waited < 0.1 + 2 * SLICE_S + 0.3
    unbounded = LosesWakeups(arrives_after=0.3)
    slice_waits(unbounded)
    reply, waited = _timed(unbounded, timeout=None)  # IOPub waits have no timeout
    assert reply == {"msg": "reply"} and waited < 0.3 + 2 * SLICE_S + 0.3


def test_sliced_waits_keep_the_timeout():
    channel = LosesWakeups(arrives_after=None)
    slice_waits(channel)
    reply, waited = _timed(channel, timeout=0.7)
    assert reply is None and 0.65 <= waited < 0.7 + SLICE_S + 0.3
    assert _timed(channel, timeout=0)[0] is None
    original = channel.get_msg
    slice_waits(channel)  # idempotent: no slices of slices
    assert channel.get_msg is original


# --- the wiring ------------------------------------------------------------------------


def _fixes_seen(client) -> list[bool]:
    seen = []
    client.on_cell_executed = lambda **_: seen.append(
        getattr(client.kc.shell_channel.send, "_rearms", False)
        and all(getattr(ch.get_msg, "_sliced", False)
                for ch in (client.kc.shell_channel, client.kc.iopub_channel))
        and client.comm_open_handlers["jupyter.widget"]({}) is None)
    return seen


@pytest.mark.slow
def test_both_runners_have_every_fix(tmp_path):
    """tests/nbrun.py (nbclient's async path) and grading's SurvivingExecute (nbgrader's
    synchronous setup_kernel path, which nbclient binds to its own coroutine)."""
    assert SurvivingExecute.start_new_kernel_client is NoLostWakeups.start_new_kernel_client
    nb = new_notebook(cells=[new_code_cell("x = 1"), new_code_cell("assert x == 1")])
    client = HeadlessClient(nb, timeout=60, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}})
    seen = _fixes_seen(client)
    client.execute()
    assert seen == [True, True]

    grader = SurvivingExecute(timeout=60, kernel_name="python3")
    seen = _fixes_seen(grader)
    graded, _ = grader.preprocess(nbformat.from_dict(nb), {"metadata": {"path": str(tmp_path)}})
    assert seen == [True, True]
    assert not any(o.output_type == "error" for c in graded.cells for o in c.outputs)


# --- 3. notebook 04 ----------------------------------------------------------------------

NB04 = solution_path("04-operations-and-autograd")
CPU = {"TENSORCOURSE_DEVICE": "cpu", "MPLBACKEND": "agg"}


@pytest.mark.slow
def test_in_notebook_04_stock_nbclient_sends_on_the_shell_socket_in_the_explorer_cell_only(
        monkeypatch, tmp_path):
    """Where the stall can happen: the cells in which the client sends on the shell socket
    while it waits there for the reply."""
    for name, value in CPU.items():
        monkeypatch.setenv(name, value)
    nb = nbformat.read(NB04, as_version=4)
    running, sent_in = [None], []
    original = output_widget.OutputWidget._publish_msg

    def record(self, *args, **kwargs):
        sent_in.append(running[0])
        return original(self, *args, **kwargs)

    monkeypatch.setattr(output_widget.OutputWidget, "_publish_msg", record)
    client = NotebookClient(nb, timeout=20, allow_errors=True, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}})
    client.on_cell_execute = lambda cell, cell_index: running.__setitem__(0, cell_index)
    client.execute()
    explorer = [i for i, c in enumerate(nb.cells)
                if c.cell_type == "code" and "broadcast_explorer(" in c.source]
    assert explorer and sorted(set(sent_in)) == explorer


@pytest.mark.slow
def test_notebook_04_runs_repeatedly_without_a_stall(busy_widget_answers, tmp_path):
    """Each run has a 20 s cell timeout (the slowest cell takes a few seconds on a loaded
    2-core machine) and the race made certain for any widget emulation: a stall raises
    CellTimeoutError. Three runs: the race is certain in each, so more runs only cost time."""
    runs, start = 0, time.monotonic()
    while runs < 3:
        try:
            ran = run_notebook(NB04, timeout=20, cwd=tmp_path, env=CPU)
        except CellTimeoutError as err:
            pytest.fail(f"run {runs + 1} of notebook 04 stalled: {err}")
        assert not ran.errors, "\n".join(ran.errors)
        runs += 1
    assert not busy_widget_answers[0]
    print(f"notebook 04: {runs} runs in {time.monotonic() - start:.0f} s, no stall")
