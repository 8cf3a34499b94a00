"""Wrong answers for 01-why-tensors (see __init__.py for the format)."""

_DTYPES_RIGHT = {
    "torch.tensor([1, 2, 3])": "torch.int64",
    "torch.tensor([1, 2.0])": "torch.float32",
    "torch.Tensor([1, 2, 3])": "torch.float32",
    "torch.tensor([True, False])": "torch.bool",
    "torch.tensor(np.array([1.0, 2.0]))": "torch.float64",
    "torch.arange(5) / 2": "torch.float32",
    "torch.arange(5) // 2": "torch.int64",
}



def _dtypes_with(expr: str, dtype: str) -> str:
    table = dict(_DTYPES_RIGHT)
    table[expr] = dtype
    body = "".join(f"    {k!r}: {v},\n" for k, v in table.items())
    return "predicted_dtypes = {\n" + body + "}\n"


_TIMER_HEAD = ("import time\n\n\ndef median_time(fn, repeats=5, warmup=1):\n"
               "    if repeats < 1:\n        raise ValueError('repeats must be at least 1')\n"
               "    for _ in range(warmup):\n        fn()\n    durations = []\n"
               "    for _ in range(repeats):\n        start = time.perf_counter()\n        fn()\n"
               "        durations.append(time.perf_counter() - start)\n")

WRONG = {
    "ex1-dtypes-answer": [
        ("true-division-keeps-ints", "integer division thinking: / keeps int64",
         _dtypes_with("torch.arange(5) / 2", "torch.int64")),
        ("numpy-float64-becomes-float32", "NumPy float64 becomes float32",
         _dtypes_with("torch.tensor(np.array([1.0, 2.0]))", "torch.float32")),
        ("tensor-class-infers-dtype", "torch.Tensor keeps ints",
         _dtypes_with("torch.Tensor([1, 2, 3])", "torch.int64")),
    ],
    "ex2-shares-storage-answer": [
        ("data-ptr-is-storage-address", "compares first-element addresses (fails for views with an offset)",
         "def shares_storage(a, b):\n    return a.data_ptr() == b.data_ptr()\n"),
        ("equal-values-share-memory", "compares values, not memory",
         "def shares_storage(a, b):\n    return a.shape == b.shape and bool(torch.equal(a, b))\n"),
        ("only-views-of-a-base-share", "asks whether one is a view of the other (misses two sibling views)",
         "def shares_storage(a, b):\n    return a._base is b or b._base is a or a is b\n"),
        ("tensor-for-bool", "returns a tensor instead of a bool",
         "def shares_storage(a, b):\n"
         "    return torch.tensor(a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr())\n"),
    ],
    "ex3-center-rows-answer": [
        ("reduction-keeps-dim", "the original bug: mean over dim 1 without keepdim",
         "def center_rows(x):\n    return x - x.mean(dim=1)\n"),
        ("row-mean-is-dim-0", "centers columns instead of rows",
         "def center_rows(x):\n    return x - x.mean(dim=0, keepdim=True)\n"),
        ("augmented-assignment-makes-a-copy", "modifies the input in place",
         "def center_rows(x):\n    x -= x.mean(dim=1, keepdim=True)\n    return x\n"),
        ("python-floats-keep-float64",
         "row means gathered with .item() into torch.tensor: float32 means for a float64 x",
         "def center_rows(x):\n    means = torch.tensor([row.mean().item() for row in x])\n"
         "    return x - means[:, None]\n"),
    ],
    "ex4-hidden-grad-answer": [
        ("non-leaf-grad-is-kept", "reads h.grad without retain_grad (None)",
         "def hidden_grad(x, w1, w2):\n    h = torch.relu(x @ w1)\n"
         "    loss = ((h @ w2) ** 2).mean()\n    loss.backward()\n    return loss, h.grad\n"),
        ("pre-activation-grad-is-grad-h", "gradient before the relu",
         "def hidden_grad(x, w1, w2):\n    z = x @ w1\n    z.retain_grad()\n    h = torch.relu(z)\n"
         "    loss = ((h @ w2) ** 2).mean()\n    loss.backward()\n    return loss, z.grad\n"),
        ("autograd-grad-fills-grad", "uses autograd.grad, so w1.grad stays empty",
         "def hidden_grad(x, w1, w2):\n    h = torch.relu(x @ w1)\n"
         "    loss = ((h @ w2) ** 2).mean()\n    (g,) = torch.autograd.grad(loss, h)\n"
         "    return loss, g\n"),
    ],
    "ex5-median-time-answer": [
        ("mean-is-as-good-as-median", "mean instead of median",
         "import time\n\ndef median_time(fn, repeats=5, warmup=1):\n"
         "    if repeats < 1:\n        raise ValueError('repeats')\n"
         "    for _ in range(warmup):\n        fn()\n    ts = []\n    for _ in range(repeats):\n"
         "        s = time.perf_counter()\n        fn()\n        ts.append(time.perf_counter() - s)\n"
         "    return sum(ts) / len(ts)\n"),
        ("first-call-is-typical", "no warm-up: times the slow first call",
         "import statistics\nimport time\n\ndef median_time(fn, repeats=5, warmup=1):\n"
         "    if repeats < 1:\n        raise ValueError('repeats')\n"
         "    ts = []\n    for _ in range(repeats):\n"
         "        s = time.perf_counter()\n        fn()\n        ts.append(time.perf_counter() - s)\n"
         "    return statistics.median(ts)\n"),
        ("mean-is-as-good-as-median", "times all calls together and divides (outliers leak in)",
         "import time\n\ndef median_time(fn, repeats=5, warmup=1):\n"
         "    if repeats < 1:\n        raise ValueError('repeats')\n"
         "    for _ in range(warmup):\n        fn()\n    s = time.perf_counter()\n"
         "    for _ in range(repeats):\n        fn()\n    return (time.perf_counter() - s) / repeats\n"),
        ("even-median-is-a-middle-value",
         "torch.median: the lower of the two middle values for an even count",
         _TIMER_HEAD + "    return float(torch.tensor(durations).median())\n"),
        ("even-median-is-a-middle-value", "sorted(...)[n // 2]: the upper middle value for an even count",
         _TIMER_HEAD + "    return float(sorted(durations)[len(durations) // 2])\n"),
    ],
}
