"""Wrong answers for 02-creating-tensors (see __init__.py for the format)."""

_CONSTRUCTORS_RIGHT = {
    "torch.Tensor(3)": "((3,), torch.float32)",
    "torch.tensor(3)": "((), torch.int64)",
    "torch.Tensor([3, 4])": "((2,), torch.float32)",
    "torch.tensor([3, 4.0])": "((2,), torch.float32)",
    "torch.full((2, 2), 7)": "((2, 2), torch.int64)",
    "torch.zeros_like(torch.arange(4))": "((4,), torch.int64)",
    "torch.from_numpy(np.zeros((2, 3)))": "((2, 3), torch.float64)",
    "torch.empty(0, 3)": "((0, 3), torch.float32)",
    "torch.arange(0, 1, 0.25)": "((4,), torch.float32)",
}

_STRIDES_RIGHT = {
    "x.transpose(0, 2)": "(1, 4, 12)",
    "x.permute(2, 0, 1)": "(1, 12, 4)",
    "x.transpose(0, 2).to(torch.float64)": "(1, 4, 12)",
    "x.transpose(0, 2).contiguous()": "(6, 2, 1)",
    "torch.empty_like(x.transpose(0, 2))": "(1, 4, 12)",
    "x[:, :, ::2].to(torch.float64)": "(6, 2, 1)",
    "torch.empty(2, 3, 4, 5, memory_format=torch.channels_last)": "(60, 1, 15, 3)",
}


def _table(name: str, right: dict, changes: dict) -> str:
    table = dict(right)
    table.update(changes)
    body = "".join(f"    {k!r}: {v},\n" for k, v in table.items())
    return f"{name} = {{\n" + body + "}\n"


def _constructors_with(expr: str, value: str) -> str:
    return _table("predicted_constructors", _CONSTRUCTORS_RIGHT, {expr: value})


def _strides_with(expr: str, value: str) -> str:
    return _table("predicted_strides", _STRIDES_RIGHT, {expr: value})


_TIMER_HEAD = ("import statistics\nimport time\n\n\n"
               "def time_factory(factory, sync, repeats=5, warmup=1):\n"
               "    if repeats < 1:\n        raise ValueError('repeats must be at least 1')\n"
               "    for _ in range(warmup):\n        factory()\n")

_BATCH_HEAD = ("def apply_in_batches(rows, fn, buffer):\n"
               "    batch_size = buffer.shape[0]\n    outputs = []\n"
               "    for start in range(0, rows.shape[0], batch_size):\n"
               "        batch = rows[start:start + batch_size]\n")

WRONG = {
    "ex1-constructors-answer": [
        ("tensor-class-int-is-data", "torch.Tensor(3) read as the data [3.]",
         _constructors_with("torch.Tensor(3)", "((1,), torch.float32)")),
        ("tensor-int-is-size", "torch.tensor(3) read as a size, like torch.Tensor(3)",
         _constructors_with("torch.tensor(3)", "((3,), torch.int64)")),
        ("from-numpy-gives-default-float", "from_numpy assumed to give the default float32",
         _constructors_with("torch.from_numpy(np.zeros((2, 3)))", "((2, 3), torch.float32)")),
        ("arange-includes-end", "arange thought to include its end",
         _constructors_with("torch.arange(0, 1, 0.25)", "((5,), torch.float32)")),
        ("full-gives-float", "torch.full thought to always give floats",
         _constructors_with("torch.full((2, 2), 7)", "((2, 2), torch.float32)")),
    ],
    "ex2-id-dtype-answer": [
        ("iinfo-max-is-exclusive", "strict < instead of <= (127 and 2**31 - 1 get the next dtype up)",
         "def smallest_int_dtype(max_id):\n"
         "    if max_id < 0:\n        raise ValueError('negative')\n"
         "    for dtype in (torch.int8, torch.int16, torch.int32, torch.int64):\n"
         "        if max_id < torch.iinfo(dtype).max:\n            return dtype\n"
         "    raise ValueError('too large')\n"),
        ("bits-fit-signed-dtype", "counts bits as if the dtypes were unsigned (128 -> int8)",
         "def smallest_int_dtype(max_id):\n"
         "    if max_id < 0:\n        raise ValueError('negative')\n"
         "    bits = max_id.bit_length()\n"
         "    widths = ((8, torch.int8), (16, torch.int16), (32, torch.int32), (64, torch.int64))\n"
         "    for width, dtype in widths:\n"
         "        if bits <= width:\n            return dtype\n"
         "    raise ValueError('too large')\n"),
        ("int64-holds-any-id", "no range checks: negative ids and ids beyond int64 get a dtype",
         "def smallest_int_dtype(max_id):\n"
         "    for dtype in (torch.int8, torch.int16, torch.int32):\n"
         "        if max_id <= torch.iinfo(dtype).max:\n            return dtype\n"
         "    return torch.int64\n"),
        ("ids-are-int32-or-int64", "only chooses between int32 and int64",
         "def smallest_int_dtype(max_id):\n"
         "    if max_id < 0 or max_id > 2**63 - 1:\n        raise ValueError('out of range')\n"
         "    return torch.int32 if max_id <= 2**31 - 1 else torch.int64\n"),
    ],
    "ex3-strides-answer": [
        ("zero-size-makes-zero-stride", "plain product: a size of 0 makes the strides to its left 0",
         "def contiguous_strides(shape):\n    strides = []\n    running = 1\n"
         "    for size in reversed(tuple(shape)):\n        strides.append(running)\n"
         "        running *= size\n    return tuple(reversed(strides))\n"),
        ("first-dim-is-adjacent", "column-major (Fortran) order",
         "def contiguous_strides(shape):\n    strides = []\n    running = 1\n"
         "    for size in tuple(shape):\n        strides.append(running)\n"
         "        running *= max(size, 1)\n    return tuple(strides)\n"),
        ("stride-includes-own-size", "each stride includes its own dimension's size",
         "import math\n\ndef contiguous_strides(shape):\n"
         "    shape = tuple(shape)\n"
         "    return tuple(math.prod(max(s, 1) for s in shape[i:]) for i in range(len(shape)))\n"),
        ("list-for-tuple", "returns a list",
         "def contiguous_strides(shape):\n    strides = []\n    running = 1\n"
         "    for size in reversed(tuple(shape)):\n        strides.insert(0, running)\n"
         "        running *= max(size, 1)\n    return strides\n"),
        ("strides-can-be-read-off",
         "reads the strides off a tensor it creates (the contract says compute them)",
         "def contiguous_strides(shape):\n    return torch.empty(tuple(shape), device='meta').stride()\n"),
    ],
    "ex4-layouts-answer": [
        ("to-makes-contiguous", ".to() assumed to make the copy contiguous",
         _strides_with("x.transpose(0, 2).to(torch.float64)", "(6, 2, 1)")),
        ("like-allocates-contiguous", "empty_like assumed to allocate a contiguous tensor",
         _strides_with("torch.empty_like(x.transpose(0, 2))", "(6, 2, 1)")),
        ("copy-keeps-gaps", "a strided slice's copy thought to keep the gaps",
         _strides_with("x[:, :, ::2].to(torch.float64)", "(12, 4, 2)")),
        ("strides-follow-shape", "memory_format ignored: channels_last given plain contiguous strides",
         _strides_with("torch.empty(2, 3, 4, 5, memory_format=torch.channels_last)", "(60, 20, 5, 1)")),
        ("permute-is-reversal", "permute's strides read in the wrong order",
         _strides_with("x.permute(2, 0, 1)", "(1, 4, 12)")),
    ],
    "ex5-time-factory-answer": [
        ("returns-when-done", "no synchronization: times the launch only",
         _TIMER_HEAD + "    durations = []\n    for _ in range(repeats):\n"
         "        start = time.perf_counter()\n        factory()\n"
         "        durations.append(time.perf_counter() - start)\n"
         "    return float(statistics.median(durations))\n"),
        ("no-sync-before-start",
         "syncs only before stopping the clock: the warm-up's queued work leaks into run 1",
         _TIMER_HEAD + "    durations = []\n    for _ in range(repeats):\n"
         "        start = time.perf_counter()\n        factory()\n        sync()\n"
         "        durations.append(time.perf_counter() - start)\n"
         "    return float(statistics.median(durations))\n"),
        ("01/mean-is-as-good-as-median", "mean instead of median",
         _TIMER_HEAD + "    durations = []\n    for _ in range(repeats):\n"
         "        sync()\n        start = time.perf_counter()\n        factory()\n        sync()\n"
         "        durations.append(time.perf_counter() - start)\n"
         "    return float(sum(durations) / len(durations))\n"),
        ("fastest-run-is-the-time",
         "min instead of median (the timeit habit): the contract asks for the median",
         _TIMER_HEAD + "    durations = []\n    for _ in range(repeats):\n"
         "        sync()\n        start = time.perf_counter()\n        factory()\n        sync()\n"
         "        durations.append(time.perf_counter() - start)\n"
         "    return float(min(durations))\n"),
        ("01/even-median-is-a-middle-value",
         "torch.median: the lower of the two middle values for an even count",
         _TIMER_HEAD + "    durations = []\n    for _ in range(repeats):\n"
         "        sync()\n        start = time.perf_counter()\n        factory()\n        sync()\n"
         "        durations.append(time.perf_counter() - start)\n"
         "    return float(torch.tensor(durations).median())\n"),
        ("01/even-median-is-a-middle-value", "sorted(...)[n // 2]: the upper middle value for an even count",
         _TIMER_HEAD + "    durations = []\n    for _ in range(repeats):\n"
         "        sync()\n        start = time.perf_counter()\n        factory()\n        sync()\n"
         "        durations.append(time.perf_counter() - start)\n"
         "    return float(sorted(durations)[len(durations) // 2])\n"),
        ("01/mean-is-as-good-as-median", "one sync after the whole loop, total divided by repeats",
         _TIMER_HEAD + "    sync()\n    start = time.perf_counter()\n"
         "    for _ in range(repeats):\n        factory()\n    sync()\n"
         "    return (time.perf_counter() - start) / repeats\n"),
    ],
    "ex6-buffer-answer": [
        ("output-is-a-copy", "fixes the slice but keeps views of the buffer (overwritten by later batches)",
         _BATCH_HEAD + "        buffer[:len(batch)].copy_(batch)\n"
         "        outputs.append(fn(buffer[:len(batch)]))\n    return torch.cat(outputs)\n"),
        ("rows-are-independent", "slices the output instead of the input: fn still sees stale rows",
         _BATCH_HEAD + "        buffer[:len(batch)].copy_(batch)\n"
         "        outputs.append(fn(buffer)[:len(batch)].clone())\n    return torch.cat(outputs)\n"),
        ("rows-are-independent", "zeroes the stale tail, but fn still sees the padding rows",
         _BATCH_HEAD + "        buffer[:len(batch)].copy_(batch)\n        buffer[len(batch):] = 0\n"
         "        outputs.append(fn(buffer)[:len(batch)].clone())\n    return torch.cat(outputs)\n"),
        ("01/data-ptr-is-storage-address",
         "clones only outputs that start where the staged batch starts (misses other views of it)",
         _BATCH_HEAD + "        staged = buffer[:len(batch)]\n        staged.copy_(batch)\n"
         "        out = fn(staged)\n"
         "        outputs.append(out.clone() if out.data_ptr() == staged.data_ptr() else out)\n"
         "    return torch.cat(outputs)\n"),
        ("buffer-is-optional", "drops the buffer and calls fn on the batch (breaks the contract)",
         _BATCH_HEAD + "        outputs.append(fn(batch).clone())\n    return torch.cat(outputs)\n"),
    ],
}
