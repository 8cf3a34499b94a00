"""Wrong answers for 08-autograd-function-and-compilers (see __init__.py for the format)."""

_RELU_HEAD = (
    "class ReLUFn(torch.autograd.Function):\n"
    "    @staticmethod\n"
    "    def forward(ctx, input):\n"
    "        ctx.save_for_backward(input)\n"
    "        return input.clamp(min=0)\n\n"
    "    @staticmethod\n"
    "    def backward(ctx, grad_output):\n"
    "        input, = ctx.saved_tensors\n"
)

_LEAKY_HEAD = "class LeakyReLUFn(torch.autograd.Function):\n    @staticmethod\n"

_LINEAR_FORWARD = (
    "class LinearFn(torch.autograd.Function):\n"
    "    @staticmethod\n"
    "    def forward(ctx, x, w, b):\n"
    "        ctx.save_for_backward(x, w)\n"
    "        return x @ w.T + b\n\n"
    "    @staticmethod\n"
    "    def backward(ctx, grad_out):\n"
    "        x, w = ctx.saved_tensors\n"
)

_SAVED_HEAD = "def saved_for_backward(fn, *args):\n"

_ACCEPTS_RIGHT = {
    "scale_by_sign": (True, False, False),
    "count_doublings": (True, False, False),
    "remember_size": (False, True, True),
    "stamp": (False, False, True),
    "show": (True, False, True),
    "trim": (True, True, True),
}


def _accepts(changes: dict) -> str:
    table = {f"{fn}/{tool}": v for fn, vs in _ACCEPTS_RIGHT.items()
             for tool, v in zip(("script", "compile", "export"), vs)}
    table.update(changes)
    body = "".join(f"    {k!r}: {v},\n" for k, v in table.items())
    return f"predicted_accepts = {{\n{body}}}\n"


_CLIP_CLASS = (
    "class ExportableClipNorm(nn.Module):\n"
    "    def __init__(self, max_norm=1.0):\n"
    "        super().__init__()\n"
    "        self.max_norm = max_norm\n\n"
    "    def forward(self, x):\n"
)

_CLIP_COND = (
    "        max_norm = self.max_norm\n"
    "        norm = x.norm()\n"
    "        return torch.cond(norm > max_norm, lambda x, n: x * (max_norm / n),\n"
    "                          lambda x, n: x.clone(), (x, norm))\n\n\n"
)

_CLIP_EXPORT_DYNAMIC = (
    "def export_clip_norm(max_norm, example):\n"
    "    return torch.export.export(ExportableClipNorm(max_norm), (example,),\n"
    "                               dynamic_shapes={'x': {0: torch.export.Dim('batch')}})\n"
)

WRONG = {
    "ex1-relu-fn-answer": [
        ("grad-at-zero-is-one",
         "the article's backward: zeroes only input < 0, so the gradient at 0 is 1",
         _RELU_HEAD +
         "        grad_input = grad_output.clone()\n"
         "        grad_input[input < 0] = 0\n"
         "        return grad_input\n"),
        ("grad-output-is-yours",
         "masks grad_output in place instead of a copy",
         _RELU_HEAD +
         "        grad_output[input <= 0] = 0\n"
         "        return grad_output\n"),
        ("output-mask-is-input-mask",
         "saves the output and masks output < 0, which never happens",
         "class ReLUFn(torch.autograd.Function):\n"
         "    @staticmethod\n"
         "    def forward(ctx, input):\n"
         "        out = input.clamp(min=0)\n"
         "        ctx.save_for_backward(out)\n"
         "        return out\n\n"
         "    @staticmethod\n"
         "    def backward(ctx, grad_output):\n"
         "        out, = ctx.saved_tensors\n"
         "        return grad_output * (out >= 0)\n"),
        ("float32-gradient-is-enough",
         "computes the gradient in float32 whatever the input's dtype: a float64 gradient rounded "
         "through float32",
         _RELU_HEAD +
         "        return (grad_output.float() * (input > 0).float()).to(grad_output.dtype)\n"),
        ("autograd-does-the-backward",
         "calls torch.relu through a helper and lets autograd differentiate it in backward",
         "def positive_part(t):\n"
         "    return torch.relu(t)\n\n\n"
         "class ReLUFn(torch.autograd.Function):\n"
         "    @staticmethod\n"
         "    def forward(ctx, input):\n"
         "        ctx.save_for_backward(input)\n"
         "        return positive_part(input)\n\n"
         "    @staticmethod\n"
         "    def backward(ctx, grad_output):\n"
         "        input, = ctx.saved_tensors\n"
         "        with torch.enable_grad():\n"
         "            x = input.detach().requires_grad_()\n"
         "            return torch.autograd.grad(positive_part(x), x, grad_output)[0]\n"),
    ],
    "ex2-leaky-relu-answer": [
        ("grad-at-zero-is-one",
         "uses x >= 0: at exactly 0 the gradient is 1 instead of the slope",
         _LEAKY_HEAD +
         "    def forward(ctx, x, negative_slope):\n"
         "        ctx.save_for_backward(x)\n"
         "        ctx.slope = negative_slope\n"
         "        return torch.where(x >= 0, x, x * negative_slope)\n\n"
         "    @staticmethod\n"
         "    def backward(ctx, grad_output):\n"
         "        x, = ctx.saved_tensors\n"
         "        return torch.where(x >= 0, grad_output, grad_output * ctx.slope), None\n"),
        ("local-derivative-is-the-gradient",
         "returns the local derivative, forgetting to multiply by grad_output",
         _LEAKY_HEAD +
         "    def forward(ctx, x, negative_slope):\n"
         "        ctx.save_for_backward(x)\n"
         "        ctx.slope = negative_slope\n"
         "        return torch.where(x > 0, x, x * negative_slope)\n\n"
         "    @staticmethod\n"
         "    def backward(ctx, grad_output):\n"
         "        x, = ctx.saved_tensors\n"
         "        return torch.where(x > 0, torch.ones_like(x), torch.full_like(x, ctx.slope)), None\n"),
        ("forward-may-modify-input",
         "scales the input in place in forward",
         _LEAKY_HEAD +
         "    def forward(ctx, x, negative_slope):\n"
         "        ctx.slope = negative_slope\n"
         "        positive = x > 0\n"
         "        ctx.save_for_backward(positive)\n"
         "        x[~positive] *= negative_slope\n"
         "        return x.clone()\n\n"
         "    @staticmethod\n"
         "    def backward(ctx, grad_output):\n"
         "        positive, = ctx.saved_tensors\n"
         "        return torch.where(positive, grad_output, grad_output * ctx.slope), None\n"),
        ("one-gradient-per-tensor-input",
         "returns one gradient for two forward inputs",
         _LEAKY_HEAD +
         "    def forward(ctx, x, negative_slope):\n"
         "        ctx.save_for_backward(x)\n"
         "        ctx.slope = negative_slope\n"
         "        return torch.where(x > 0, x, x * negative_slope)\n\n"
         "    @staticmethod\n"
         "    def backward(ctx, grad_output):\n"
         "        x, = ctx.saved_tensors\n"
         "        return torch.where(x > 0, grad_output, grad_output * ctx.slope)\n"),
        ("tensor-of-float-takes-input-dtype",
         "builds the local derivative as float32 scalars (torch.tensor(slope)): a float64 input gets a "
         "gradient rounded through float32",
         _LEAKY_HEAD +
         "    def forward(ctx, x, negative_slope):\n"
         "        ctx.save_for_backward(x)\n"
         "        ctx.slope = negative_slope\n"
         "        return torch.where(x > 0, x, x * negative_slope)\n\n"
         "    @staticmethod\n"
         "    def backward(ctx, grad_output):\n"
         "        x, = ctx.saved_tensors\n"
         "        local = torch.where(x > 0, torch.tensor(1.0), torch.tensor(ctx.slope))\n"
         "        return grad_output * local, None\n"),
        ("autograd-does-the-backward",
         "calls F.leaky_relu through a helper and lets autograd differentiate it in backward",
         "def leaky(t, slope):\n"
         "    return F.leaky_relu(t, slope)\n\n\n"
         + _LEAKY_HEAD +
         "    def forward(ctx, x, negative_slope):\n"
         "        ctx.save_for_backward(x)\n"
         "        ctx.slope = negative_slope\n"
         "        return leaky(x, negative_slope)\n\n"
         "    @staticmethod\n"
         "    def backward(ctx, grad_output):\n"
         "        x, = ctx.saved_tensors\n"
         "        with torch.enable_grad():\n"
         "            t = x.detach().requires_grad_()\n"
         "            return torch.autograd.grad(leaky(t, ctx.slope), t, grad_output)[0], None\n"),
    ],
    "ex3-linear-fn-answer": [
        ("returns-every-gradient",
         "ignores needs_input_grad: computes and returns every gradient",
         _LINEAR_FORWARD +
         "        return grad_out @ w, grad_out.T @ x, grad_out.sum(0)\n"),
        ("computes-unneeded-gradients",
         "computes every gradient, then returns None for the unneeded ones",
         _LINEAR_FORWARD +
         "        grads = (grad_out @ w, grad_out.T @ x, grad_out.sum(0))\n"
         "        return tuple(g if need else None for g, need in zip(grads, ctx.needs_input_grad))\n"),
        ("bias-grad-is-mean",
         "bias gradient is the mean over the batch, not the sum",
         _LINEAR_FORWARD +
         "        need_x, need_w, need_b = ctx.needs_input_grad\n"
         "        return (grad_out @ w if need_x else None, grad_out.T @ x if need_w else None,\n"
         "                grad_out.mean(0) if need_b else None)\n"),
        ("weight-grad-transposed",
         "weight gradient transposed: x.T @ grad_out has shape (in, out)",
         _LINEAR_FORWARD +
         "        need_x, need_w, need_b = ctx.needs_input_grad\n"
         "        return (grad_out @ w if need_x else None, x.T @ grad_out if need_w else None,\n"
         "                grad_out.sum(0) if need_b else None)\n"),
        ("computes-unneeded-gradients",
         "computes w's and b's gradients in one matmul with a column of ones (the bias trick), "
         "whichever of them is needed",
         _LINEAR_FORWARD +
         "        need_x, need_w, need_b = ctx.needs_input_grad\n"
         "        ones = torch.ones(x.shape[0], 1, dtype=x.dtype)\n"
         "        grad_wb = grad_out.T @ torch.cat([x, ones], dim=1)\n"
         "        return (grad_out @ w if need_x else None, grad_wb[:, :-1] if need_w else None,\n"
         "                grad_wb[:, -1] if need_b else None)\n"),
        ("computes-unneeded-gradients",
         "computes every gradient transposed, and transposes back only the needed ones",
         _LINEAR_FORWARD +
         "        need_x, need_w, need_b = ctx.needs_input_grad\n"
         "        grad_x_t, grad_w_t = w.T @ grad_out.T, x.T @ grad_out\n"
         "        grad_b_row = grad_out.sum(0, keepdim=True)\n"
         "        return (grad_x_t.T if need_x else None, grad_w_t.T if need_w else None,\n"
         "                grad_b_row[0] if need_b else None)\n"),
    ],
    "ex4-saved-bytes-answer": [
        ("saves-inputs-requiring-grad",
         "assumes autograd saves exactly the inputs that require grad",
         _SAVED_HEAD +
         "    fn(*args)\n"
         "    kept = [a for a in args if isinstance(a, torch.Tensor) and a.requires_grad]\n"
         "    return len(kept), sum(a.numel() * a.element_size() for a in kept)\n"),
        ("measured-under-no-grad",
         "measures under torch.no_grad(), where nothing is saved",
         _SAVED_HEAD +
         "    sizes = []\n\n"
         "    def pack(t):\n"
         "        sizes.append(t.numel() * t.element_size())\n"
         "        return t\n\n"
         "    with torch.no_grad(), torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):\n"
         "        fn(*args)\n"
         "    return len(sizes), sum(sizes)\n"),
        ("saved-bytes-are-storage",
         "counts the bytes of each saved tensor's whole storage, not of the tensor",
         _SAVED_HEAD +
         "    sizes = []\n\n"
         "    def pack(t):\n"
         "        sizes.append(t.untyped_storage().nbytes())\n"
         "        return t\n\n"
         "    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):\n"
         "        fn(*args)\n"
         "    return len(sizes), sum(sizes)\n"),
        ("saved-twice-counts-once",
         "counts each tensor once, even when it is saved twice",
         _SAVED_HEAD +
         "    seen = {}\n\n"
         "    def pack(t):\n"
         "        seen[(t.data_ptr(), t.shape, t.stride())] = t.numel() * t.element_size()\n"
         "        return t\n\n"
         "    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):\n"
         "        fn(*args)\n"
         "    return len(seen), sum(seen.values())\n"),
    ],
    "ex5-who-accepts-answer": [
        ("script-refuses-loops",
         "believes the article: TorchScript cannot compile a while loop",
         _accepts({"count_doublings/script": False})),
        ("fullgraph-refuses-side-effects",
         "thinks fullgraph compile refuses every Python side effect, list appends included",
         _accepts({"remember_size/compile": False})),
        ("export-refuses-python-calls",
         "thinks export refuses time.time() (non-strict export bakes it in as a constant)",
         _accepts({"stamp/export": False})),
        ("compile-captures-data-branch",
         "thinks compile handles a branch on a tensor value in one graph",
         _accepts({"scale_by_sign/compile": True})),
    ],
    "ex6-export-clip-answer": [
        ("export-takes-data-branch",
         "keeps the Python if on the data: export refuses it",
         _CLIP_CLASS +
         "        norm = x.norm()\n"
         "        if norm > self.max_norm:\n"
         "            return x * (self.max_norm / norm)\n"
         "        return x\n\n\n" + _CLIP_EXPORT_DYNAMIC),
        ("exported-batch-is-free",
         "torch.cond, but no dynamic batch: the program accepts only the example's batch size",
         _CLIP_CLASS + _CLIP_COND +
         "def export_clip_norm(max_norm, example):\n"
         "    return torch.export.export(ExportableClipNorm(max_norm), (example,))\n"),
        ("cond-branches-swapped",
         "torch.cond with the branches swapped",
         _CLIP_CLASS +
         "        max_norm = self.max_norm\n"
         "        norm = x.norm()\n"
         "        return torch.cond(norm > max_norm, lambda x, n: x.clone(),\n"
         "                          lambda x, n: x * (max_norm / n), (x, norm))\n\n\n"
         + _CLIP_EXPORT_DYNAMIC),
        ("clip-norm-is-clamp",
         "clamps every entry to max_norm instead of scaling by the norm",
         _CLIP_CLASS +
         "        return x.clamp(-self.max_norm, self.max_norm)\n\n\n" + _CLIP_EXPORT_DYNAMIC),
        ("cond-branch-may-return-operand",
         "torch.cond whose keep branch returns its operand itself (torch.cond refuses the aliasing)",
         _CLIP_CLASS +
         "        max_norm = self.max_norm\n"
         "        norm = x.norm()\n"
         "        return torch.cond(norm > max_norm, lambda x, n: x * (max_norm / n),\n"
         "                          lambda x, n: x, (x, norm))\n\n\n"
         + _CLIP_EXPORT_DYNAMIC),
    ],
}
