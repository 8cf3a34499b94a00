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


# ---- run_hangs (notebook 11) ------------------------------------------------------------------

@pytest.mark.parametrize("bad, match", [
    (distributed.HangScenario("x", "no_such_kind"), "unknown kind"),
    (distributed.HangScenario("x", "barrier", timeout_s=0), "timeout_s must be"),
    (distributed.HangScenario("x", "barrier", timeout_s=600), "timeout_s must be"),
    (distributed.HangScenario("x", "barrier", debug="detail"), "debug must be"),
    (distributed.HangScenario("x", "barrier", rank0_delay_s=-1), "rank0_delay_s"),
])
def test_bad_hang_scenarios_are_refused_before_any_process_starts(bad, match):
    with pytest.raises(ValueError, match=match):
        distributed.run_hangs([bad])


def test_run_hangs_bad_arguments_are_refused():
    ok = distributed.HangScenario("x", "barrier")
    with pytest.raises(ValueError, match="at least one"):
        distributed.run_hangs([])
    with pytest.raises(ValueError, match="unique"):
        distributed.run_hangs([ok, ok])
    with pytest.raises(ValueError, match="world_size"):
        distributed.run_hangs([ok], world_size=1)
    with pytest.raises(ValueError, match="timeout_s"):
        distributed.run_hangs([ok], timeout_s=0)
    with pytest.raises(TypeError, match="HangScenario"):
        distributed.run_hangs([distributed.Scenario("x", "all_used")])


def test_split_log_assigns_lines_to_scenarios():
    mark = distributed._MARK
    text = f"startup\n{mark}0\na\n{mark}1\nb\nc\n"
    assert distributed._split_log(text, 3) == ["a\n", "b\nc\n", ""]


@needs_gloo
def test_hangs_end_in_errors_that_name_the_culprit_and_a_crash_is_reported():
    H = distributed.HangScenario
    start = time.monotonic()
    runs = distributed.run_hangs([
        H("fixed", "barrier", timeout_s=1.0, rank0_delay_s=0.2),
        H("trap", "rank0_barrier", timeout_s=1.0),
        H("monitored", "rank0_monitored_barrier", timeout_s=1.0),
        H("slow", "barrier", timeout_s=1.0, rank0_delay_s=1.5),
        H("sum", "allreduce", timeout_s=1.0),
        H("detail", "allreduce_vs_broadcast", timeout_s=1.0, debug="DETAIL"),
        H("crash", "allreduce_shapes", timeout_s=1.0),
        H("never", "allreduce", timeout_s=1.0),
    ], timeout_s=60)
    elapsed = time.monotonic() - start
    assert list(runs) == ["fixed", "trap", "monitored", "slow", "sum", "detail", "crash", "never"]
    for name, reports in runs.items():
        assert [r.rank for r in reports] == [0, 1] and all(r.scenario == name for r in reports)

    r0, r1 = runs["fixed"]                      # validation shorter than the timeout: fine
    assert r0.ok and r1.ok and r1.seconds >= 0.15
    r0, r1 = runs["trap"]                       # only rank 0 waits; it times out
    assert r1.ok and r1.seconds < 0.5
    assert not r0.ok and r0.error_type == "RuntimeError" and "Timed out" in r0.error
    assert 0.9 <= r0.seconds < 5
    assert "rank 1" not in r0.error.lower()     # a plain barrier does not say who is missing
    r0, r1 = runs["monitored"]                  # monitored_barrier names the missing rank
    assert not r0.ok and "Rank 1 failed to pass monitoredBarrier" in r0.error and r1.ok
    r0, r1 = runs["slow"]                       # rank 1 gives up before rank 0 arrives
    assert not r1.ok and "Timed out" in r1.error and not r0.ok
    assert [r.value for r in runs["sum"]] == [8.0, 8.0]
    for r in runs["detail"]:                    # DETAIL compares the collectives first
        assert not r.ok and r.error.startswith("Detected mismatch between collectives")
        assert "ALLREDUCE" in r.error and "BROADCAST" in r.error and r.seconds < 0.9
    crashed = [r for r in runs["crash"] if r.error_type == "ProcessDied"]
    assert crashed and all(r.exit_code != 0 for r in crashed)
    assert any("collective mismatch" in r.log for r in crashed)
    for r in runs["never"]:
        assert not r.ok and r.error_type == "ProcessDied"
    assert elapsed < 60
    assert not _children(), "run_hangs left child processes behind"


@needs_gloo
def test_run_hangs_overall_timeout_terminates_the_children():
    start = time.monotonic()
    with pytest.raises(distributed.DistributedRunError, match="within 0.5 s"):
        distributed.run_hangs([distributed.HangScenario("x", "rank0_barrier", timeout_s=5)],
                              timeout_s=0.5)
    assert time.monotonic() - start < 10
    assert not _children(), "run_hangs left child processes behind after a timeout"
