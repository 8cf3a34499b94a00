"""Unit tests of the helper package (device, timing, check)."""

from __future__ import annotations

import time

import pytest
import torch

import tensorcourse as tc
from tensorcourse import check, timing

# ---- device -----------------------------------------------------------------------------------

def test_pick_device_matches_cuda_availability(monkeypatch):
    monkeypatch.delenv("TENSORCOURSE_DEVICE", raising=False)
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    assert tc.pick_device().type == expected


def test_env_var_forces_cpu(monkeypatch):
    monkeypatch.setenv("TENSORCOURSE_DEVICE", "cpu")
    assert tc.pick_device().type == "cpu"
    assert not tc.has_cuda()


def test_unknown_choice_is_a_clear_error():
    with pytest.raises(ValueError, match="'auto', 'cpu' or 'cuda'"):
        tc.pick_device("gpu")


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
def test_asking_for_missing_cuda_says_what_to_do():
    with pytest.raises(RuntimeError, match="Change runtime type"):
        tc.pick_device("cuda")


def test_setup_prints_one_line_banner_and_seeds(capsys, monkeypatch):
    monkeypatch.setenv("TENSORCOURSE_DEVICE", "cpu")
    device = tc.setup(seed=123)
    first = torch.rand(3)
    tc.setup(seed=123)
    out = capsys.readouterr().out.strip().splitlines()
    assert device.type == "cpu"
    assert len(out) == 2 and out[0].startswith("Demos run on the CPU")
    assert "skipped" in out[0]
    torch.manual_seed(123)
    assert torch.equal(torch.rand(3), first)


@pytest.mark.parametrize("cuda_built, cuda_available, mps, build, reason", [
    (None, False, False, "cpu-only", "CPU-only build"),
    ("13.0", False, False, "cuda-no-driver", "no NVIDIA GPU or driver"),
    (None, False, True, "mps", "CUDA's"),
])
def test_setup_says_why_the_demos_use_the_cpu(monkeypatch, capsys, cuda_built, cuda_available, mps,
                                              build, reason):
    """A CUDA build without a driver (PyPI's torch on a laptop, Colab without a GPU), Apple's MPS
    and a CPU-only build all take the CPU path, and the banner says which and why."""
    monkeypatch.delenv("TENSORCOURSE_DEVICE", raising=False)
    monkeypatch.setattr(torch.version, "cuda", cuda_built)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: cuda_available)
    monkeypatch.setattr(torch.backends.cuda, "is_built", lambda: cuda_built is not None)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: mps)
    assert tc.torch_build() == build
    assert tc.setup().type == "cpu"
    (line,) = capsys.readouterr().out.strip().splitlines()
    assert line.startswith("Demos run on the CPU (") and reason in line


def test_forcing_the_cpu_says_so(monkeypatch):
    monkeypatch.setenv("TENSORCOURSE_DEVICE", "cpu")
    assert tc.why_cpu() == "TENSORCOURSE_DEVICE=cpu asks for the CPU"


def test_describe_names_torch_version():
    assert torch.__version__ in tc.describe("cpu")


# ---- timing -----------------------------------------------------------------------------------

def test_measure_counts_warmup_and_repeats():
    calls = []
    t = tc.measure(lambda: calls.append(1), repeats=4, warmup=2, number=3)
    assert len(calls) == 2 + 4 * 3
    assert len(t.times) == 4 and t.warmup == 2


def test_measure_reports_median_not_mean():
    durations = iter([0.0] + [0.01, 0.01, 0.2, 0.01, 0.01])
    t = tc.measure(lambda: time.sleep(next(durations)), repeats=5, warmup=1)
    assert 0.005 < t.median < 0.05          # the 0.2 s outlier does not move it
    assert sum(t.times) / 5 > 0.04          # while the mean would


def test_measure_synchronizes_cuda_around_each_run(monkeypatch):
    synced = []
    monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: synced.append(device))
    monkeypatch.setattr(timing, "describe", lambda device: "fake GPU")
    tc.measure(lambda: None, device="cuda", repeats=3, warmup=1)
    assert len(synced) == 2 * 3             # before and after each timed run
    synced.clear()
    tc.measure(lambda: None, device="cpu", repeats=3)
    assert synced == []


def test_measure_str_names_machine_and_units():
    t = tc.measure(lambda: None, repeats=3, label="noop")
    text = str(t)
    assert text.startswith("noop: median") and "torch" in text and "3 runs" in text


@pytest.mark.parametrize("kwargs, message", [
    ({"repeats": 0}, "repeats"), ({"number": 0}, "number"), ({"warmup": -1}, "warmup"),
])
def test_measure_rejects_bad_counts(kwargs, message):
    with pytest.raises(ValueError, match=message):
        tc.measure(lambda: None, **kwargs)


def test_measure_needs_a_callable():
    with pytest.raises(TypeError, match="lambda"):
        tc.measure(torch.ones(3))


@pytest.mark.parametrize("seconds, text", [(2.5, "2.5 s"), (0.0123, "12.3 ms"),
                                           (4.56e-6, "4.56 µs"), (3e-9, "3 ns")])
def test_format_seconds(seconds, text):
    assert tc.format_seconds(seconds) == text


# ---- check ------------------------------------------------------------------------------------

def test_same_tensor_passes_and_reports_differences():
    assert check.same_tensor(torch.tensor([1.0, 2.0]), torch.tensor([1.0, 2.0]))
    with pytest.raises(AssertionError, match=r"first at index \(1,\): yours 3.0, expected 2.0"):
        check.same_tensor(torch.tensor([1.0, 3.0]), torch.tensor([1.0, 2.0]))


@pytest.mark.parametrize("actual, problem", [
    ([1.0, 2.0], "expected a torch.Tensor, got list"),
    (torch.tensor([1.0, 2.0, 3.0]), "wrong shape"),
    (torch.tensor([1, 2]), "wrong dtype"),
])
def test_same_tensor_type_shape_dtype(actual, problem):
    with pytest.raises(AssertionError, match=problem):
        check.same_tensor(actual, torch.tensor([1.0, 2.0]))


def test_same_tensor_rejects_subclass_with_lying_eq():
    class Liar(torch.Tensor):
        def __eq__(self, other):
            return True

    liar = torch.zeros(2).as_subclass(Liar)
    with pytest.raises(AssertionError, match="expected a torch.Tensor, got an object of a class defined in"):
        check.same_tensor(liar, torch.ones(2))


def test_same_tensor_nan_and_tolerance():
    assert check.same_tensor(torch.tensor([float("nan"), 1.0]), torch.tensor([float("nan"), 1.0]))
    assert check.same_tensor(torch.tensor([1.0 + 1e-7]), torch.tensor([1.0]))
    with pytest.raises(AssertionError):
        check.same_tensor(torch.tensor([1.1]), torch.tensor([1.0]))


def test_same_value_is_type_strict():
    assert check.same_value(torch.int64, torch.int64)
    with pytest.raises(AssertionError, match="type bool, got int"):
        check.same_value(1, True)
    with pytest.raises(AssertionError, match="type tuple, got list"):
        check.same_value([2, 3], (2, 3))
    with pytest.raises(AssertionError, match=r"answer\['b'\]"):
        check.same_value({"a": 1, "b": 2}, {"a": 1, "b": 3})


def test_same_value_rejects_lying_eq():
    class Liar:
        def __eq__(self, other):
            return True

    with pytest.raises(AssertionError, match="type int"):
        check.same_value(Liar(), 3)


def test_raises_checks_type_and_message():
    assert check.raises(ValueError, lambda: int("x"), match="invalid literal")
    with pytest.raises(AssertionError, match="expected KeyError, got ValueError"):
        check.raises(KeyError, lambda: int("x"))
    with pytest.raises(AssertionError, match="but it returned"):
        check.raises(ValueError, lambda: 3)
    with pytest.raises(AssertionError, match="does not mention"):
        check.raises(ValueError, lambda: int("x"), match="nope")
