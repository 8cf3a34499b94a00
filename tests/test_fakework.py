"""tensorcourse.fakework: an honest timer always lands in the range; a constant does not."""

from __future__ import annotations

import statistics
import time

from tensorcourse.fakework import FakeAsyncDevice, ScriptedWork


def _median_time(fn, repeats, warmup):
    for _ in range(warmup):
        fn()
    durations = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        durations.append(time.perf_counter() - start)
    return float(statistics.median(durations))


def _time_factory(factory, sync, repeats, warmup):
    for _ in range(warmup):
        factory()
    durations = []
    for _ in range(repeats):
        sync()
        start = time.perf_counter()
        factory()
        sync()
        durations.append(time.perf_counter() - start)
    return float(statistics.median(durations))


def test_an_honest_median_lies_in_the_range_and_the_records_match_the_plan():
    work = ScriptedWork([0.05, 0.01, 0.03, 0.01])
    t = work.timed_by(_median_time, repeats=3, warmup=1)
    low, high = work.median_range(3)
    assert work.calls == 4 and low <= t <= high
    least, most = work.bounds(3)
    assert all(m >= s for s, m in zip(least, most))
    assert all(s >= work.planned(k + 1) for k, s in enumerate(least))   # a sleep never runs short
    fake = FakeAsyncDevice([0.05, 0.01, 0.03, 0.01])
    t = fake.timed_by(_time_factory, repeats=3, warmup=1)
    low, high = fake.median_range(3)
    assert fake.calls == 4 and fake.syncs == 6 and low <= t <= high


def test_a_constant_is_rejected_and_the_scale_changes_per_run():
    def constant(fn, repeats, warmup):
        for _ in range(repeats + warmup):
            fn()
        return 0.02

    scales = set()
    for _ in range(3):
        work = ScriptedWork([0.0, 0.01, 0.01, 0.06, 0.06])
        t = work.timed_by(constant, repeats=4, warmup=1)
        scales.add(work.scale)
        low, high = work.median_range(4)
        assert not low <= t <= high       # the median of 0.01, 0.01, 0.06, 0.06 (x 1-1.5) > 0.03
    assert len(scales) == 3


def test_the_timer_gets_bound_methods_only():
    seen = []
    work = ScriptedWork([0.0])
    work.timed_by(lambda fn, repeats, warmup: seen.append(fn) or 0.0, repeats=1, warmup=0)
    fake = FakeAsyncDevice([0.0])
    fake.timed_by(lambda f, s, repeats, warmup: seen.extend([f, s]) or 0.0, repeats=1, warmup=0)
    assert [m.__name__ for m in seen] == ["step", "factory", "sync"]
    assert not any(isinstance(m, (ScriptedWork, FakeAsyncDevice)) for m in seen)
