"""Wrong answers for 09-layout-devices-gradient-lifetime (see __init__.py for the format)."""

_STRIDES_HEAD = "def contiguous_strides(shape):\n"

_CONTIG_HEAD = "def is_contiguous_layout(shape, strides):\n"

_TO_RIGHT = {
    "h.to(torch.float32)": (True, "MulBackward0"),
    "h.to(torch.float64)": (False, "ToCopyBackward0"),
    "h.to('cpu')": (True, "MulBackward0"),
    "h.to('cpu', copy=True)": (False, "ToCopyBackward0"),
    "h.detach()": (True, None),
    "h.detach().to(torch.float64)": (False, None),
    "h.contiguous()": (True, "MulBackward0"),
    "h.t().contiguous()": (False, "CloneBackward0"),
    "h.view(3, 2)": (True, "ViewBackward0"),
    "h.to(torch.float64).to(torch.float32)": (False, "ToCopyBackward0"),
}


def _to_with(changes: dict) -> str:
    table = dict(_TO_RIGHT)
    table.update(changes)
    body = "".join(f"    {k!r}: {v!r},\n" for k, v in table.items())
    return "predicted_to = {\n" + body + "}\n"


_LOG_HEAD = "import torch\n\n\ndef logged_means(step, steps, every):\n"
_LOG_CHECK = ("    if steps < 0 or every < 1:\n"
              "        raise ValueError('need steps >= 0 and every >= 1')\n")

_MOVE_HEAD = "import torch\n\n\ndef to_device(batch, device):\n"


_TUPLE_LINE = "        return tuple(to_device(v, device) for v in batch)\n"


def _move(tensor_line: str, tuple_line: str = _TUPLE_LINE) -> str:
    return (_MOVE_HEAD +
            "    if isinstance(batch, torch.Tensor):\n" + tensor_line +
            "    if isinstance(batch, dict):\n"
            "        return {k: to_device(v, device) for k, v in batch.items()}\n"
            "    if isinstance(batch, list):\n"
            "        return [to_device(v, device) for v in batch]\n"
            "    if isinstance(batch, tuple):\n" + tuple_line +
            "    return batch\n")


_EVAL_HEAD = ("import torch\nimport torch.nn.functional as F\n\n\n"
              "def evaluate(model, batches, loss_fn=F.mse_loss):\n")

WRONG = {
    "ex1-contiguous-strides-answer": [
        ("zero-size-in-stride-product",
         "multiplies by the size itself, so a size-0 dim zeroes the strides before it",
         _STRIDES_HEAD +
         "    if any(s < 0 for s in shape):\n        raise ValueError('negative size')\n"
         "    strides, running = [], 1\n"
         "    for size in reversed(tuple(shape)):\n"
         "        strides.append(running)\n"
         "        running *= size\n"
         "    return tuple(reversed(strides))\n"),
        ("first-dim-stride-one",
         "column-major (Fortran) order: the first dim gets stride 1",
         _STRIDES_HEAD +
         "    if any(s < 0 for s in shape):\n        raise ValueError('negative size')\n"
         "    strides, running = [], 1\n"
         "    for size in tuple(shape):\n"
         "        strides.append(running)\n"
         "        running *= max(size, 1)\n"
         "    return tuple(strides)\n"),
        ("stride-includes-own-size",
         "includes each dim's own size in its stride (off by one dim)",
         _STRIDES_HEAD +
         "    if any(s < 0 for s in shape):\n        raise ValueError('negative size')\n"
         "    strides, running = [], 1\n"
         "    for size in reversed(tuple(shape)):\n"
         "        running *= max(size, 1)\n"
         "        strides.append(running)\n"
         "    return tuple(reversed(strides))\n"),
        ("strides-are-a-list",
         "returns a list, not a tuple",
         _STRIDES_HEAD +
         "    if any(s < 0 for s in shape):\n        raise ValueError('negative size')\n"
         "    strides, running = [], 1\n"
         "    for size in reversed(tuple(shape)):\n"
         "        strides.append(running)\n"
         "        running *= max(size, 1)\n"
         "    return strides[::-1]\n"),
        ("strides-from-a-tensor",
         "asks torch instead of computing: a fresh tensor made with new_empty",
         "import torch\n\n\n" + _STRIDES_HEAD +
         "    if any(s < 0 for s in shape):\n        raise ValueError('negative size')\n"
         "    return tuple(torch.arange(1).new_empty(tuple(shape)).stride())\n"),
    ],
    "ex2-is-contiguous-answer": [
        ("size-one-stride-matters",
         "compares with the strides of a fresh tensor: a size-1 dim's odd stride fails it",
         _CONTIG_HEAD +
         "    if len(shape) != len(strides):\n        raise ValueError('lengths differ')\n"
         "    if 0 in tuple(shape):\n        return True\n"
         "    expected, running = [], 1\n"
         "    for size in reversed(tuple(shape)):\n"
         "        expected.append(running)\n"
         "        running *= size\n"
         "    return tuple(strides) == tuple(reversed(expected))\n"),
        ("empty-needs-strides",
         "forgets that a tensor with no elements is always contiguous",
         _CONTIG_HEAD +
         "    if len(shape) != len(strides):\n        raise ValueError('lengths differ')\n"
         "    expected = 1\n"
         "    for size, stride in zip(reversed(tuple(shape)), reversed(tuple(strides))):\n"
         "        if size == 1:\n            continue\n"
         "        if stride != expected:\n            return False\n"
         "        expected *= size\n"
         "    return True\n"),
        ("decreasing-strides-enough",
         "only checks that the strides decrease and the last one is 1",
         _CONTIG_HEAD +
         "    if len(shape) != len(strides):\n        raise ValueError('lengths differ')\n"
         "    if 0 in tuple(shape):\n        return True\n"
         "    s = [st for size, st in zip(shape, strides) if size != 1]\n"
         "    return not s or (s[-1] == 1 and all(a > b for a, b in zip(s, s[1:])))\n"),
        ("size-one-stride-matters",
         "does not skip size-1 dims when accumulating the expected stride",
         _CONTIG_HEAD +
         "    if len(shape) != len(strides):\n        raise ValueError('lengths differ')\n"
         "    if 0 in tuple(shape):\n        return True\n"
         "    expected = 1\n"
         "    for size, stride in zip(reversed(tuple(shape)), reversed(tuple(strides))):\n"
         "        if stride != expected:\n            return False\n"
         "        expected *= size\n"
         "    return True\n"),
        ("contiguity-from-a-tensor",
         "asks torch instead of working it out: new_empty_strided on a tensor made with ones",
         "import torch\n\n\n" + _CONTIG_HEAD +
         "    if len(shape) != len(strides):\n        raise ValueError('lengths differ')\n"
         "    return torch.ones(1).new_empty_strided(tuple(shape), tuple(strides)).is_contiguous()\n"),
    ],
    "ex3-to-predict-answer": [
        ("to-always-copies",
         "believes .to() always copies, even when nothing changes",
         _to_with({"h.to(torch.float32)": (False, "ToCopyBackward0"),
                   "h.to('cpu')": (False, "ToCopyBackward0")})),
        ("copy-leaves-graph",
         "believes the article: a copy made by .to() has lost its graph",
         _to_with({"h.to(torch.float64)": (False, None), "h.to('cpu', copy=True)": (False, None),
                   "h.to(torch.float64).to(torch.float32)": (False, None)})),
        ("detach-copies-keeps-node",
         "believes the article: detach() copies and keeps pointing at the original node",
         _to_with({"h.detach()": (False, "MulBackward0")})),
        ("round-trip-gives-back",
         "thinks a float64 -> float32 round trip gives h back",
         _to_with({"h.to(torch.float64).to(torch.float32)": (True, "MulBackward0")})),
        ("contiguous-always-copies",
         "thinks contiguous() always copies",
         _to_with({"h.contiguous()": (False, "CloneBackward0")})),
    ],
    "ex5-logged-means-answer": [
        ("read-every-step",
         "reads every step with .item() and averages in Python",
         _LOG_HEAD + _LOG_CHECK +
         "    values = [step().item() for _ in range(steps)]\n"
         "    return [sum(values[i:i + every]) / len(values[i:i + every])\n"
         "            for i in range(0, len(values), every)]\n"),
        ("numpy-read-is-free",
         "the article's .detach().cpu().numpy() every step",
         _LOG_HEAD + _LOG_CHECK +
         "    values = [step().detach().cpu().numpy() for _ in range(steps)]\n"
         "    return [float(sum(values[i:i + every]) / len(values[i:i + every]))\n"
         "            for i in range(0, len(values), every)]\n"),
        ("short-block-not-logged",
         "drops the last, shorter block",
         _LOG_HEAD + _LOG_CHECK +
         "    means, block = [], []\n"
         "    for _ in range(steps):\n"
         "        block.append(step())\n"
         "        if len(block) == every:\n"
         "            means.append(torch.stack(block).mean().item())\n"
         "            block = []\n"
         "    return means\n"),
        ("zero-d-tensor-is-a-float",
         "returns 0-d tensors instead of Python floats",
         _LOG_HEAD + _LOG_CHECK +
         "    means, block = [], []\n"
         "    for _ in range(steps):\n"
         "        block.append(step())\n"
         "        if len(block) == every:\n"
         "            means.append(torch.stack(block).mean())\n"
         "            block = []\n"
         "    if block:\n"
         "        means.append(torch.stack(block).mean())\n"
         "    return means\n"),
        ("read-at-the-end",
         "keeps every block's mean on the device and reads them all once, when training ends",
         _LOG_HEAD + _LOG_CHECK +
         "    means, block = [], []\n"
         "    for _ in range(steps):\n"
         "        block.append(step())\n"
         "        if len(block) == every:\n"
         "            means.append(torch.stack(block).mean())\n"
         "            block = []\n"
         "    if block:\n"
         "        means.append(torch.stack(block).mean())\n"
         "    return torch.stack(means).tolist() if means else []\n"),
        ("host-write-is-not-a-read",
         "copies every step's loss into a host tensor (host[i] = step(): a device-to-host copy per step)",
         _LOG_HEAD + _LOG_CHECK +
         "    host, means = torch.empty(steps), []\n"
         "    for i in range(steps):\n"
         "        host[i] = step()\n"
         "        if (i + 1) % every == 0 or i == steps - 1:\n"
         "            means.append(host[i - i % every:i + 1].mean().item())\n"
         "    return means\n"),
        ("host-write-is-not-a-read",
         "copies each block into a host buffer with copy_, then reads the buffer",
         _LOG_HEAD + _LOG_CHECK +
         "    means, block = [], []\n"
         "    for _ in range(steps):\n"
         "        block.append(step())\n"
         "        if len(block) == every or len(means) * every + len(block) == steps:\n"
         "            host = torch.empty(len(block))\n"
         "            for j, loss in enumerate(block):\n"
         "                host[j:j + 1].copy_(loss.reshape(1))\n"
         "            means.append(host.mean().item())\n"
         "            block = []\n"
         "    return means\n"),
        ("numpy-read-is-free",
         "reads every step through NumPy (np.asarray is a host read too)",
         "import numpy as np\n" + _LOG_HEAD + _LOG_CHECK +
         "    values = [float(np.asarray(step())) for _ in range(steps)]\n"
         "    return [sum(values[i:i + every]) / len(values[i:i + every])\n"
         "            for i in range(0, len(values), every)]\n"),
    ],
    "ex4-to-device-answer": [
        ("non-blocking-always-helps",
         "always non_blocking=True, pinned or not",
         _move("        return batch.to(device, non_blocking=True)\n")),
        ("non-blocking-never-matters",
         "never non_blocking: a plain .to(device)",
         _move("        return batch.to(device)\n")),
        ("non-blocking-for-any-cuda-copy",
         "non_blocking whenever the target is CUDA, pinned or not",
         _move("        return batch.to(device, non_blocking=torch.device(device).type == 'cuda')\n")),
        ("tuple-becomes-list",
         "turns tuples into lists",
         _move("        return batch.to(device, non_blocking=batch.is_pinned())\n",
               "        return [to_device(v, device) for v in batch]\n")),
        ("moves-top-level-only",
         "moves only the top level: tensors inside nested containers stay behind",
         _MOVE_HEAD +
         "    if isinstance(batch, torch.Tensor):\n"
         "        return batch.to(device, non_blocking=batch.is_pinned())\n"
         "    if isinstance(batch, dict):\n"
         "        return {k: v.to(device, non_blocking=v.is_pinned()) if isinstance(v, torch.Tensor) else v\n"
         "                for k, v in batch.items()}\n"
         "    if isinstance(batch, (list, tuple)):\n"
         "        return type(batch)(v.to(device, non_blocking=v.is_pinned())\n"
         "                           if isinstance(v, torch.Tensor) else v for v in batch)\n"
         "    return batch\n"),
        ("namedtuple-becomes-tuple",
         "turns a namedtuple into a plain tuple (batch.x no longer works)",
         _move("        return batch.to(device, non_blocking=batch.is_pinned())\n")),
        ("namedtuple-from-iterable",
         "rebuilds every tuple with type(batch)(generator): a namedtuple needs its items as arguments",
         _move("        return batch.to(device, non_blocking=batch.is_pinned())\n",
               "        return type(batch)(to_device(v, device) for v in batch)\n")),
        ("modify-batch-in-place",
         "moves the dict's tensors in place, modifying the caller's batch",
         _MOVE_HEAD +
         "    if isinstance(batch, torch.Tensor):\n"
         "        return batch.to(device, non_blocking=batch.is_pinned())\n"
         "    if isinstance(batch, dict):\n"
         "        for k in batch:\n"
         "            batch[k] = to_device(batch[k], device)\n"
         "        return batch\n"
         "    if isinstance(batch, list):\n"
         "        return [to_device(v, device) for v in batch]\n"
         "    if isinstance(batch, tuple):\n"
         "        return tuple(to_device(v, device) for v in batch)\n"
         "    return batch\n"),
    ],
    "ex6-evaluate-answer": [
        ("eval-stops-graph",
         "model.eval() instead of no_grad: a graph is still recorded each batch",
         _EVAL_HEAD +
         "    model.eval()\n"
         "    total, count = 0.0, 0\n"
         "    for x, y in batches:\n"
         "        total += loss_fn(model(x), y).item()\n"
         "        count += 1\n"
         "    if count == 0:\n        raise ValueError('no batches')\n"
         "    return total / count\n"),
        ("zero-d-tensor-is-a-float",
         "no_grad, but returns a tensor instead of a float",
         _EVAL_HEAD +
         "    with torch.no_grad():\n"
         "        losses = [loss_fn(model(x), y) for x, y in batches]\n"
         "    if not losses:\n        raise ValueError('no batches')\n"
         "    return torch.stack(losses).mean()\n"),
        ("set-grad-enabled-is-scoped",
         "turns grad mode off with set_grad_enabled(False) and never turns it back on",
         _EVAL_HEAD +
         "    torch.set_grad_enabled(False)\n"
         "    losses = [loss_fn(model(x), y) for x, y in batches]\n"
         "    if not losses:\n        raise ValueError('no batches')\n"
         "    return torch.stack(losses).mean().item()\n"),
        ("kept-losses-are-numbers",
         "keeps every batch's loss (and graph) in a list, reads it at the end",
         _EVAL_HEAD +
         "    losses = [loss_fn(model(x), y) for x, y in batches]\n"
         "    if not losses:\n        raise ValueError('no batches')\n"
         "    return torch.stack(losses).mean().item()\n"),
        ("grad-mode-on-by-default",
         "switches grad mode off, then on again: wrong for a caller who had it off",
         _EVAL_HEAD +
         "    torch.set_grad_enabled(False)\n"
         "    total, count = 0.0, 0\n"
         "    for x, y in batches:\n"
         "        total += loss_fn(model(x), y).item()\n"
         "        count += 1\n"
         "    torch.set_grad_enabled(True)\n"
         "    if count == 0:\n        raise ValueError('no batches')\n"
         "    return total / count\n"),
        ("mean-over-samples",
         "weights each batch by its size (a mean over samples, not over batches)",
         _EVAL_HEAD +
         "    total, count = None, 0\n"
         "    with torch.no_grad():\n"
         "        for x, y in batches:\n"
         "            loss = loss_fn(model(x), y) * len(x)\n"
         "            total = loss if total is None else total + loss\n"
         "            count += len(x)\n"
         "    if count == 0:\n        raise ValueError('no batches')\n"
         "    return (total / count).item()\n"),
        ("batches-are-a-list",
         "calls len(batches): fails on a generator",
         _EVAL_HEAD +
         "    if len(batches) == 0:\n        raise ValueError('no batches')\n"
         "    with torch.no_grad():\n"
         "        total = sum(loss_fn(model(x), y) for x, y in batches)\n"
         "    return (total / len(batches)).item()\n"),
    ],
}
