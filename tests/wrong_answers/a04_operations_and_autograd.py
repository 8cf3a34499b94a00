"""Wrong answers for 04-operations-and-autograd (see __init__.py for the format)."""

_GRAPH_RIGHT = {
    "w * 2": "(True, False, 'MulBackward0')",
    "c * 2": "(False, True, None)",
    "w + c": "(True, False, 'AddBackward0')",
    "w.sum()": "(True, False, 'SumBackward0')",
    "w.detach()": "(False, True, None)",
    "w.clone()": "(True, False, 'CloneBackward0')",
    "c.clone()": "(False, True, None)",
    "w.detach().requires_grad_()": "(True, True, None)",
    "w.argmax()": "(False, True, None)",
    "w.float()": "(True, True, None)",
    "w.double()": "(True, False, 'ToCopyBackward0')",
}

_MODES_RIGHT = {
    "thread_started_inside_no_grad": "True",
    "thread_computes_inside_no_grad": "True",
    "main_after_thread_turns_it_off": "True",
    "leaf_flag_inside_no_grad": "True",
    "result_used_after_no_grad": "False",
    "after_set_grad_enabled_block": "True",
}


def _table(name: str, right: dict, changes: dict) -> str:
    table = dict(right)
    table.update(changes)
    body = "".join(f"    {k!r}: {v},\n" for k, v in table.items())
    return f"{name} = {{\n{body}}}\n"


_BROADCAST_HEAD = "def broadcast_shape(a, b):\n"

_LAYER_HEAD = "def layer_loss(x, w, b):\n"

_STEP_HEAD = "import torch.nn.functional as F\n\n\ndef train_head_step(backbone, head, x, target, lr):\n"

WRONG = {
    "ex1-broadcast-shape-answer": [
        ("broadcast-aligns-left", "aligns the shapes from the left instead of the right",
         _BROADCAST_HEAD +
         "    rank = max(len(a), len(b))\n"
         "    a = tuple(a) + (1,) * (rank - len(a))\n"
         "    b = tuple(b) + (1,) * (rank - len(b))\n"
         "    out = []\n"
         "    for p, q in zip(a, b):\n"
         "        if p == q or q == 1:\n            out.append(p)\n"
         "        elif p == 1:\n            out.append(q)\n"
         "        else:\n            raise ValueError(f'{p} vs {q}')\n"
         "    return tuple(out)\n"),
        ("broadcast-takes-max", "takes the max in every dim: never raises, and 1 with 0 gives 1",
         _BROADCAST_HEAD +
         "    rank = max(len(a), len(b))\n"
         "    a = (1,) * (rank - len(a)) + tuple(a)\n"
         "    b = (1,) * (rank - len(b)) + tuple(b)\n"
         "    return tuple(max(p, q) for p, q in zip(a, b))\n"),
        ("broadcast-takes-max", "checks compatibility but stretches with max, so 1 with 0 gives 1",
         _BROADCAST_HEAD +
         "    rank = max(len(a), len(b))\n"
         "    a = (1,) * (rank - len(a)) + tuple(a)\n"
         "    b = (1,) * (rank - len(b)) + tuple(b)\n"
         "    out = []\n"
         "    for p, q in zip(a, b):\n"
         "        if p != q and 1 not in (p, q):\n            raise ValueError(f'{p} vs {q}')\n"
         "        out.append(max(p, q))\n"
         "    return tuple(out)\n"),
        ("shape-as-list", "returns a list",
         _BROADCAST_HEAD +
         "    rank = max(len(a), len(b))\n"
         "    a = (1,) * (rank - len(a)) + tuple(a)\n"
         "    b = (1,) * (rank - len(b)) + tuple(b)\n"
         "    out = []\n"
         "    for p, q in zip(a, b):\n"
         "        if p == q or q == 1:\n            out.append(p)\n"
         "        elif p == 1:\n            out.append(q)\n"
         "        else:\n            raise ValueError(f'{p} vs {q}')\n"
         "    return out\n"),
        ("error-names-no-sizes",
         "raises ValueError without naming the two sizes (the contract asks for them)",
         _BROADCAST_HEAD +
         "    rank = max(len(a), len(b))\n"
         "    a = (1,) * (rank - len(a)) + tuple(a)\n"
         "    b = (1,) * (rank - len(b)) + tuple(b)\n"
         "    out = []\n"
         "    for p, q in zip(a, b):\n"
         "        if p == q or q == 1:\n            out.append(p)\n"
         "        elif p == 1:\n            out.append(q)\n"
         "        else:\n            raise ValueError('the shapes cannot broadcast')\n"
         "    return tuple(out)\n"),
    ],
    "ex2-add-cost-answer": [
        ("result-dtype-of-first-operand", "result bytes use the first operand's dtype (no type promotion)",
         "import math\n\n\ndef add_cost(a, b):\n"
         "    operands = a.numel() * a.element_size() + b.numel() * b.element_size()\n"
         "    shape = torch.broadcast_shapes(a.shape, b.shape)\n"
         "    return operands, math.prod(shape) * a.element_size()\n"),
        ("result-size-of-larger-operand", "result size taken as the larger operand, not the broadcast shape",
         "def add_cost(a, b):\n"
         "    operands = a.numel() * a.element_size() + b.numel() * b.element_size()\n"
         "    numel = max(a.numel(), b.numel())\n"
         "    return operands, numel * torch.result_type(a, b).itemsize\n"),
        ("zero-dim-promotes", "promote_types ignores the 0-d rule (float16 + 0-d float64 stays float16)",
         "import math\n\n\ndef add_cost(a, b):\n"
         "    operands = a.numel() * a.element_size() + b.numel() * b.element_size()\n"
         "    shape = torch.broadcast_shapes(a.shape, b.shape)\n"
         "    return operands, math.prod(shape) * torch.promote_types(a.dtype, b.dtype).itemsize\n"),
    ],
    "ex3-layer-loss-answer": [
        ("inplace-on-saved-tensor", "keeps h += b on tanh's saved output: backward raises",
         _LAYER_HEAD +
         "    h = torch.tanh(x @ w)\n    h += b\n    h.relu_()\n    return (h ** 2).mean()\n"),
        ("detach-keeps-gradient", "detaches before the in-place add: no gradient reaches w and x",
         _LAYER_HEAD +
         "    h = torch.tanh(x @ w).detach()\n    h += b\n    h = h.relu()\n    return (h ** 2).mean()\n"),
        ("no-grad-hides-inplace",
         "hides the in-place add under no_grad: still modifies the saved tensor, b gets no gradient",
         _LAYER_HEAD +
         "    h = torch.tanh(x @ w)\n    with torch.no_grad():\n        h += b\n"
         "    return (h.relu() ** 2).mean()\n"),
        ("bias-inside-tanh", "moves the bias inside the tanh: a different function",
         _LAYER_HEAD +
         "    z = x @ w\n    z += b\n    h = torch.tanh(z)\n    return (h.relu() ** 2).mean()\n"),
        ("float32-detour-harmless",
         "adds the bias in float32 (b.float()): a float64 loss with float32 rounding",
         _LAYER_HEAD +
         "    h = torch.tanh(x @ w)\n    h = h + b.float()\n    return (h.relu() ** 2).mean()\n"),
    ],
    "ex4-graph-flags-answer": [
        ("same-dtype-conversion-copies", "thinks w.float() makes a new recorded tensor",
         _table("predicted_graph", _GRAPH_RIGHT, {"w.float()": "(True, False, 'ToCopyBackward0')"})),
        ("clone-leaves-graph", "thinks clone() leaves the graph like detach()",
         _table("predicted_graph", _GRAPH_RIGHT, {"w.clone()": "(False, True, None)"})),
        ("requires-grad-makes-non-leaf", "thinks detach().requires_grad_() is a non-leaf",
         _table("predicted_graph", _GRAPH_RIGHT, {"w.detach().requires_grad_()": "(True, False, None)"})),
        ("integer-results-require-grad", "thinks argmax keeps the graph",
         _table("predicted_graph", _GRAPH_RIGHT, {"w.argmax()": "(True, False, 'ArgmaxBackward0')"})),
    ],
    "ex5-train-head-answer": [
        ("frozen-by-not-updating", "forgets no_grad: backward runs through the backbone and fills its .grad",
         _STEP_HEAD +
         "    features = backbone(x)\n"
         "    loss = F.mse_loss(head(features), target)\n"
         "    for p in head.parameters():\n        p.grad = None\n"
         "    loss.backward()\n"
         "    with torch.no_grad():\n        for p in head.parameters():\n            p.sub_(lr * p.grad)\n"
         "    return loss\n"),
        ("detach-after-backbone",
         "detaches the features: right gradients, but the graph through the backbone was built",
         _STEP_HEAD +
         "    features = backbone(x).detach()\n"
         "    loss = F.mse_loss(head(features), target)\n"
         "    for p in head.parameters():\n        p.grad = None\n"
         "    loss.backward()\n"
         "    with torch.no_grad():\n        for p in head.parameters():\n            p.sub_(lr * p.grad)\n"
         "    return loss\n"),
        ("backward-overwrites-grad", "does not clear old gradients: they accumulate",
         _STEP_HEAD +
         "    with torch.no_grad():\n        features = backbone(x)\n"
         "    loss = F.mse_loss(head(features), target)\n"
         "    loss.backward()\n"
         "    with torch.no_grad():\n        for p in head.parameters():\n            p.sub_(lr * p.grad)\n"
         "    return loss\n"),
        ("inplace-update-of-leaf", "updates the parameters in place without no_grad: leaf in-place error",
         _STEP_HEAD +
         "    with torch.no_grad():\n        features = backbone(x)\n"
         "    loss = F.mse_loss(head(features), target)\n"
         "    for p in head.parameters():\n        p.grad = None\n"
         "    loss.backward()\n"
         "    for p in head.parameters():\n        p.sub_(lr * p.grad)\n"
         "    return loss\n"),
        ("rebinding-updates-parameter", "rebinds p instead of updating the parameter",
         _STEP_HEAD +
         "    with torch.no_grad():\n        features = backbone(x)\n"
         "    loss = F.mse_loss(head(features), target)\n"
         "    for p in head.parameters():\n        p.grad = None\n"
         "    loss.backward()\n"
         "    for p in head.parameters():\n        p = p - lr * p.grad\n"
         "    return loss\n"),
        ("flags-off-inside-step", "freezes the backbone for good with requires_grad_(False)",
         _STEP_HEAD +
         "    backbone.requires_grad_(False)\n"
         "    features = backbone(x)\n"
         "    loss = F.mse_loss(head(features), target)\n"
         "    for p in head.parameters():\n        p.grad = None\n"
         "    loss.backward()\n"
         "    with torch.no_grad():\n        for p in head.parameters():\n            p.sub_(lr * p.grad)\n"
         "    return loss\n"),
    ],
    "ex6-grad-mode-answer": [
        ("threads-inherit-grad-mode", "thinks a thread inherits no_grad from the thread that starts it",
         _table("predicted_modes", _MODES_RIGHT, {"thread_started_inside_no_grad": "False",
                                                  "thread_computes_inside_no_grad": "False"})),
        ("set-grad-enabled-is-global", "thinks set_grad_enabled(False) in a thread is global",
         _table("predicted_modes", _MODES_RIGHT, {"main_after_thread_turns_it_off": "False"})),
        ("no-grad-result-rejoins-graph",
         "thinks a no_grad result requires grad again once grad mode is back on",
         _table("predicted_modes", _MODES_RIGHT, {"result_used_after_no_grad": "True"})),
        ("no-grad-clears-requires-grad", "thinks no_grad switches off requires_grad on existing tensors",
         _table("predicted_modes", _MODES_RIGHT, {"leaf_flag_inside_no_grad": "False"})),
    ],
}
