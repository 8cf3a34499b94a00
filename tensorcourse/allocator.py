"""A model of PyTorch's CUDA caching allocator, small enough to read (notebook 06, section 5).

Notebook 06 shows this source and replays scripts on it; on a GPU it checks that the real
allocator's ``memory_allocated``/``memory_reserved`` change exactly as the model predicts. The
model is the oracle of the allocator exercise's per-student variants
(:mod:`tensorcourse.variants.memory`), so it lives here, in one place, rather than in the
notebook.
"""

from __future__ import annotations

import math

Step = tuple  # ("malloc", name, mib) | ("free", name) | ("empty_cache",)


class FakeOutOfMemoryError(RuntimeError):
    """The fake allocator could not reserve a new segment."""


class FakeCachingAllocator:
    """PyTorch's CUDA caching allocator, large requests only, sizes in MiB.

    1. A request is served from the smallest cached free block that is big enough. The block
       is split when more than 1 MiB would be left over (else the request gets all of it).
    2. If no cached block fits, a new *segment* is reserved from the GPU: the request rounded
       up to a multiple of 2 MiB, or 20 MiB for requests under 10 MiB.
    3. If the GPU has no room for that segment, every completely free segment is released and
       the reservation is retried; if there is still no room: out of memory.
    4. Freeing a tensor returns its block to the cache, merged with free neighbours in the
       same segment. Nothing goes back to the GPU.
    5. empty_cache() releases the segments that are completely free, and only those.
    allocated = sum of the blocks in use, reserved = sum of the segments.
    """

    def __init__(self, capacity: int | None = None) -> None:
        self.capacity = capacity          # MiB the GPU can give us (None: unlimited)
        self.segments: list[list[list]] = []   # each segment: a list of [size, owner or None] blocks

    @property
    def allocated(self) -> int:
        return sum(size for seg in self.segments for size, owner in seg if owner is not None)

    @property
    def reserved(self) -> int:
        return sum(size for seg in self.segments for size, _ in seg)

    def malloc(self, name: str, mib: int) -> None:
        if mib <= 1:
            raise ValueError("this model covers requests over 1 MiB only (the large pool)")
        fits = [(block[0], s, i) for s, seg in enumerate(self.segments)
                for i, block in enumerate(seg) if block[1] is None and block[0] >= mib]
        if not fits:                                                        # rule 2
            seg_size = 20 if mib < 10 else 2 * math.ceil(mib / 2)
            if self.capacity is not None and self.reserved + seg_size > self.capacity:
                self.empty_cache()                                          # rule 3
                if self.reserved + seg_size > self.capacity:
                    raise FakeOutOfMemoryError(
                        f"tried to reserve {seg_size} MiB: {self.reserved} MiB reserved, of which "
                        f"{self.reserved - self.allocated} MiB free but cached in pieces")
            self.segments.append([[seg_size, None]])
            fits = [(seg_size, len(self.segments) - 1, 0)]
        size, s, i = min(fits, key=lambda f: f[0])                          # rule 1: best fit
        seg = self.segments[s]
        if size - mib > 1:
            seg[i:i + 1] = [[mib, name], [size - mib, None]]
        else:
            seg[i][1] = name

    def free(self, name: str) -> None:
        for seg in self.segments:                                           # rule 4
            for i, block in enumerate(seg):
                if block[1] == name:
                    block[1] = None
                    if i + 1 < len(seg) and seg[i + 1][1] is None:
                        block[0] += seg.pop(i + 1)[0]
                    if i > 0 and seg[i - 1][1] is None:
                        seg[i - 1][0] += seg.pop(i)[0]
                    return
        raise KeyError(f"{name!r} is not allocated")

    def empty_cache(self) -> None:                                          # rule 5
        self.segments = [seg for seg in self.segments if any(o is not None for _, o in seg)]


def replay(script: list[Step], allocator: FakeCachingAllocator) -> list[tuple[int, int]]:
    """Run [("malloc", name, mib) | ("free", name) | ("empty_cache",)]; (allocated, reserved) after each."""
    states = []
    for op, *args in script:
        getattr(allocator, op)(*args)
        states.append((allocator.allocated, allocator.reserved))
    return states
