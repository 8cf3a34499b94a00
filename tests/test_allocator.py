"""tensorcourse.allocator: the caching allocator's model (notebook 06 teaches it; on a GPU the
notebook checks it against the real allocator; it is the oracle of 06 Ex3's variants)."""

from __future__ import annotations

import pytest

from tensorcourse.allocator import FakeCachingAllocator, FakeOutOfMemoryError, replay


def test_the_published_script_gives_the_published_states():
    script = [("malloc", "a", 40), ("malloc", "b", 20), ("free", "a"), ("malloc", "c", 30),
              ("empty_cache",), ("malloc", "d", 20), ("free", "b"), ("free", "c"), ("empty_cache",)]
    assert replay(script, FakeCachingAllocator()) == [
        (40, 40), (60, 60), (20, 60), (50, 60), (50, 60), (70, 80), (50, 80), (20, 80), (20, 20)]


def test_rounding_and_small_requests():
    fake = FakeCachingAllocator()
    # under 10 MiB: a 20 MiB segment, whose free 15 MiB then serve b
    assert replay([("malloc", "a", 5), ("malloc", "b", 11)], fake) == [(5, 20), (16, 20)]
    # 21 MiB: a 22 MiB segment, and 1 MiB left is not split off: c gets (and counts) all 22
    assert replay([("malloc", "c", 21)], fake) == [(38, 42)]


def test_fragmentation_runs_out_of_memory_with_memory_free():
    fake = FakeCachingAllocator(capacity=100)
    fake.malloc("big", 100)
    fake.free("big")
    for i in range(10):
        fake.malloc(f"t{i}", 10)
    for i in range(1, 10, 2):
        fake.free(f"t{i}")
    with pytest.raises(FakeOutOfMemoryError, match="50 MiB free but cached in pieces"):
        fake.malloc("x", 20)


def test_bad_input_says_what_is_wrong():
    with pytest.raises(ValueError, match="over 1 MiB"):
        FakeCachingAllocator().malloc("a", 1)
    with pytest.raises(KeyError, match="not allocated"):
        FakeCachingAllocator().free("a")
