"""Wrong answers for 03-indexing-and-views (see __init__.py for the format)."""

_SHARING_RIGHT = {
    "x[2]": True,
    "x[[2]]": False,
    "x[2:3]": True,
    "x[:, [1]]": False,
    "x[::2, 1:]": True,
    "x[x > 10]": False,
    "x[torch.tensor(2)]": True,
    "x[torch.tensor([2])]": False,
    "x[[1, 3]][0]": False,
    "x.narrow(1, 2, 3)": True,
}

_OUTCOMES_RIGHT = {
    "x.view(6, 4)": "view",
    "x.t().view(24)": "error",
    "x.t().reshape(24)": "copy",
    "x.t().view(6, 1, 4)": "view",
    "x[:, ::2].view(12)": "view",
    "x[:, :3].view(12)": "error",
    "x[::2].reshape(12)": "copy",
    "x.flatten()": "view",
    "x.t().flatten()": "copy",
    "x.unsqueeze(0).expand(2, 4, 6).reshape(48)": "copy",
}


def _table(name: str, right: dict, changes: dict) -> str:
    table = {**right, **changes}
    body = "".join(f"    {k!r}: {v!r},\n" for k, v in table.items())
    return f"{name} = {{\n" + body + "}\n"


def _sharing(**changes: bool) -> str:
    keys = list(_SHARING_RIGHT)
    return _table("predicted_sharing", _SHARING_RIGHT, {keys[int(k[1:])]: v for k, v in changes.items()})


def _outcomes(changes: dict) -> str:
    return _table("predicted_outcomes", _OUTCOMES_RIGHT, changes)


_POSITION_HEAD = "def storage_position(shape, stride, offset, index):\n"

WRONG = {
    "ex1-storage-position-answer": [
        ("offset-not-counted", "forgets the storage offset",
         _POSITION_HEAD
         + "    if len(index) != len(shape):\n        raise IndexError('wrong length')\n"
           "    total = 0\n"
           "    for i, n, s in zip(index, shape, stride):\n"
           "        i = i + n if i < 0 else i\n"
           "        if not 0 <= i < n:\n            raise IndexError('out of range')\n"
           "        total += i * s\n"
           "    return total\n"),
        ("strides-from-shape", "assumes row-major strides computed from the shape",
         _POSITION_HEAD
         + "    if len(index) != len(shape):\n        raise IndexError('wrong length')\n"
           "    total, step = offset, 1\n"
           "    for i, n in reversed(list(zip(index, shape))):\n"
           "        i = i + n if i < 0 else i\n"
           "        if not 0 <= i < n:\n            raise IndexError('out of range')\n"
           "        total += i * step\n"
           "        step *= n\n"
           "    return total\n"),
        ("negative-index-used-as-is", "negative indices are used as they are",
         _POSITION_HEAD
         + "    if len(index) != len(shape):\n        raise IndexError('wrong length')\n"
           "    for i, n in zip(index, shape):\n"
           "        if i >= n:\n            raise IndexError('out of range')\n"
           "    return offset + sum(i * s for i, s in zip(index, stride))\n"),
        ("out-of-range-index-is-an-address",
         "no range check: returns an address for an element that does not exist",
         _POSITION_HEAD
         + "    index = [i + n if i < 0 else i for i, n in zip(index, shape)]\n"
           "    return offset + sum(i * s for i, s in zip(index, stride))\n"),
    ],
    "ex2-sharing-answer": [
        ("zero-d-index-is-advanced", "a 0-d index tensor taken for advanced indexing", _sharing(k6=False)),
        ("view-of-a-copy-reaches-x", "basic indexing of a copy taken for a view of x", _sharing(k8=True)),
        ("kept-dim-slice-copies", "a slice that keeps the dim taken for a copy", _sharing(k2=False)),
    ],
    "ex3-scale-rows-answer": [
        ("advanced-index-is-a-view", "the original bug: mul_ on the copy made by advanced indexing",
         "def scale_rows_(x, rows, factor):\n    x[rows].mul_(factor)\n    return x\n"),
        ("loop-scales-each-row-once", "a Python loop: a repeated row is scaled twice",
         "def scale_rows_(x, rows, factor):\n    for r in rows:\n        x[r] *= factor\n    return x\n"),
        ("result-is-the-in-place-promise", "clones first, so the caller's tensor never changes",
         "def scale_rows_(x, rows, factor):\n    x = x.clone()\n    x[rows] *= factor\n    return x\n"),
        ("accumulate-writes-like-assignment", "index_put_ with accumulate=True adds instead of replacing",
         "def scale_rows_(x, rows, factor):\n"
         "    idx = torch.as_tensor(rows, dtype=torch.long)\n"
         "    x.index_put_((idx,), x[idx] * factor, accumulate=True)\n    return x\n"),
    ],
    "ex4-standardized-answer": [
        ("window-is-its-own-tensor", "the original bug: in-place arithmetic on a narrow() view",
         "def standardized(signal, start, length):\n"
         "    window = signal.narrow(0, start, length)\n"
         "    window -= window.mean()\n    window /= window.std()\n    return window\n"),
        ("contiguous-always-copies", "contiguous() taken for a copy (it returns the window itself)",
         "def standardized(signal, start, length):\n"
         "    window = signal[start:start + length].contiguous()\n"
         "    window -= window.mean()\n    window /= window.std()\n    return window\n"),
        ("window-is-its-own-tensor", "reshape() taken for a copy (it returns a view here)",
         "def standardized(signal, start, length):\n"
         "    window = signal[start:start + length].reshape(-1)\n"
         "    window.sub_(window.mean()).div_(window.std())\n    return window\n"),
        ("std-divides-by-n", "population std (correction=0) instead of the default",
         "def standardized(signal, start, length):\n"
         "    window = signal[start:start + length]\n"
         "    return (window - window.mean()) / window.std(correction=0)\n"),
        ("02/float-method-keeps-float64",
         "copies the window with .float() (float32 numbers for a float64 signal), casts back",
         "def standardized(signal, start, length):\n"
         "    window = signal[start:start + length].float()\n"
         "    return ((window - window.mean()) / window.std()).to(signal.dtype)\n"),
        ("std-needs-epsilon",
         "adds an epsilon to the std (the normalization-layer habit; the contract says none)",
         "def standardized(signal, start, length):\n"
         "    window = signal[start:start + length]\n"
         "    return (window - window.mean()) / (window.std() + 1e-8)\n"),
    ],
    "ex5-view-copy-error-answer": [
        ("view-needs-contiguous", "view thought to need a contiguous tensor",
         _outcomes({"x[:, ::2].view(12)": "error", "x.t().view(6, 1, 4)": "error"})),
        ("view-copies-when-it-must", "view thought to copy when it cannot reinterpret",
         _outcomes({"x.t().view(24)": "copy", "x[:, :3].view(12)": "copy"})),
        ("flatten-always-copies", "flatten thought to always copy", _outcomes({"x.flatten()": "copy"})),
        ("reshape-keeps-stride-zero", "reshape of an expanded tensor thought to keep stride 0",
         _outcomes({"x.unsqueeze(0).expand(2, 4, 6).reshape(48)": "view"})),
    ],
    "ex6-sliding-windows-answer": [
        ("as-strided-offset-is-relative",
         "offset 0, as if it counted from x's start: windows start at the storage's element 0",
         "def sliding_windows(x, size, step=1):\n"
         "    if x.dim() != 1 or not 1 <= size <= len(x) or step < 1:\n"
         "        raise ValueError('bad arguments')\n"
         "    count = (len(x) - size) // step + 1\n"
         "    s = x.stride(0)\n"
         "    return x.as_strided((count, size), (step * s, s), 0)\n"),
        ("strides-from-shape", "assumes x is contiguous (stride 1)",
         "def sliding_windows(x, size, step=1):\n"
         "    if x.dim() != 1 or not 1 <= size <= len(x) or step < 1:\n"
         "        raise ValueError('bad arguments')\n"
         "    count = (len(x) - size) // step + 1\n"
         "    return x.as_strided((count, size), (step, 1), x.storage_offset())\n"),
        ("one-window-less", "off by one: one window too few",
         "def sliding_windows(x, size, step=1):\n"
         "    if x.dim() != 1 or not 1 <= size <= len(x) or step < 1:\n"
         "        raise ValueError('bad arguments')\n"
         "    count = (len(x) - size) // step\n"
         "    s = x.stride(0)\n"
         "    return x.as_strided((count, size), (step * s, s), x.storage_offset())\n"),
        ("copy-will-do-for-a-view", "stacks slices: right values, but a copy",
         "def sliding_windows(x, size, step=1):\n"
         "    if x.dim() != 1 or not 1 <= size <= len(x) or step < 1:\n"
         "        raise ValueError('bad arguments')\n"
         "    return torch.stack([x[i:i + size] for i in range(0, len(x) - size + 1, step)])\n"),
        ("as-strided-checks-arguments", "no argument checks",
         "def sliding_windows(x, size, step=1):\n"
         "    count = (len(x) - size) // step + 1\n"
         "    s = x.stride(0)\n"
         "    return x.as_strided((count, size), (step * s, s), x.storage_offset())\n"),
    ],
    "ex7-anti-diagonal-answer": [
        ("as-strided-offset-is-relative", "forgets the storage offset",
         "def anti_diagonal(m):\n    rows, cols = m.shape\n    r, c = m.stride()\n"
         "    return m.as_strided((min(rows, cols),), (r - c,), (cols - 1) * c)\n"),
        ("strides-from-shape", "assumes a contiguous matrix (strides cols, 1)",
         "def anti_diagonal(m):\n    rows, cols = m.shape\n"
         "    return m.as_strided((min(rows, cols),), (cols - 1,), m.storage_offset() + cols - 1)\n"),
        ("flip-is-a-view", "right values, but flip() copies",
         "def anti_diagonal(m):\n    return m.flip(1).diagonal()\n"),
        ("diagonal-is-the-anti-diagonal", "the main diagonal",
         "def anti_diagonal(m):\n    return m.diagonal()\n"),
    ],
}
