"""Wrong answers for 06-troubleshooting (see __init__.py for the format)."""

_FIRST_NONFINITE_ISNAN = '''\
def first_nonfinite(x, steps):
    if torch.isnan(x).any():
        return "input"
    out = x
    for name, fn in steps:
        out = fn(out)
        if torch.isnan(out).any():
            return name
    return None
'''

_FIRST_NONFINITE_ALL_BAD = '''\
def first_nonfinite(x, steps):
    if not torch.isfinite(x).any():
        return "input"
    out = x
    for name, fn in steps:
        out = fn(out)
        if not torch.isfinite(out).any():
            return name
    return None
'''

_FIRST_NONFINITE_CHECKS_INPUTS = '''\
def first_nonfinite(x, steps):
    out = x
    for name, fn in steps:
        if not torch.isfinite(out).all():
            return name
        out = fn(out)
    return None
'''

_FIRST_NONFINITE_RUNS_ALL = '''\
def first_nonfinite(x, steps):
    if not torch.isfinite(x).all():
        return "input"
    first, out = None, x
    for name, fn in steps:
        out = fn(out)
        if first is None and not torch.isfinite(out).all():
            first = name
    return first
'''

_FIRST_NONFINITE_SUM = '''\
def first_nonfinite(x, steps):
    if not torch.isfinite(x.sum()):
        return "input"
    out = x
    for name, fn in steps:
        out = fn(out)
        if not torch.isfinite(out.sum()):
            return name
    return None
'''

_WATCH_NORM_CHECK = '''\
import math


def watch_gradients(model):
    norms, nonfinite, handles = {}, [], []
    for name, p in model.named_parameters():
        if not p.requires_grad:
            continue
        norms[name] = []

        def hook(grad, name=name):
            norm = grad.norm().item()
            norms[name].append(norm)
            if not math.isfinite(norm):
                nonfinite.append(name)

        handles.append(p.register_hook(hook))
    return norms, nonfinite, handles
'''

_WATCH_LATE_BINDING = '''\
def watch_gradients(model):
    norms, nonfinite, handles = {}, [], []
    for name, p in model.named_parameters():
        if not p.requires_grad:
            continue
        norms[name] = []

        def hook(grad):
            norms[name].append(grad.norm().item())
            if not torch.isfinite(grad).all():
                nonfinite.append(name)

        handles.append(p.register_hook(hook))
    return norms, nonfinite, handles
'''

_WATCH_ISNAN = '''\
def watch_gradients(model):
    norms, nonfinite, handles = {}, [], []
    for name, p in model.named_parameters():
        if not p.requires_grad:
            continue
        norms[name] = []

        def hook(grad, name=name):
            norms[name].append(grad.norm().item())
            if torch.isnan(grad).any():
                nonfinite.append(name)

        handles.append(p.register_hook(hook))
    return norms, nonfinite, handles
'''

_WATCH_TENSORS = '''\
def watch_gradients(model):
    norms, nonfinite, handles = {}, [], []
    for name, p in model.named_parameters():
        if not p.requires_grad:
            continue
        norms[name] = []

        def hook(grad, name=name):
            norms[name].append(grad.norm())
            if not torch.isfinite(grad).all():
                nonfinite.append(name)

        handles.append(p.register_hook(hook))
    return norms, nonfinite, handles
'''

_WATCH_CLEANS = '''\
def watch_gradients(model):
    norms, nonfinite, handles = {}, [], []
    for name, p in model.named_parameters():
        if not p.requires_grad:
            continue
        norms[name] = []

        def hook(grad, name=name):
            norms[name].append(grad.norm().item())
            if not torch.isfinite(grad).all():
                nonfinite.append(name)
            return torch.nan_to_num(grad)   # "to be safe"

        handles.append(p.register_hook(hook))
    return norms, nonfinite, handles
'''

_WATCH_ALL_PARAMS = '''\
def watch_gradients(model):
    norms, nonfinite, handles = {}, [], []
    for name, p in model.named_parameters():
        norms[name] = []

        def hook(grad, name=name):
            norms[name].append(grad.norm().item())
            if not torch.isfinite(grad).all():
                nonfinite.append(name)

        if p.requires_grad:
            handles.append(p.register_hook(hook))
    return norms, nonfinite, handles
'''


def _memory(after_free_a, after_c, after_first_empty, after_d, after_last_empty) -> str:
    return ("predicted_memory = {\n"
            f"    'after free a': {after_free_a},\n"
            f"    'after malloc c': {after_c},\n"
            f"    'after first empty_cache': {after_first_empty},\n"
            f"    'after malloc d': {after_d},\n"
            f"    'after last empty_cache': {after_last_empty},\n"
            "}\n")


_VALIDATION = '''\
def validation_losses(model, batches):
    losses = []
{body}
    return losses
'''


def _needs(**changes: bool) -> str:
    table = {"frozen_extra": False, "zero_times": False, "detached_branch": True,
             "no_grad_scale": True, "tied": False}
    table.update(changes)
    return "needs_find_unused = {\n" + "".join(f"    {k!r}: {v},\n" for k, v in table.items()) + "}\n"


WRONG = {
    "ex1-first-nonfinite-answer": [
        ("isnan-catches-inf", "checks for NaN only: an infinity passes", _FIRST_NONFINITE_ISNAN),
        ("nonfinite-means-all-bad",
         "flags a step only when ALL its values are non-finite", _FIRST_NONFINITE_ALL_BAD),
        ("blame-the-next-step", "checks each step's input, so it blames the step after the culprit",
         _FIRST_NONFINITE_CHECKS_INPUTS),
        ("runs-every-step",
         "keeps running the steps after the first non-finite output", _FIRST_NONFINITE_RUNS_ALL),
        ("reduction-reveals-nonfinite",
         "checks the sum (one reduction): large finite elements overflow it to inf", _FIRST_NONFINITE_SUM),
    ],
    "ex2-watch-gradients-answer": [
        ("loop-closure-binds-early", "closure in a loop: every hook records under the last parameter's name",
         _WATCH_LATE_BINDING),
        ("isnan-catches-inf", "checks for NaN only: an infinite gradient is not flagged", _WATCH_ISNAN),
        ("zero-dim-tensor-is-a-float", "stores tensors instead of Python floats", _WATCH_TENSORS),
        ("hook-return-ignored", "the hook replaces the gradient with a cleaned one", _WATCH_CLEANS),
        ("frozen-params-get-grads", "creates keys for frozen parameters too", _WATCH_ALL_PARAMS),
        ("reduction-reveals-nonfinite",
         "flags a gradient whose norm is not finite: a finite gradient's norm can overflow",
         _WATCH_NORM_CHECK),
    ],
    "ex3-allocator-answer": [
        ("free-returns-to-gpu", "believes freeing a tensor gives the memory back to the GPU",
         _memory((20, 20), (50, 50), (50, 50), (70, 70), (20, 20))),
        ("no-block-reuse", "believes every allocation reserves a new segment (no reuse of cached blocks)",
         _memory((20, 60), (50, 90), (50, 50), (70, 70), (20, 20))),
        ("empty-cache-releases-free-pieces", "believes empty_cache releases the free part of a split segment",
         _memory((20, 60), (50, 60), (50, 50), (70, 70), (20, 20))),
    ],
    "ex4-validation-losses-answer": [
        ("no-backward-no-graph", "stores loss.item() but still records a graph in every forward pass",
         _VALIDATION.format(body="    for x, y in batches:\n"
                                 "        loss = F.mse_loss(model(x), y)\n"
                                 "        losses.append(loss.item())")),
        ("zero-dim-tensor-is-a-float", "no_grad, but stores detached tensors instead of floats",
         _VALIDATION.format(body="    with torch.no_grad():\n"
                                 "        for x, y in batches:\n"
                                 "            loss = F.mse_loss(model(x), y)\n"
                                 "            losses.append(loss.detach())")),
        ("zero-dim-tensor-is-a-float", "no_grad, but still appends the loss tensor",
         _VALIDATION.format(body="    with torch.no_grad():\n"
                                 "        for x, y in batches:\n"
                                 "            losses.append(F.mse_loss(model(x), y))")),
        ("04/eval-mode-stops-recording",
         "uses model.eval() instead of torch.no_grad() (eval mode does not stop autograd)",
         _VALIDATION.format(body="    model.eval()\n"
                                 "    for x, y in batches:\n"
                                 "        losses.append(F.mse_loss(model(x), y).item())")),
    ],
    "ex5-graph-size-answer": [
        ("shared-node-counted-per-path", "counts paths, not distinct nodes (a shared node is counted twice)",
         "def graph_size(t):\n"
         "    if t.grad_fn is None:\n"
         "        return 0\n"
         "    count, stack = 0, [t.grad_fn]\n"
         "    while stack:\n"
         "        node = stack.pop()\n"
         "        count += 1\n"
         "        for child, _ in node.next_functions:\n"
         "            if child is not None:\n"
         "                stack.append(child)\n"
         "    return count\n"),
        ("recursion-handles-any-depth", "recursion: fails on a deep graph",
         "def graph_size(t):\n"
         "    seen = set()\n"
         "    def visit(node):\n"
         "        if node is None or node in seen:\n"
         "            return\n"
         "        seen.add(node)\n"
         "        for child, _ in node.next_functions:\n"
         "            visit(child)\n"
         "    visit(t.grad_fn)\n"
         "    return len(seen)\n"),
        ("leaves-have-no-node", "leaves out the AccumulateGrad nodes",
         "def graph_size(t):\n"
         "    if t.grad_fn is None:\n"
         "        return 0\n"
         "    seen, stack = {t.grad_fn}, [t.grad_fn]\n"
         "    while stack:\n"
         "        for child, _ in stack.pop().next_functions:\n"
         "            if child is not None and child not in seen and "
         "type(child).__name__ != 'AccumulateGrad':\n"
         "                seen.add(child)\n"
         "                stack.append(child)\n"
         "    return len(seen)\n"),
    ],
    "ex6-find-unused-answer": [
        ("zero-gradient-is-no-gradient",
         "believes a branch multiplied by zero is unused", _needs(zero_times=True)),
        ("frozen-params-need-find-unused",
         "believes frozen parameters need find_unused_parameters", _needs(frozen_extra=True)),
        ("04/detach-keeps-gradient",
         "believes a detached branch still gets gradients", _needs(detached_branch=False)),
        ("04/no-grad-result-rejoins-graph",
         "believes a parameter read under no_grad gets a gradient", _needs(no_grad_scale=False)),
    ],
}
