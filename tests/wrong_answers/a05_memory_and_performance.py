"""Wrong answers for 05-memory-and-performance (see __init__.py for the format)."""

_GRAPHS_RIGHT = {"A": 1, "B": 2, "C": 3, "D": 1, "E": 4, "F": 3, "G": 3}

_AUTOCAST_RIGHT = {
    "x @ w": "torch.bfloat16",
    "torch.relu(x)": "torch.float32",
    "torch.softmax(x @ w, dim=-1)": "torch.bfloat16",
    "(x @ w).sum()": "torch.bfloat16",
    "x @ w + b": "torch.float32",
    "F.mse_loss(x @ w, target)": "torch.float32",
    "F.cross_entropy(x @ w, labels)": "torch.float32",
}


def _graphs_with(**changes: int) -> str:
    table = dict(_GRAPHS_RIGHT)
    table.update(changes)
    return f"predicted_graphs = {table!r}\n"


def _autocast_with(**changes: str) -> str:
    table = dict(_AUTOCAST_RIGHT)
    for expr, dtype in changes.items():
        table[_KEYS[expr]] = dtype
    body = "".join(f"    {k!r}: {v},\n" for k, v in table.items())
    return "predicted_autocast = {\n" + body + "}\n"


_KEYS = {
    "softmax": "torch.softmax(x @ w, dim=-1)",
    "sum": "(x @ w).sum()",
    "relu": "torch.relu(x)",
    "bias": "x @ w + b",
}

_TIME_HEAD = ("import time\n\nimport torch\n\n\n"
              "def time_once(fn, device, sync=torch.cuda.synchronize, clock=time.perf_counter):\n")

_AMP_HEAD = (
    "import torch\nimport torch.nn.functional as F\n\n\n"
    "def amp_train_step(model, optimizer, scaler, x, y, max_norm, amp_dtype=torch.bfloat16):\n"
    "    optimizer.zero_grad(set_to_none=True)\n"
    "    with torch.autocast(device_type=x.device.type, dtype=amp_dtype):\n"
    "        loss = F.mse_loss(model(x), y)\n"
    "    scaler.scale(loss).backward()\n"
)

WRONG = {
    "ex1-time-once-answer": [
        ("sync-only-after", "synchronizes only after fn: work queued earlier is billed to fn",
         _TIME_HEAD + "    start = clock()\n    fn()\n    if torch.device(device).type == 'cuda':\n"
         "        sync()\n    return float(clock() - start)\n"),
        ("device-string-equality", "compares device == 'cuda' (fails for 'cuda:1' and torch.device)",
         _TIME_HEAD + "    if device == 'cuda':\n        sync()\n    start = clock()\n    fn()\n"
         "    if device == 'cuda':\n        sync()\n    return float(clock() - start)\n"),
        ("sync-on-any-device", "always synchronizes (raises on a CPU-only machine)",
         _TIME_HEAD + "    sync()\n    start = clock()\n    fn()\n    sync()\n"
         "    return float(clock() - start)\n"),
        ("sync-after-clock", "synchronizes after stopping the clock",
         _TIME_HEAD + "    cuda = torch.device(device).type == 'cuda'\n    if cuda:\n        sync()\n"
         "    start = clock()\n    fn()\n    elapsed = clock() - start\n    if cuda:\n        sync()\n"
         "    return float(elapsed)\n"),
    ],
    "ex2-prefetch-answer": [
        ("copy-just-in-time", "no prefetch: copy then compute, batch by batch",
         "def run_prefetched(batches, start_copy, compute):\n"
         "    return [compute(start_copy(b)) for b in batches]\n"),
        ("prefetch-everything", "copies every batch first (unbounded memory)",
         "def run_prefetched(batches, start_copy, compute):\n"
         "    handles = [start_copy(b) for b in batches]\n    return [compute(h) for h in handles]\n"),
        ("last-batch-left-pending", "forgets the last pending batch",
         "def run_prefetched(batches, start_copy, compute):\n    it = iter(batches)\n    try:\n"
         "        pending = start_copy(next(it))\n    except StopIteration:\n        return []\n"
         "    results = []\n    for b in it:\n        nxt = start_copy(b)\n"
         "        results.append(compute(pending))\n        pending = nxt\n    return results\n"),
        ("batches-are-a-list", "indexes the batches (fails on a generator)",
         "def run_prefetched(batches, start_copy, compute):\n    if len(batches) == 0:\n        return []\n"
         "    results, pending = [], start_copy(batches[0])\n    for i in range(1, len(batches)):\n"
         "        nxt = start_copy(batches[i])\n        results.append(compute(pending))\n"
         "        pending = nxt\n    results.append(compute(pending))\n    return results\n"),
    ],
    "ex3-recompiles-answer": [
        ("every-shape-recompiles",
         "believes every new shape recompiles (the article's claim)", _graphs_with(B=4)),
        ("size-one-is-dynamic", "believes a dynamic graph also covers size 1", _graphs_with(C=2)),
        ("dtype-change-reuses-graph", "believes a dtype change reuses the graph", _graphs_with(F=2)),
    ],
    "ex4-pad-to-bucket-answer": [
        ("equal-length-moves-up", "uses < instead of <=: a length equal to a bucket goes to the next one",
         "import torch.nn.functional as F\n\n\ndef pad_to_bucket(x, buckets=(16, 32, 64, 128), value=0.0):\n"
         "    n = x.shape[-1]\n    for b in sorted(buckets):\n        if n < b:\n"
         "            return F.pad(x, (0, b - n), value=value)\n    raise ValueError('too long')\n"),
        ("buckets-come-sorted", "assumes the buckets are sorted",
         "import torch.nn.functional as F\n\n\ndef pad_to_bucket(x, buckets=(16, 32, 64, 128), value=0.0):\n"
         "    n = x.shape[-1]\n    for b in buckets:\n        if n <= b:\n"
         "            return F.pad(x, (0, b - n), value=value)\n    raise ValueError('too long')\n"),
        ("pad-pair-order", "pads on the left",
         "import torch.nn.functional as F\n\n\ndef pad_to_bucket(x, buckets=(16, 32, 64, 128), value=0.0):\n"
         "    n = x.shape[-1]\n    for b in sorted(buckets):\n        if n <= b:\n"
         "            return F.pad(x, (b - n, 0), value=value)\n    raise ValueError('too long')\n"),
        ("too-long-passes-through", "returns the input unpadded when it is too long instead of raising",
         "import torch.nn.functional as F\n\n\ndef pad_to_bucket(x, buckets=(16, 32, 64, 128), value=0.0):\n"
         "    n = x.shape[-1]\n    for b in sorted(buckets):\n        if n <= b:\n"
         "            return F.pad(x, (0, b - n), value=value)\n    return x\n"),
        ("new-tensor-on-default-device",
         "builds the result with torch.full without device=: a CPU result for a GPU x",
         "def pad_to_bucket(x, buckets=(16, 32, 64, 128), value=0.0):\n    n = x.shape[-1]\n"
         "    fits = [b for b in sorted(buckets) if b >= n]\n    if not fits:\n"
         "        raise ValueError('too long')\n"
         "    out = torch.full((*x.shape[:-1], fits[0]), value, dtype=x.dtype)\n"
         "    out[..., :n] = x\n    return out\n"),
        ("new-tensor-default-dtype",
         "torch.full with the default float dtype: a float64 x comes back float32",
         "def pad_to_bucket(x, buckets=(16, 32, 64, 128), value=0.0):\n    n = x.shape[-1]\n"
         "    fits = [b for b in sorted(buckets) if b >= n]\n    if not fits:\n"
         "        raise ValueError('too long')\n"
         "    out = torch.full((*x.shape[:-1], fits[0]), float(value), device=x.device)\n"
         "    out[..., :n] = x\n    return out if x.is_floating_point() else out.to(x.dtype)\n"),
    ],
    "ex5-autocast-answer": [
        ("cpu-softmax-in-float32",
         "applies the CUDA rule: softmax in float32", _autocast_with(softmax="torch.float32")),
        ("reductions-in-float32",
         "believes reductions always run in float32 under autocast", _autocast_with(sum="torch.float32")),
        ("autocast-casts-everything", "believes autocast makes everything bfloat16",
         _autocast_with(relu="torch.bfloat16", bias="torch.bfloat16")),
    ],
    "ex6-amp-step-answer": [
        ("scaler-step-does-the-rest", "the article's step: clips scaled gradients and never calls update()",
         _AMP_HEAD + "    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)\n"
         "    scaler.step(optimizer)\n    return loss.detach()\n"),
        ("clip-before-unscale", "clips before unscale_ (clips the scaled gradients)",
         _AMP_HEAD + "    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)\n"
         "    scaler.unscale_(optimizer)\n    scaler.step(optimizer)\n    scaler.update()\n"
         "    return loss.detach()\n"),
        ("update-optional", "forgets scaler.update()",
         _AMP_HEAD + "    scaler.unscale_(optimizer)\n"
         "    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)\n"
         "    scaler.step(optimizer)\n    return loss.detach()\n"),
        ("optimizer-step-after-unscale", "calls optimizer.step() directly: overflowing steps are not skipped",
         _AMP_HEAD + "    scaler.unscale_(optimizer)\n"
         "    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)\n"
         "    optimizer.step()\n    scaler.update()\n    return loss.detach()\n"),
    ],
}
