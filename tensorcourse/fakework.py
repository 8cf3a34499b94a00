"""Fake workloads for grading timers (01 Ex5, 02 Ex5): sleeps whose real spans are recorded.

A timer under test is judged against what *this run's* calls really took, never against fixed
windows: on a loaded machine a sleep runs long, and the expected range moves with it, so an
honest timer cannot fail for the machine's reasons.

Contract, for both workloads:

- ``timed_by(timer, repeats, warmup)`` runs the learner's timer on bound methods (never on the
  workload itself: an answer cannot reach or rewrite the records) and returns its result;
- ``bounds(repeats)``: per timed call (the last ``repeats``), the least a correct timer measures
  (the call's own recorded work) and the most idle gaps around it could excuse;
- ``median_range(repeats)``: where an honest median lies, within :data:`SLACK` of the median of
  the calls' own work (a timer's readings exceed it only by its own microseconds);
- each run scales the planned durations by a random factor (1 to 1.5, ``SystemRandom``), so no
  constant answer fits; a run is repeated (3 tries) when a stall pushed a call more than
  :data:`PLAN_TOLERANCE` off plan (erasing the outliers that tell a median from a mean or a
  minimum) or when the result lies between the honest range and what idle gaps could excuse.
"""

from __future__ import annotations

import random
import statistics
import time
from collections.abc import Callable
from typing import Any

SLACK = 0.005            # seconds around the median of the calls' own work
PLAN_TOLERANCE = 0.004   # seconds a call's work may drift from plan before the run is repeated
_chance = random.SystemRandom()   # the durations' scale: no answer can seed or predict it


class _Recorded:
    """What both workloads share: the plan, the retries and the ranges drawn from ``bounds``."""

    calls: int

    def __init__(self, durations: list[float]) -> None:
        self._durations = list(durations)
        self.reset()

    def reset(self) -> None:
        self.calls, self.scale = 0, _chance.uniform(1.0, 1.5)

    def planned(self, k: int) -> float:
        """Seconds of work planned for call ``k`` in this run (the last duration repeats)."""
        return self.scale * self._durations[min(k, len(self._durations) - 1)]

    def _call(self, timer: Callable[..., Any], repeats: int, warmup: int) -> Any:
        raise NotImplementedError

    def bounds(self, repeats: int) -> tuple[list[float], list[float]]:
        raise NotImplementedError

    def timed_by(self, timer: Callable[..., Any], repeats: int, warmup: int, tries: int = 3) -> Any:
        """The timer's result on this workload, noting when it started and returned (see the
        module's docstring for when a run is repeated)."""
        result = None
        for _ in range(tries):
            self.reset()
            self.entered = time.perf_counter()
            result = self._call(timer, repeats, warmup)
            self.returned = time.perf_counter()
            if self.calls != warmup + repeats or type(result) is not float:
                return result
            high, idle = self.median_range(repeats)[1], self.idle_limit(repeats)
            if self.as_planned(repeats) and not high < result <= idle:
                return result
        return result

    def as_planned(self, repeats: int) -> bool:
        """Whether each timed call's work took its planned time, give or take PLAN_TOLERANCE."""
        took, first = self.bounds(repeats)[0], self.calls - repeats
        return all(abs(took[i] - self.planned(first + i)) <= PLAN_TOLERANCE for i in range(repeats))

    def median_range(self, repeats: int) -> tuple[float, float]:
        """Where an honest median lies: within SLACK of the median of the calls' own work."""
        middle = statistics.median(self.bounds(repeats)[0])
        return middle - SLACK, middle + SLACK

    def idle_limit(self, repeats: int) -> float:
        """The most a median could be if every gap between events were inside a timed window."""
        return statistics.median(self.bounds(repeats)[1]) + SLACK

    def took(self, repeats: int) -> str:
        """The timed calls' own work, for messages: '0.0201, 0.0202, ...'."""
        return ", ".join(format(s, ".4f") for s in self.bounds(repeats)[0])


class ScriptedWork(_Recorded):
    """A workload ``fn``: call k sleeps ``durations[k]`` seconds (times this run's scale)."""

    def reset(self) -> None:
        super().reset()
        self.spans: list[tuple[float, float]] = []

    def step(self) -> None:
        """One call of the workload (what the timer receives as ``fn``)."""
        begin = time.perf_counter()
        time.sleep(self.planned(self.calls))
        self.spans.append((begin, time.perf_counter()))
        self.calls += 1

    def _call(self, timer: Callable[..., Any], repeats: int, warmup: int) -> Any:
        return timer(self.step, repeats=repeats, warmup=warmup)

    def bounds(self, repeats: int) -> tuple[list[float], list[float]]:
        """At least the call's own span; at most from the end of the call before it (or the
        timer's start) to the start of the call after it (or the timer's return)."""
        begins = [b for b, _ in self.spans] + [self.returned]
        ends = [self.entered] + [e for _, e in self.spans]
        timed = range(len(self.spans) - repeats, len(self.spans))
        return ([self.spans[k][1] - self.spans[k][0] for k in timed],
                [begins[k + 1] - ends[k] for k in timed])


class FakeAsyncDevice(_Recorded):
    """An asynchronous device: ``factory()`` returns at once and queues ``works[k]`` seconds
    (times this run's scale); ``sync()`` waits until the queue has run, in order."""

    def reset(self) -> None:
        super().reset()
        self.syncs = 0
        self.queue: list[int] = []
        self.events: list[tuple[float, float]] = []    # (begin, end) of each call, in order
        self.at: list[int] = []                        # each factory call's index in events
        self.ran: dict[int, tuple[float, float, int]] = {}  # call -> its work's span, its sync

    def factory(self) -> None:
        now = time.perf_counter()
        self.at.append(len(self.events))
        self.events.append((now, now))
        self.queue.append(self.calls)
        self.calls += 1

    def sync(self) -> None:
        begin = time.perf_counter()
        for k in self.queue:
            start = time.perf_counter()
            time.sleep(self.planned(k))
            self.ran[k] = (start, time.perf_counter(), len(self.events))
        self.queue, self.syncs = [], self.syncs + 1
        self.events.append((begin, time.perf_counter()))

    def _call(self, timer: Callable[..., Any], repeats: int, warmup: int) -> Any:
        return timer(self.factory, self.sync, repeats=repeats, warmup=warmup)

    def bounds(self, repeats: int) -> tuple[list[float], list[float]]:
        """At least the call's own work (its sleep; the planned amount if it never ran). At most
        from the later of the event before the call and the end of all earlier work (sync()
        before starting the clock drains it) to the first event after the sync that ran this
        call's work (or the timer's return)."""
        events = [(self.entered, self.entered), *self.events, (self.returned, self.returned)]
        least, most = [], []
        for k in range(self.calls - repeats, self.calls):
            here = self.at[k] + 1
            if k in self.ran:
                start, end, sync = self.ran[k]
                least.append(end - start)
                after = sync + 2
            else:
                least.append(self.planned(k))
                after = here + 1
            floor = max([events[here - 1][1]] + [self.ran[j][1] for j in range(k) if j in self.ran])
            most.append(events[after][0] - floor)
        return least, most
