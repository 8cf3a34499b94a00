"""Unit tests of tensorcourse.distributed: bounded two-process DDP runs on the CPU (gloo)."""

from __future__ import annotations

import socket
import time

import pytest
import torch

from tensorcourse import distributed

needs_gloo = pytest.mark.skipif(not distributed.is_available(),
                                reason="this torch build has no torch.distributed/gloo")


def _children() -> list:
    """Live child processes of this test process (empty when psutil is missing)."""
    try:
        import psutil
    except ImportError:
        return []
    return [p for p in psutil.Process().children(recursive=True) if p.is_running()
            and p.status() != psutil.STATUS_ZOMBIE]


def test_free_port_can_be_bound():
    port = distributed.free_port()
    assert 1024 <= port <= 65535
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", port))


def test_every_model_builds_and_runs_forward():
    for name, cls in distributed.MODELS.items():
        model = cls()
        out = model(torch.randn(4, 8))
        assert out.shape == (4, 1), name


@pytest.mark.parametrize("bad, match", [
    (distributed.Scenario("x", "no_such_model"), "unknown model"),
    (distributed.Scenario("x", "all_used", steps=0), "steps must be"),
    (distributed.Scenario("x", "all_used", batch=0), "batch must be"),
])
def test_bad_scenarios_are_refused_before_any_process_starts(bad, match):
    with pytest.raises(ValueError, match=match):
        distributed.run_ddp([bad])


def test_bad_arguments_are_refused():
    ok = distributed.Scenario("x", "all_used")
    with pytest.raises(ValueError, match="at least one"):
        distributed.run_ddp([])
    with pytest.raises(ValueError, match="unique"):
        distributed.run_ddp([ok, ok])
    with pytest.raises(ValueError, match="world_size"):
        distributed.run_ddp([ok], world_size=0)
    with pytest.raises(ValueError, match="timeout_s"):
        distributed.run_ddp([ok], timeout_s=0)
    with pytest.raises(TypeError, match="Scenario"):
        distributed.run_ddp(["all_used"])


@needs_gloo
def test_unused_parameter_error_find_unused_and_the_fix():
    S = distributed.Scenario
    start = time.monotonic()
    runs = distributed.run_ddp([S("plain", "conditional"),
                                S("found", "unused_head", find_unused_parameters=True),
                                S("fixed", "gated", steps=2),
                                S("static", "unused_head", static_graph=True, steps=2)],
                               world_size=2, timeout_s=60)
    elapsed = time.monotonic() - start
    assert list(runs) == ["plain", "found", "fixed", "static"]
    for name, reports in runs.items():
        assert [r.rank for r in reports] == [0, 1], name
        assert all(r.scenario == name for r in reports)

    for r in runs["plain"]:            # DDP's error, one iteration late
        assert not r.ok and r.steps_done == 1 and r.error_type == "RuntimeError"
        assert r.error.startswith("Expected to have finished reduction in the prior iteration")
        assert r.grads_missing

    for r in runs["found"]:            # works; unused parameters still all-reduced
        assert r.ok and r.steps_done == 3 and len(r.step_seconds) == 3
        assert r.grads_missing == ("aux_head.weight", "aux_head.bias")
        model = distributed.MODELS["unused_head"]()
        assert r.comm_bytes == sum(p.numel() * p.element_size() for p in model.parameters())
    assert runs["found"][0].param_checksum == runs["found"][1].param_checksum

    r0, r1 = runs["fixed"]             # every parameter used: default DDP is fine
    assert r0.ok and r1.ok and r0.grads_missing == ()
    assert r0.param_checksum == r1.param_checksum

    for r in runs["static"]:           # static_graph: the same unused parameters every step
        assert r.ok and r.steps_done == 2 and r.grads_missing == ("aux_head.weight", "aux_head.bias")
    assert elapsed < 60
    assert not _children(), "run_ddp left child processes behind"


@needs_gloo
def test_timeout_terminates_the_children():
    start = time.monotonic()
    with pytest.raises(distributed.DistributedRunError, match="within 0.2 s"):
        distributed.run_ddp([distributed.Scenario("x", "all_used")], timeout_s=0.2)
    assert time.monotonic() - start < 10
    assert not _children(), "run_ddp left child processes behind after a timeout"
