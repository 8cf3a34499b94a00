"""Wrong answers for 07-programmable-tensor-system (see __init__.py for the format)."""

_GRAD_FN_RIGHT = {
    "x @ w + b": "'AddBackward0'",
    "x @ w": "'MmBackward0'",
    "x.detach() @ w": "'MmBackward0'",
    "x.detach() @ c": "None",
    "x3 @ w": "'UnsafeViewBackward0'",
    "F.linear(x, w.T, b)": "'AddmmBackward0'",
    "(x @ w).relu().sum()": "'SumBackward0'",
}

_FLAGS_RIGHT = {
    "scripting_in_eager": "False",
    "compiling_in_script": "False",
    "compiling_in_compile": "True",
    "scripting_in_compile": "False",
    "compiling_after_graph_break": "True",
    "compiling_in_disabled_helper": "False",
    "compiling_in_fx_trace": "False",
}


def _table(name: str, right: dict, changes: dict) -> str:
    table = dict(right)
    table.update(changes)
    body = "".join(f"    {k!r}: {v},\n" for k, v in table.items())
    return f"{name} = {{\n{body}}}\n"


def _dispatch_mode(record: str, after: str = "    return names\n") -> str:
    return ("def aten_ops(fn, *args, **kwargs):\n"
            "    names = []\n\n"
            "    class _Record(TorchDispatchMode):\n"
            "        def __torch_dispatch__(self, func, types, args=(), kwargs=None):\n"
            f"            names.append({record})\n"
            "            return func(*args, **(kwargs or {}))\n\n"
            "    with _Record():\n"
            "        fn(*args, **kwargs)\n" + after)


_COUNTS_HEAD = "def node_counts(t):\n"


def _graph_ops(count: str, returns: str = "counts") -> str:
    return ("def graph_op_counts(fn, *args):\n"
            "    torch.compiler.reset()\n"
            "    counts = []\n\n"
            "    def backend(gm, example_inputs):\n"
            f"        counts.append({count})\n"
            "        return gm.forward\n\n"
            "    torch.compile(fn, backend=backend)(*args)\n"
            f"    return {returns}\n")


_SCALE_HEAD = "def scale_rows(x):\n"

WRONG = {
    "ex1-aten-ops-answer": [
        ("function-mode-sees-aten",
         "records Python-level calls with a function mode: 'matmul', not 'aten.mm.default'",
         "def aten_ops(fn, *args, **kwargs):\n"
         "    names = []\n\n"
         "    class _Record(TorchFunctionMode):\n"
         "        def __torch_function__(self, func, types, args=(), kwargs=None):\n"
         "            names.append(func.__name__)\n"
         "            return func(*args, **(kwargs or {}))\n\n"
         "    with _Record():\n"
         "        fn(*args, **kwargs)\n"
         "    return names\n"),
        ("ops-form-a-set",
         "drops repeats: each operator listed once",
         _dispatch_mode("str(func)", "    return list(dict.fromkeys(names))\n")),
        ("name-is-str",
         "uses func.name(): 'aten::mm' without the overload",
         _dispatch_mode("func.name()")),
        ("overload-packet-is-the-op",
         "uses the overload packet: 'aten.add' cannot tell add.Tensor from add_.Tensor",
         _dispatch_mode("str(func.overloadpacket)")),
        ("mode-entered-by-hand",
         "enters the mode by hand and never leaves it when fn raises",
         "def aten_ops(fn, *args, **kwargs):\n"
         "    names = []\n\n"
         "    class _Record(TorchDispatchMode):\n"
         "        def __torch_dispatch__(self, func, types, args=(), kwargs=None):\n"
         "            names.append(str(func))\n"
         "            return func(*args, **(kwargs or {}))\n\n"
         "    mode = _Record()\n"
         "    mode.__enter__()\n"
         "    fn(*args, **kwargs)\n"
         "    mode.__exit__(None, None, None)\n"
         "    return names\n"),
    ],
    "ex2-grad-fn-answer": [
        ("autograd-records-python-call",
         "thinks autograd records the Python call: MatmulBackward for a batch",
         _table("predicted_grad_fn", _GRAD_FN_RIGHT, {"x3 @ w": "'MatmulBackward0'"})),
        ("linear-is-mm-then-add",
         "thinks F.linear records a mm then an add",
         _table("predicted_grad_fn", _GRAD_FN_RIGHT, {"F.linear(x, w.T, b)": "'AddBackward0'"})),
        ("detached-operand-makes-constant",
         "thinks a detached operand makes the product a constant",
         _table("predicted_grad_fn", _GRAD_FN_RIGHT, {"x.detach() @ w": "None"})),
        ("batch-matmul-ends-in-mm",
         "thinks the batch matmul ends in the mm node",
         _table("predicted_grad_fn", _GRAD_FN_RIGHT, {"x3 @ w": "'MmBackward0'"})),
    ],
    "ex3-node-counts-answer": [
        ("node-per-path",
         "no set of visited nodes: a node reached along two paths is counted twice",
         _COUNTS_HEAD +
         "    counts = {}\n"
         "    stack = [] if t.grad_fn is None else [t.grad_fn]\n"
         "    while stack:\n"
         "        node = stack.pop()\n"
         "        name = type(node).__name__\n"
         "        counts[name] = counts.get(name, 0) + 1\n"
         "        stack.extend(n for n, _ in node.next_functions if n is not None)\n"
         "    return counts\n"),
        ("first-input-only",
         "follows only the first input of every node",
         _COUNTS_HEAD +
         "    counts = {}\n"
         "    node = t.grad_fn\n"
         "    while node is not None:\n"
         "        name = type(node).__name__\n"
         "        counts[name] = counts.get(name, 0) + 1\n"
         "        node = node.next_functions[0][0] if node.next_functions else None\n"
         "    return counts\n"),
        ("accumulategrad-not-a-node",
         "skips the AccumulateGrad leaves (counts only the *Backward nodes)",
         _COUNTS_HEAD +
         "    counts, seen = {}, set()\n"
         "    stack = [] if t.grad_fn is None else [t.grad_fn]\n"
         "    while stack:\n"
         "        node = stack.pop()\n"
         "        if node in seen:\n            continue\n"
         "        seen.add(node)\n"
         "        name = type(node).__name__\n"
         "        if name.endswith('Backward0') or name.endswith('Backward1'):\n"
         "            counts[name] = counts.get(name, 0) + 1\n"
         "        stack.extend(n for n, _ in node.next_functions if n is not None)\n"
         "    return counts\n"),
        ("one-node-per-class",
         "counts each class once, not each node",
         _COUNTS_HEAD +
         "    names, seen = set(), set()\n"
         "    stack = [] if t.grad_fn is None else [t.grad_fn]\n"
         "    while stack:\n"
         "        node = stack.pop()\n"
         "        if node in seen:\n            continue\n"
         "        seen.add(node)\n"
         "        names.add(type(node).__name__)\n"
         "        stack.extend(n for n, _ in node.next_functions if n is not None)\n"
         "    return {name: 1 for name in names}\n"),
        ("course-tools-walk-for-you",
         "lets the course's graph explorer do the walk",
         "from collections import Counter\n\n\n" + _COUNTS_HEAD +
         "    return dict(Counter(tc.viz.describe_graph(t).ops()))\n"),
        ("course-tools-walk-for-you",
         "lets the course's helper do the walk, imported under another name",
         "from collections import Counter\n\n"
         "from tensorcourse.viz import describe_graph as _dg\n\n\n" + _COUNTS_HEAD +
         "    return dict(Counter(_dg(t).ops()))\n"),
        ("course-tools-walk-for-you",
         "reads the counts off the graph explorer widget's report",
         "from collections import Counter\n\n\n" + _COUNTS_HEAD +
         "    return dict(Counter(tc.viz.graph_explorer(t).report.ops()))\n"),
    ],
    "ex4-graph-ops-answer": [
        ("fx-nodes-are-operations",
         "counts every node, placeholders and output included",
         _graph_ops("len(gm.graph.nodes)")),
        ("methods-are-call-function",
         "counts only call_function nodes: misses method calls like t.sin()",
         _graph_ops("sum(n.op == 'call_function' for n in gm.graph.nodes)")),
        ("one-graph-per-function",
         "returns only the first graph's count",
         _graph_ops("sum(n.op in ('call_function', 'call_method', 'call_module') for n in gm.graph.nodes)",
                    "counts[:1]")),
        ("explain-op-count-per-graph",
         "uses explain's op_count, which counts something else",
         "def graph_op_counts(fn, *args):\n"
         "    torch.compiler.reset()\n"
         "    return [torch._dynamo.explain(fn)(*args).op_count]\n"),
    ],
    "ex5-no-breaks-answer": [
        ("branch-on-data-compiles",
         "drops the print but keeps the Python if on tensor data: one graph break left",
         _SCALE_HEAD +
         "    peak = x.abs().amax(dim=1, keepdim=True)\n"
         "    if (peak == 0).any():\n"
         "        peak = torch.where(peak == 0, torch.ones_like(peak), peak)\n"
         "    return x / peak\n"),
        ("print-compiles",
         "removes the if but keeps the print: one graph break left",
         _SCALE_HEAD +
         "    peak = x.abs().amax(dim=1, keepdim=True)\n"
         "    print('scaling', tuple(x.shape))\n"
         "    peak = torch.where(peak == 0, torch.ones_like(peak), peak)\n"
         "    return x / peak\n"),
        ("floor-on-peak-harmless",
         "clamps the peak: rows of tiny values are no longer scaled by their own peak",
         _SCALE_HEAD +
         "    return x / x.abs().amax(dim=1, keepdim=True).clamp_min(1e-12)\n"),
        ("floor-on-peak-harmless",
         "clamps the peak at the dtype's smallest normal number: a subnormal row (1e-40) is divided by "
         "finfo.tiny and comes out near 0.0085 instead of 1",
         _SCALE_HEAD +
         "    peak = x.abs().amax(dim=1, keepdim=True)\n"
         "    return x / peak.clamp_min(torch.finfo(x.dtype).tiny)\n"),
        ("one-peak-for-all-rows",
         "divides by the largest value of the whole tensor",
         _SCALE_HEAD +
         "    peak = x.abs().amax()\n"
         "    return x / torch.where(peak == 0, torch.ones_like(peak), peak)\n"),
        ("item-avoids-break",
         "asks with .item() instead: still a graph break",
         _SCALE_HEAD +
         "    peak = x.abs().amax(dim=1, keepdim=True)\n"
         "    if peak.min().item() == 0:\n"
         "        peak = torch.where(peak == 0, torch.ones_like(peak), peak)\n"
         "    return x / peak\n"),
    ],
    "ex6-mode-flags-answer": [
        ("graph-break-ends-compiling",
         "thinks a graph break ends compilation for the rest of the function",
         _table("predicted_flags", _FLAGS_RIGHT, {"compiling_after_graph_break": "False"})),
        ("disabled-helper-still-traced",
         "thinks a disabled helper still runs under Dynamo when a compiled function calls it",
         _table("predicted_flags", _FLAGS_RIGHT, {"compiling_in_disabled_helper": "True"})),
        ("every-tracer-is-compiling",
         "thinks every tracer counts as compiling: fx.symbolic_trace and TorchScript too",
         _table("predicted_flags", _FLAGS_RIGHT, {"compiling_in_fx_trace": "True",
                                                  "compiling_in_script": "True"})),
        ("compile-is-scripting",
         "thinks torch.compile is a kind of scripting",
         _table("predicted_flags", _FLAGS_RIGHT, {"scripting_in_compile": "True"})),
    ],
}
