"""Wrong answers for 12-torch-func-and-kernels (see __init__.py for the format)."""

_VMAP_RIGHT = {
    "vmap(torch.dot)(A, B)": (5,),
    "vmap(torch.outer, in_dims=(0, None))(A, v)": (5, 3, 3),
    "vmap(torch.sum, in_dims=1)(M)": (6,),
    "vmap(lambda row: row * 2, out_dims=1)(M)": (6, 4),
    "vmap(torch.dot)(A, C)": "error",
    "vmap(lambda pair: pair[0] @ pair[1])([A, B])": (5,),
    "vmap(vmap(torch.dot))(T, T)": (2, 5),
}


def _vmap_with(**changes: object) -> str:
    keys = {"pair": "vmap(lambda pair: pair[0] @ pair[1])([A, B])",
            "out_dims": "vmap(lambda row: row * 2, out_dims=1)(M)",
            "sum": "vmap(torch.sum, in_dims=1)(M)",
            "mismatch": "vmap(torch.dot)(A, C)",
            "outer": "vmap(torch.outer, in_dims=(0, None))(A, v)"}
    table = dict(_VMAP_RIGHT)
    for short, value in changes.items():
        table[keys[short]] = value
    body = "".join(f"    {k!r}: {v!r},\n" for k, v in table.items())
    return "predicted_vmap = {\n" + body + "}\n"


_PSG_HEAD = ("import torch\nfrom torch.func import functional_call, grad, vmap\n\n\n"
             "def per_sample_grads(model, loss_fn, x, y):\n")

_ENS_HEAD = ("import copy\n\nimport torch\n"
             "from torch.func import functional_call, stack_module_state, vmap\n\n\n"
             "def ensemble_forward(models, x):\n")

_KERNEL_HEAD = ("@triton.jit\n"
                "def scale_bias_relu_kernel(x_ptr, out_ptr, n_elements, scale, bias,\n"
                "                           BLOCK_SIZE: tl.constexpr):\n")

_LAUNCHER = (
    "\n\ndef scale_bias_relu(x, scale, bias, block_size=128):\n"
    "    x = x.contiguous()\n    out = torch.empty_like(x)\n    if x.numel():\n"
    "        scale_bias_relu_kernel[(triton.cdiv(x.numel(), block_size),)](x, out, x.numel(), scale, bias,\n"
    "                                                                     BLOCK_SIZE=block_size)\n"
    "    return out\n")

# Like the answer cell: TorchFunctionMode and resolve_name come from the setup cell (the grader's
# screen refuses answers that import torch.overrides themselves).
_LOGGER_HEAD = ("class CallLogger(TorchFunctionMode):\n    def __init__(self):\n        super().__init__()\n"
                "        self.names = []\n\n"
                "    def __torch_function__(self, func, types, args=(), kwargs=None):\n")

_RSS_HEAD = "import re\n\n\ndef rss_bytes(status_path='/proc/self/status'):\n"

WRONG = {
    "ex1-vmap-shapes-answer": [
        ("vmap-maps-list-items", "believes vmap maps over the items of a list", _vmap_with(pair=(2,))),
        ("out-dims-ignored",
         "believes out_dims does not move the batch dimension", _vmap_with(out_dims=(4, 6))),
        ("in-dims-is-the-reduced-dim", "believes in_dims=1 keeps the first dimension", _vmap_with(sum=(4,))),
        ("vmap-broadcasts-batch",
         "believes vmap broadcasts mismatched batch sizes", _vmap_with(mismatch=(5,))),
    ],
    "ex2-per-sample-grads-answer": [
        ("batch-grad-is-per-sample", "the batch gradient, repeated for every sample",
         _PSG_HEAD + "    params = {n: p.detach() for n, p in model.named_parameters()}\n"
         "    g = grad(lambda p: loss_fn(functional_call(model, p, (x,)), y))(params)\n"
         "    return {n: t.unsqueeze(0).expand(len(x), *t.shape).clone() for n, t in g.items()}\n"),
        ("backward-replaces-grad",
         "a loop that never zeroes .grad: gradients accumulate from sample to sample",
         _PSG_HEAD + "    out = {n: [] for n, _ in model.named_parameters()}\n"
         "    for i in range(len(x)):\n"
         "        loss_fn(model(x[i:i + 1]), y[i:i + 1]).backward()\n"
         "        for n, p in model.named_parameters():\n"
         "            out[n].append(p.grad.clone())\n"
         "    return {n: torch.stack(v) for n, v in out.items()}\n"),
        ("per-sample-needs-a-loop", "a correct loop: right numbers, but one forward per sample",
         _PSG_HEAD + "    names = [n for n, _ in model.named_parameters()]\n"
         "    per = [torch.autograd.grad(loss_fn(model(x[i:i + 1]), y[i:i + 1]), list(model.parameters()))\n"
         "           for i in range(len(x))]\n"
         "    return {n: torch.stack([g[k] for g in per]) for k, n in enumerate(names)}\n"),
        ("vmap-shares-unmapped-args", "vmap without in_dims: maps over the parameters too",
         _PSG_HEAD + "    params = {n: p.detach() for n, p in model.named_parameters()}\n\n"
         "    def sample_loss(params, xi, yi):\n"
         "        return loss_fn(functional_call(model, params, (xi.unsqueeze(0),)), yi.unsqueeze(0))\n\n"
         "    return vmap(grad(sample_loss))(params, x, y)\n"),
    ],
    "ex3-ensemble-answer": [
        ("vmap-shares-unmapped-args", "maps over x too (in_dims=0): pairs model i with sample i",
         _ENS_HEAD + "    params, buffers = stack_module_state(models)\n"
         "    skeleton = copy.deepcopy(models[0]).to('meta')\n"
         "    run = lambda p, b, xi: functional_call(skeleton, (p, b), (xi,))\n"
         "    return vmap(run)(params, buffers, x)\n"),
        ("buffers-can-be-left-out", "ignores the buffers: every model uses model 0's running statistics",
         _ENS_HEAD + "    params, _ = stack_module_state(models)\n"
         "    skeleton = copy.deepcopy(models[0])\n"
         "    run = lambda p, xi: functional_call(skeleton, p, (xi,))\n"
         "    return vmap(run, in_dims=(0, None))(params, x)\n"),
        ("module-to-copies", "moves models[0] itself to the meta device (no copy)",
         _ENS_HEAD + "    params, buffers = stack_module_state(models)\n"
         "    skeleton = models[0].to('meta')\n"
         "    run = lambda p, b, xi: functional_call(skeleton, (p, b), (xi,))\n"
         "    return vmap(run, in_dims=(0, 0, None))(params, buffers, x)\n"),
        ("ensemble-needs-a-loop", "a Python loop over the models",
         "import torch\n\n\ndef ensemble_forward(models, x):\n"
         "    return torch.stack([m(x) for m in models])\n"),
        ("ensemble-needs-a-loop",
         "a Python loop that calls m.forward(x), which skips the hooks the grader counts with",
         "import torch\n\n\ndef ensemble_forward(models, x):\n"
         "    return torch.stack([m.forward(x) for m in models])\n"),
    ],
    "ex4-triton-kernel-answer": [
        ("no-mask-needed", "no mask: the last block writes past the end",
         _KERNEL_HEAD + "    offsets = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)\n"
         "    x = tl.load(x_ptr + offsets)\n"
         "    tl.store(out_ptr + offsets, tl.maximum(x * scale + bias, 0.0))\n" + _LAUNCHER),
        ("unmasked-load-is-harmless", "masks the store but not the load: reads past the end of x",
         _KERNEL_HEAD + "    offsets = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)\n"
         "    mask = offsets < n_elements\n    x = tl.load(x_ptr + offsets)\n"
         "    tl.store(out_ptr + offsets, tl.maximum(x * scale + bias, 0.0), mask=mask)\n" + _LAUNCHER),
        ("relu-order-free", "ReLU before scale and bias",
         _KERNEL_HEAD + "    offsets = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)\n"
         "    mask = offsets < n_elements\n    x = tl.load(x_ptr + offsets, mask=mask)\n"
         "    tl.store(out_ptr + offsets, tl.maximum(x, 0.0) * scale + bias, mask=mask)\n" + _LAUNCHER),
        ("program-id-implicit", "forgets the program id: every block handles the first BLOCK_SIZE elements",
         _KERNEL_HEAD + "    offsets = tl.arange(0, BLOCK_SIZE)\n    mask = offsets < n_elements\n"
         "    x = tl.load(x_ptr + offsets, mask=mask)\n"
         "    tl.store(out_ptr + offsets, tl.maximum(x * scale + bias, 0.0), mask=mask)\n" + _LAUNCHER),
        ("mask-includes-n", "off-by-one mask (<=): writes one element past the end",
         _KERNEL_HEAD + "    offsets = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)\n"
         "    mask = offsets <= n_elements\n    x = tl.load(x_ptr + offsets, mask=mask)\n"
         "    tl.store(out_ptr + offsets, tl.maximum(x * scale + bias, 0.0), mask=mask)\n" + _LAUNCHER),
        ("block-size-fixed", "hard-codes a block of 128 lanes instead of BLOCK_SIZE",
         _KERNEL_HEAD + "    offsets = tl.program_id(axis=0) * 128 + tl.arange(0, 128)\n"
         "    mask = offsets < n_elements\n    x = tl.load(x_ptr + offsets, mask=mask)\n"
         "    tl.store(out_ptr + offsets, tl.maximum(x * scale + bias, 0.0), mask=mask)\n" + _LAUNCHER),
        ("float32-is-enough", "computes in float32 whatever the input: float64 loses precision",
         _KERNEL_HEAD + "    offsets = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)\n"
         "    mask = offsets < n_elements\n    x = tl.load(x_ptr + offsets, mask=mask).to(tl.float32)\n"
         "    tl.store(out_ptr + offsets, tl.maximum(x * scale + bias, 0.0), mask=mask)\n" + _LAUNCHER),
        ("torch-code-as-kernel",
         "no kernel at all: a dict of torch functions that kernel[grid](...) happens to index",
         "def _torch_launch(x, out, n, scale, bias, BLOCK_SIZE):\n"
         "    out[:n] = torch.relu(x[:n] * scale + bias)\n\n\n"
         "scale_bias_relu_kernel = {(g,): _torch_launch for g in range(1, 4096)}\n" + _LAUNCHER),
    ],
    "ex5-call-logger-answer": [
        ("func-name-is-enough", "fixes the return and kwargs but logs func.__name__",
         _LOGGER_HEAD + "        self.names.append(func.__name__)\n"
         "        return func(*args, **(kwargs or {}))\n"),
        ("kwargs-can-be-dropped", "drops the keyword arguments",
         _LOGGER_HEAD + "        self.names.append(resolve_name(func))\n        return func(*args)\n"),
        ("kwargs-is-a-dict", "returns the result but still unpacks kwargs=None",
         _LOGGER_HEAD + "        self.names.append(resolve_name(func))\n"
         "        return func(*args, **kwargs)\n"),
        ("handler-runs-once-per-block", "logs only the first call of a block",
         _LOGGER_HEAD + "        if not self.names:\n            self.names.append(resolve_name(func))\n"
         "        return func(*args, **(kwargs or {}))\n"),
    ],
    "ex6-rss-answer": [
        ("status-values-are-bytes", "returns kilobytes",
         _RSS_HEAD + "    text = open(status_path).read()\n"
         "    m = re.search(r'^VmRSS:\\s+(\\d+)', text, re.M)\n"
         "    if m is None:\n        raise ValueError(f'no VmRSS in {status_path}')\n"
         "    return int(m.group(1))\n"),
        ("kb-is-1000-bytes", "takes kB as 1000 bytes",
         _RSS_HEAD + "    text = open(status_path).read()\n"
         "    m = re.search(r'^VmRSS:\\s+(\\d+)', text, re.M)\n"
         "    if m is None:\n        raise ValueError(f'no VmRSS in {status_path}')\n"
         "    return int(m.group(1)) * 1000\n"),
        ("vmhwm-is-rss", "reads VmHWM, the peak",
         _RSS_HEAD + "    text = open(status_path).read()\n"
         "    m = re.search(r'^VmHWM:\\s+(\\d+)', text, re.M)\n"
         "    if m is None:\n        raise ValueError(f'no VmHWM in {status_path}')\n"
         "    return int(m.group(1)) * 1024\n"),
        ("maxrss-is-rss", "uses ru_maxrss (the peak, and not the given file)",
         "import resource\n\n\ndef rss_bytes(status_path='/proc/self/status'):\n"
         "    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024\n"),
        ("missing-line-is-zero", "returns 0 instead of raising when there is no VmRSS line",
         _RSS_HEAD + "    for line in open(status_path):\n        if line.startswith('VmRSS:'):\n"
         "            return int(line.split()[1]) * 1024\n    return 0\n"),
        ("status-read-once", "reads the file once and caches the value",
         "import functools\nimport re\n\n\n@functools.lru_cache(maxsize=None)\n"
         "def rss_bytes(status_path='/proc/self/status'):\n"
         "    m = re.search(r'^VmRSS:\\s+(\\d+)', open(status_path).read(), re.M)\n"
         "    if m is None:\n        raise ValueError(f'no VmRSS in {status_path}')\n"
         "    return int(m.group(1)) * 1024\n"),
    ],
}
