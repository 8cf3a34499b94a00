"""autograder/sandbox/flood.py on real ZMQ sockets: what the guard counts and sees, without a kernel.

The whole path (a kernel's flood stopping its notebook) is in tests/test_grading_sandbox.py."""

from __future__ import annotations

import asyncio
from contextlib import contextmanager
from types import SimpleNamespace

import zmq
import zmq.asyncio

from autograder.sandbox.flood import (
    BEHIND_STREAK,
    MAX_MESSAGE_BYTES,
    MAX_NESTED_VALUES,
    MAX_QUEUED,
    OUTPUT_BUDGET_BYTES,
    BoundedKernelClient,
    FloodGuard,
    FloodStop,
)


@contextmanager
def _wired(address: str, guard: FloodGuard | None = None):
    """A guard attached to a client socket made as BoundedKernelClient makes them, and a
    'kernel' peer bound at ``address``; both closed afterwards."""
    owner = BoundedKernelClient()  # kept: the client destroys its context when collected
    kernel_context = zmq.Context()
    kernel = kernel_context.socket(zmq.PUSH)
    kernel.bind(address)
    client = owner.context.socket(zmq.PULL)
    client.connect(address)
    unused = {f"{n}_channel": SimpleNamespace(socket=None) for n in ("shell", "control", "stdin")}
    kc = SimpleNamespace(owner=owner, context=owner.context, **unused,
                         iopub_channel=SimpleNamespace(socket=client))
    guard = guard or FloodGuard()
    guard.attach(kc)
    try:
        yield guard, client, kernel
    finally:
        kernel.close(0)
        kernel_context.term()
        owner.context.destroy(0)


def _run(coro):
    return asyncio.run(coro)


def test_one_message_over_the_size_is_seen_as_a_flood_while_the_kernel_lives(tmp_path):
    async def main() -> FloodGuard:
        with _wired(f"ipc://{tmp_path}/a") as (guard, client, kernel):
            kernel.send(b"small")
            assert await client.recv_multipart() == [b"small"]
            kernel.send(b"x" * (MAX_MESSAGE_BYTES + 1))
            for _ in range(20):  # the waits a cell makes: each poll looks at the monitors
                if await client.poll(50):
                    await client.recv_multipart()
        return guard

    guard = _run(main())
    assert guard.disconnected == "iopub"
    assert guard.why_stopped(kernel_alive=False) == ""   # a dying kernel disconnects too
    guard._disconnected_at -= 1                           # past the settling time
    assert "one message over 8 MiB (iopub channel)" in guard.why_stopped(kernel_alive=True)


def test_what_is_read_counts_toward_the_notebook_budget(tmp_path):
    async def main() -> FloodGuard:
        with _wired(f"ipc://{tmp_path}/b") as (guard, client, kernel):
            chunk = b"x" * (MAX_MESSAGE_BYTES // 2)
            for _ in range(OUTPUT_BUDGET_BYTES // len(chunk)):
                kernel.send(chunk)
                await client.recv_multipart()
            assert guard.why_stopped(kernel_alive=True) == ""   # exactly the budget: not over it
            kernel.send(b"one byte more")
            await client.recv_multipart()
        return guard

    guard = _run(main())
    assert "more than 256 MiB" in guard.why_stopped(kernel_alive=True)
    assert guard.disconnected == ""


def test_falling_behind_is_noted_so_lost_output_is_the_floods(tmp_path):
    async def main(backlog: int) -> FloodGuard:
        with _wired(f"ipc://{tmp_path}/c{backlog}") as (guard, client, kernel):
            for i in range(backlog):
                kernel.send(b"%d" % i)
            await asyncio.sleep(1.0)   # as many arrive as the grader's queue holds, before it reads one
            for _ in range(backlog):
                await client.recv_multipart()
        return guard

    told = []

    async def told_once() -> FloodGuard:
        guard = FloodGuard()
        guard.on_behind = lambda: told.append(1)
        with _wired(f"ipc://{tmp_path}/d", guard) as (guard, client, kernel):
            for i in range(BEHIND_STREAK + 200):
                kernel.send(b"%d" % i)
            await asyncio.sleep(1.0)
            for _ in range(BEHIND_STREAK + 200):
                await client.recv_multipart()
        return guard

    assert _run(told_once()).behind and told == [1]   # the cell's wait is shortened once
    calm = _run(main(3))
    assert not calm.behind and calm.lost_output() == ""   # then a lost output is the machine's
    # A burst that fills the grader's queue is not enough (an honest test's value lines do:
    # red team of this bound): only the kernel's queue full behind it.
    burst = _run(main(5 * MAX_QUEUED))
    assert not burst.behind
    flooded = _run(main(BEHIND_STREAK + 200))
    assert flooded.behind and flooded.lost_output().startswith("[output flood")
    flooded.new_cell()   # the next cell is awaited in full again
    assert not flooded.behind and flooded.lost_output() == ""


def test_the_learner_is_told_the_flood_stopped_their_notebook():
    from autograder.pipeline.unit import learner_message

    message = learner_message({}, "output flood: the notebook sent more than 256 MiB of output", "")
    assert "more than 256 MiB" in message and "this test did not run" in message


def test_a_message_too_nested_to_parse_is_refused_unparsed(tmp_path):
    async def main() -> tuple[FloodGuard, str]:
        with _wired(f"ipc://{tmp_path}/e") as (guard, client, kernel):
            kernel.send(b"[" * 1000 + b"]" * 1000)          # nested, but few: read
            await client.recv_multipart()
            kernel.send(b"[" * (MAX_NESTED_VALUES + 1))
            try:
                await client.recv_multipart()
                raised = ""
            except FloodStop as err:
                raised = str(err)
        return guard, raised

    guard, raised = _run(main())
    assert "more than 100000 nested values" in raised
    assert guard.why_stopped(kernel_alive=True) == raised


def test_a_dying_kernel_is_not_a_flood_even_while_its_process_lingers(tmp_path):
    """Every socket of a dead kernel disconnects; the sandbox's launcher may still run a moment
    (a loaded CI run reported a death as a flood). The control channel's disconnect says which."""
    async def main() -> FloodGuard:
        owner = BoundedKernelClient()
        kernel_context = zmq.Context()
        sockets = {}
        for name in ("iopub", "control"):
            peer = kernel_context.socket(zmq.PUSH)
            peer.bind(f"ipc://{tmp_path}/{name}")
            client = owner.context.socket(zmq.PULL)
            client.connect(f"ipc://{tmp_path}/{name}")
            sockets[name] = (peer, client)
        kc = SimpleNamespace(owner=owner, context=owner.context,
                             **{f"{n}_channel": SimpleNamespace(socket=None) for n in ("shell", "stdin")},
                             **{f"{n}_channel": SimpleNamespace(socket=c) for n, (_, c) in sockets.items()})
        guard = FloodGuard()
        guard.attach(kc)
        for peer, client in sockets.values():
            peer.send(b"hello")
            assert await client.recv_multipart() == [b"hello"]
        for peer, _ in sockets.values():
            peer.close(0)          # the kernel dies: all its sockets close
        kernel_context.term()
        for _ in range(10):
            await sockets["iopub"][1].poll(50)
        owner.context.destroy(0)
        return guard

    guard = _run(main())
    assert guard.disconnected
    guard._disconnected_at -= 2
    assert guard.why_stopped(kernel_alive=True) == ""
