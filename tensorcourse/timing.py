"""Honest timing: warm-up, several repeats, the median, CUDA synchronized.

The course never quotes a timing: it measures on the learner's machine with
:func:`measure` and prints the result together with the machine it ran on.

Why these rules:

* **Warm-up.** The first call pays one-off costs (allocator growth, kernel
  selection, lazy initialisation, ``torch.compile`` tracing). Timing it measures
  those, not the steady state.
* **Median of several repeats.** Other processes, frequency scaling and garbage
  collection add outliers, always upwards; the median ignores them, the mean does not.
* **Synchronize CUDA.** CUDA kernels are launched asynchronously: the Python call
  returns before the GPU has finished. Without ``torch.cuda.synchronize()`` before
  reading the clock you time the *launch*, not the work.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import torch

from .device import describe

__all__ = ["Timing", "measure", "recorded", "synchronize"]

# Every measurement made in this process, oldest first (bounded). The GPU check
# (`python3 tio.py gpu-check`) reads it after running a notebook, so the figures a
# notebook's demos measured land in its report without the notebook knowing.
_HISTORY: list[Timing] = []
_HISTORY_MAX = 1000


def recorded() -> list[Timing]:
    """The measurements :func:`measure` made in this process so far, oldest first."""
    return list(_HISTORY)


def synchronize(device: torch.device | str | None) -> None:
    """Wait for all queued work on ``device`` to finish (a no-op on the CPU)."""
    if device is not None and torch.device(device).type == "cuda":
        torch.cuda.synchronize(device)


@dataclass(frozen=True)
class Timing:
    """The result of :func:`measure`. All times are in seconds."""

    label: str
    times: tuple[float, ...]
    device: str
    machine: str
    warmup: int
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def median(self) -> float:
        return statistics.median(self.times)

    @property
    def min(self) -> float:
        return min(self.times)

    @property
    def spread(self) -> float:
        """Interquartile range: how noisy the measurement was."""
        if len(self.times) < 4:
            return max(self.times) - min(self.times)
        q = statistics.quantiles(self.times, n=4)
        return q[2] - q[0]

    def __str__(self) -> str:
        return (
            f"{self.label}: median {format_seconds(self.median)} "
            f"(IQR {format_seconds(self.spread)}, {len(self.times)} runs after "
            f"{self.warmup} warm-up) on {self.machine}"
        )


def format_seconds(seconds: float) -> str:
    """Human units: 1.23 s, 4.56 ms, 7.89 µs, 12 ns."""
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if abs(seconds) >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


def measure(
    fn: Callable[[], Any],
    *,
    device: torch.device | str | None = "cpu",
    repeats: int = 7,
    warmup: int = 1,
    number: int = 1,
    label: str = "",
) -> Timing:
    """Time ``fn()``: ``warmup`` untimed calls, then ``repeats`` timed runs.

    Each timed run calls ``fn`` ``number`` times and records the time per call,
    so very fast operations can be timed above the clock's resolution. When
    ``device`` is a CUDA device the GPU is synchronized before starting and
    before stopping the clock, so the time covers the work, not just its launch.
    """
    if not callable(fn):
        raise TypeError(f"measure() needs a function to call, got {type(fn).__name__}; "
                        "wrap the code in a lambda: measure(lambda: x @ y)")
    for name, value, low in (("repeats", repeats, 1), ("number", number, 1), ("warmup", warmup, 0)):
        if not isinstance(value, int) or value < low:
            raise ValueError(f"{name} must be an int >= {low}, got {value!r}")
    dev = torch.device(device) if device is not None else torch.device("cpu")
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        synchronize(dev)
        start = time.perf_counter()
        for _ in range(number):
            fn()
        synchronize(dev)
        times.append((time.perf_counter() - start) / number)
    timing = Timing(
        label=label or getattr(fn, "__name__", "fn"),
        times=tuple(times),
        device=str(dev),
        machine=describe(dev),
        warmup=warmup,
    )
    del _HISTORY[: max(0, len(_HISTORY) - _HISTORY_MAX + 1)]
    _HISTORY.append(timing)
    return timing
