"""Wrong answers for 11-leaks-gradients-compile-hangs (see __init__.py for the format)."""

# ---- exercise 1: pinned_bytes --------------------------------------------------------------------

_PINNED_NBYTES = '''\
def pinned_bytes(tensors):
    total = 0
    for t in tensors:
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"expected tensors, got a {type(t).__name__}")
        total += t.nbytes
    return total
'''

_PINNED_DATA_PTR = '''\
def pinned_bytes(tensors):
    sizes = {}
    for t in tensors:
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"expected tensors, got a {type(t).__name__}")
        sizes[t.data_ptr()] = t.untyped_storage().nbytes()
    return sum(sizes.values())
'''

_PINNED_NO_DEDUPE = '''\
def pinned_bytes(tensors):
    total = 0
    for t in tensors:
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"expected tensors, got a {type(t).__name__}")
        total += t.untyped_storage().nbytes()
    return total
'''

_PINNED_BASE = '''\
def pinned_bytes(tensors):
    bases = {}
    for t in tensors:
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"expected tensors, got a {type(t).__name__}")
        base = t._base if t._base is not None else t
        bases[id(base)] = base.nbytes
    return sum(bases.values())
'''

_PINNED_NO_TYPE_CHECK = '''\
def pinned_bytes(tensors):
    sizes = {}
    for t in tensors:
        storage = t.untyped_storage()
        sizes[storage.data_ptr()] = storage.nbytes()
    return sum(sizes.values())
'''

# ---- exercise 2: train_epoch ---------------------------------------------------------------------

_TRAIN_HOOK_STAYS = '''\
def train_epoch(model, opt, batches):
    means = []
    model[0].register_forward_hook(
        lambda module, inputs, output: means.append(output.detach().abs().mean().item()))
    total = 0.0
    for x, y in batches:
        loss = F.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        total += loss.item()
    return total / len(batches), means
'''

_TRAIN_CLEARS_ALL_HOOKS = '''\
def train_epoch(model, opt, batches):
    means = []
    model[0].register_forward_hook(
        lambda module, inputs, output: means.append(output.detach().abs().mean().item()))
    total = 0.0
    try:
        for x, y in batches:
            loss = F.mse_loss(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item()
    finally:
        model[0]._forward_hooks.clear()
    return total / len(batches), means
'''

_TRAIN_NO_FINALLY = '''\
def train_epoch(model, opt, batches):
    means = []
    handle = model[0].register_forward_hook(
        lambda module, inputs, output: means.append(output.detach().abs().mean().item()))
    total = 0.0
    for x, y in batches:
        loss = F.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        total += loss.item()
    handle.remove()
    return total / len(batches), means
'''

_TRAIN_DETACH_TOTAL = '''\
def train_epoch(model, opt, batches):
    means = []
    handle = model[0].register_forward_hook(
        lambda module, inputs, output: means.append(output.detach().abs().mean().item()))
    total = 0
    try:
        for x, y in batches:
            loss = F.mse_loss(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.detach()
    finally:
        handle.remove()
    return total / len(batches), means
'''

_TRAIN_KEEPS_ACTIVATIONS = '''\
activation_log = []


def train_epoch(model, opt, batches):
    handle = model[0].register_forward_hook(
        lambda module, inputs, output: activation_log.append(output.detach()))
    start = len(activation_log)
    total = 0.0
    try:
        for x, y in batches:
            loss = F.mse_loss(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item()
    finally:
        handle.remove()
    return total / len(batches), [a.abs().mean().item() for a in activation_log[start:]]
'''

_TRAIN_ZERO_GRAD_LATE = '''\
def train_epoch(model, opt, batches):
    means = []
    handle = model[0].register_forward_hook(
        lambda module, inputs, output: means.append(output.detach().abs().mean().item()))
    total = 0.0
    try:
        for x, y in batches:
            loss = F.mse_loss(model(x), y)
            loss.backward()
            opt.zero_grad()
            opt.step()
            total += loss.item()
    finally:
        handle.remove()
    return total / len(batches), means
'''

_TRAIN_SAMPLE_WEIGHTED = '''\
def train_epoch(model, opt, batches):
    means = []
    handle = model[0].register_forward_hook(
        lambda module, inputs, output: means.append(output.detach().abs().mean().item()))
    total, samples = 0.0, 0
    try:
        for x, y in batches:
            loss = F.mse_loss(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item() * len(x)
            samples += len(x)
    finally:
        handle.remove()
    return total / samples, means
'''

# ---- exercise 3: grad_norms ----------------------------------------------------------------------

_NORMS_FROM_DOT_GRAD = '''\
def grad_norms(model, x, loss_fn):
    loss_fn(model(x)).backward()
    result = {}
    for name, module in model.named_modules():
        params = [p for p in module.parameters(recurse=False) if p.requires_grad]
        if not params:
            continue
        grads = [p.grad for p in params if p.grad is not None]
        result[name] = math.sqrt(sum(g.pow(2).sum().item() for g in grads)) if grads else None
    return result
'''

_NORMS_LATE_BINDING = '''\
def grad_norms(model, x, loss_fn):
    squares, handles = {}, []
    for name, module in model.named_modules():
        params = [p for p in module.parameters(recurse=False) if p.requires_grad]
        if not params:
            continue
        squares[name] = None

        def hook(grad):
            squares[name] = (squares[name] or 0.0) + grad.pow(2).sum().item()

        handles += [p.register_hook(hook) for p in params]
    try:
        loss_fn(model(x)).backward()
    finally:
        for h in handles:
            h.remove()
    return {name: None if s is None else math.sqrt(s) for name, s in squares.items()}
'''

_NORMS_SUM_OF_NORMS = '''\
def grad_norms(model, x, loss_fn):
    norms, handles = {}, []
    for name, module in model.named_modules():
        params = [p for p in module.parameters(recurse=False) if p.requires_grad]
        if not params:
            continue
        norms[name] = None

        def hook(grad, name=name):
            norms[name] = (norms[name] or 0.0) + grad.norm().item()

        handles += [p.register_hook(hook) for p in params]
    try:
        loss_fn(model(x)).backward()
    finally:
        for h in handles:
            h.remove()
    return norms
'''

_NORMS_HOOKS_STAY = '''\
def grad_norms(model, x, loss_fn):
    squares = {}
    for name, module in model.named_modules():
        params = [p for p in module.parameters(recurse=False) if p.requires_grad]
        if not params:
            continue
        squares[name] = None

        def hook(grad, name=name):
            squares[name] = (squares[name] or 0.0) + grad.pow(2).sum().item()

        for p in params:
            p.register_hook(hook)
    loss_fn(model(x)).backward()
    return {name: None if s is None else math.sqrt(s) for name, s in squares.items()}
'''

_NORMS_ZERO_NOT_NONE = '''\
def grad_norms(model, x, loss_fn):
    squares, handles = {}, []
    for name, module in model.named_modules():
        params = [p for p in module.parameters(recurse=False) if p.requires_grad]
        if not params:
            continue
        squares[name] = 0.0

        def hook(grad, name=name):
            squares[name] += grad.pow(2).sum().item()

        handles += [p.register_hook(hook) for p in params]
    try:
        loss_fn(model(x)).backward()
    finally:
        for h in handles:
            h.remove()
    return {name: math.sqrt(s) for name, s in squares.items()}
'''

_NORMS_PER_PARAMETER = '''\
def grad_norms(model, x, loss_fn):
    norms, handles = {}, []
    for name, p in model.named_parameters():
        if not p.requires_grad:
            continue
        norms[name] = None

        def hook(grad, name=name):
            norms[name] = grad.norm().item()

        handles.append(p.register_hook(hook))
    try:
        loss_fn(model(x)).backward()
    finally:
        for h in handles:
            h.remove()
    return norms
'''

# ---- exercise 4: diagnose ------------------------------------------------------------------------

_DIAGNOSE_DIVIDES = '''\
def diagnose(norms, ratio=100.0, max_norm=1000.0):
    values = [v for v in norms if v is not None]
    if len(values) < 2:
        raise ValueError("need at least two layers")
    if any(not math.isfinite(v) or v > max_norm for v in values):
        return "exploding"
    r = values[0] / values[-1]
    if r < 1 / ratio:
        return "vanishing"
    if r > ratio:
        return "exploding"
    return "healthy"
'''

_DIAGNOSE_NO_MAX_NORM = '''\
def diagnose(norms, ratio=100.0, max_norm=1000.0):
    values = [v for v in norms if v is not None]
    if len(values) < 2:
        raise ValueError("need at least two layers")
    if any(not math.isfinite(v) for v in values):
        return "exploding"
    first, last = values[0], values[-1]
    if first * ratio < last:
        return "vanishing"
    if first > last * ratio:
        return "exploding"
    return "healthy"
'''

_DIAGNOSE_FORGETS_NAN = '''\
def diagnose(norms, ratio=100.0, max_norm=1000.0):
    values = [v for v in norms if v is not None]
    if len(values) < 2:
        raise ValueError("need at least two layers")
    if any(v > max_norm for v in values):
        return "exploding"
    first, last = values[0], values[-1]
    if first * ratio < last:
        return "vanishing"
    if first > last * ratio:
        return "exploding"
    return "healthy"
'''

_DIAGNOSE_REVERSED = '''\
def diagnose(norms, ratio=100.0, max_norm=1000.0):
    values = [v for v in norms if v is not None]
    if len(values) < 2:
        raise ValueError("need at least two layers")
    if any(not math.isfinite(v) or v > max_norm for v in values):
        return "exploding"
    first, last = values[0], values[-1]
    if last * ratio < first:
        return "vanishing"
    if last > first * ratio:
        return "exploding"
    return "healthy"
'''

_DIAGNOSE_NO_FILTER = '''\
def diagnose(norms, ratio=100.0, max_norm=1000.0):
    values = list(norms)
    if len(values) < 2:
        raise ValueError("need at least two layers")
    if any(not math.isfinite(v) or v > max_norm for v in values):
        return "exploding"
    first, last = values[0], values[-1]
    if first * ratio < last:
        return "vanishing"
    if first > last * ratio:
        return "exploding"
    return "healthy"
'''

_DIAGNOSE_INCLUSIVE = '''\
def diagnose(norms, ratio=100.0, max_norm=1000.0):
    values = [v for v in norms if v is not None]
    if len(values) < 2:
        raise ValueError("need at least two layers")
    if any(not math.isfinite(v) or v > max_norm for v in values):
        return "exploding"
    first, last = values[0], values[-1]
    if first * ratio <= last:
        return "vanishing"
    if first >= last * ratio:
        return "exploding"
    return "healthy"
'''

# ---- exercise 5: graph breaks --------------------------------------------------------------------

_RIGHT_BREAKS = {"sin_cos": 0, "two_prints": 2, "branch_on_value": 1, "branch_on_shape": 0,
                 "python_loop": 0, "scalar_item": 1}


def _breaks(**changes):
    return f"predicted_breaks = {dict(_RIGHT_BREAKS, **changes)!r}\n"


# ---- exercise 6: standardize_fixed ---------------------------------------------------------------

_STD_KEEPS_ITEM = '''\
def standardize_fixed(x):
    mean = x.mean().item()
    std = x.std()
    return torch.where(std < 1e-6, x - mean, (x - mean) / std)
'''

_STD_DISABLED = '''\
@torch.compiler.disable
def standardize_fixed(x):
    mean = x.mean().item()
    std = x.std().item()
    if std < 1e-6:
        return x - mean
    return (x - mean) / std
'''

_STD_NO_CONSTANT_CASE = '''\
def standardize_fixed(x):
    return (x - x.mean()) / x.std()
'''

_STD_PYTHON_IF = '''\
def standardize_fixed(x):
    mean = x.mean()
    std = x.std()
    if std < 1e-6:
        return x - mean
    return (x - mean) / std
'''

_STD_BIASED = '''\
def standardize_fixed(x):
    mean = x.mean()
    std = x.std(unbiased=False)
    return torch.where(std < 1e-6, x - mean, (x - mean) / std)
'''

_STD_CLAMPED = '''\
def standardize_fixed(x):
    mean = x.mean()
    return (x - mean) / x.std().clamp_min(1e-6)
'''

_STD_FLOAT32 = '''\
def standardize_fixed(x):
    x32 = x.float()
    mean, std = x32.mean(), x32.std()
    return torch.where(std < 1e-6, x32 - mean, (x32 - mean) / std).to(x.dtype)
'''

_STD_NAN_TO_NUM = '''\
def standardize_fixed(x):
    mean = x.mean()
    return torch.nan_to_num((x - mean) / x.std())
'''

WRONG = {
    "ex1-pinned-bytes-answer": [
        ("shown-bytes-held", "sums the bytes each tensor shows (nbytes), not the storages", _PINNED_NBYTES),
        ("data-ptr-identifies-storage",
         "recognises storages by t.data_ptr(): views at other offsets count again", _PINNED_DATA_PTR),
        ("storage-counted-per-tensor", "counts a shared storage once per tensor", _PINNED_NO_DEDUPE),
        ("base-holds-the-storage",
         "takes the bytes of t._base (misses storages larger than their base)", _PINNED_BASE),
        ("unchecked-input-fails-anyway",
         "no type check: a list inside raises AttributeError, not TypeError", _PINNED_NO_TYPE_CHECK),
    ],
    "ex2-train-epoch-answer": [
        ("hook-ends-with-function", "never removes the hook", _TRAIN_HOOK_STAYS),
        ("remove-after-loop-always-runs",
         "removes the hook, but not in finally: an error leaves it behind", _TRAIN_NO_FINALLY),
        ("clearing-hooks-removes-only-mine",
         "clears every forward hook of model[0] in finally, the caller's too", _TRAIN_CLEARS_ALL_HOOKS),
        ("detached-scalar-is-a-float",
         "accumulates loss.detach(): returns a tensor, not a float", _TRAIN_DETACH_TOTAL),
        ("detached-activation-is-free",
         "keeps the detached activations in a global log", _TRAIN_KEEPS_ACTIVATIONS),
        ("zero-grad-anywhere",
         "zero_grad() after backward(): the step uses no gradient", _TRAIN_ZERO_GRAD_LATE),
        ("mean-over-samples",
         "weights each batch's loss by its size (a per-sample mean)", _TRAIN_SAMPLE_WEIGHTED),
    ],
    "ex3-grad-norms-answer": [
        ("grad-holds-this-pass",
         "reads p.grad after backward (includes earlier passes)", _NORMS_FROM_DOT_GRAD),
        ("closure-binds-each-name",
         "late-binding closure: every hook adds to the last layer", _NORMS_LATE_BINDING),
        ("norms-add-up", "adds the parameters' norms instead of their squares", _NORMS_SUM_OF_NORMS),
        ("hook-ends-with-function", "leaves the hooks registered", _NORMS_HOOKS_STAY),
        ("no-gradient-is-zero", "reports 0.0 where no gradient arrived, not None", _NORMS_ZERO_NOT_NONE),
        ("norm-per-parameter", "one entry per parameter instead of per layer", _NORMS_PER_PARAMETER),
    ],
    "ex4-diagnose-answer": [
        ("ratio-by-division", "divides first by last: fails when the last norm is 0", _DIAGNOSE_DIVIDES),
        ("max-norm-not-needed", "ignores max_norm", _DIAGNOSE_NO_MAX_NORM),
        ("nan-compares-large", "forgets NaN (every comparison with NaN is False)", _DIAGNOSE_FORGETS_NAN),
        ("output-side-first", "reads the list output side first", _DIAGNOSE_REVERSED),
        ("none-is-a-norm", "does not skip None entries", _DIAGNOSE_NO_FILTER),
        ("boundary-counts", "inclusive comparisons at the boundary", _DIAGNOSE_INCLUSIVE),
    ],
    "ex5-graph-breaks-answer": [
        ("shape-branch-breaks", "believes a branch on a shape breaks the graph", _breaks(branch_on_shape=1)),
        ("python-loop-breaks", "believes a Python loop breaks the graph", _breaks(python_loop=3)),
        ("prints-break-once", "counts two prints as one break", _breaks(two_prints=1)),
        ("item-is-traced", "believes .item() is traced", _breaks(scalar_item=0)),
    ],
    "ex6-standardize-answer": [
        ("item-is-traced", "keeps mean.item(): still a graph break", _STD_KEEPS_ITEM),
        ("disable-removes-breaks",
         "hides everything with torch.compiler.disable: zero graphs", _STD_DISABLED),
        ("constant-std-is-safe",
         "drops the constant-input case: NaN for a constant input", _STD_NO_CONSTANT_CASE),
        ("tensor-if-is-traced", "a Python if on a tensor value: still a graph break", _STD_PYTHON_IF),
        ("biased-std-is-the-same", "biased std (unbiased=False): different values", _STD_BIASED),
        ("clamp-replaces-branch",
         "clamps std at 1e-6: right for constants, wrong for a tiny nonzero std", _STD_CLAMPED),
        ("nan-to-num-replaces-branch",
         "nan_to_num of (x - mean) / std: divides by a tiny nonzero std", _STD_NAN_TO_NUM),
        ("float32-is-enough",
         "computes in float32 whatever the input: float64 loses precision", _STD_FLOAT32),
    ],
}
