"""Misconceptions of notebook 07-programmable-tensor-system (see __init__.py for the contract)."""

from . import Misconception

NOTEBOOK = "07-programmable-tensor-system"

_DISPATCHER = "2. Layer 1: the dispatcher and its ATen operators"
_AUTOGRAD = "3. Layer 2: the autograd graph"
_COMPILER = "4. Layer 3: what a compiler sees"
_BREAKS = "Graph breaks"
_MODES = "5. Eager, TorchScript, Dynamo, export, FX: which mode is my code running in?"

MISCONCEPTIONS: tuple[Misconception, ...] = (
    # Exercise 1: aten_ops
    Misconception("function-mode-sees-aten",
                  "a `TorchFunctionMode` sees the ATen operators, so the names it records "
                  "(`matmul`, `add`) are what reaches the kernels", _DISPATCHER),
    Misconception("ops-form-a-set",
                  "the operators a call dispatches to form a set, so an operator that runs twice "
                  "is listed once",
                  "Exercise 1 (implement, 3 points): which ATen operators does this call dispatch to?"),
    Misconception("name-is-str",
                  "`func.name()` spells an ATen operator the way `str(func)` does "
                  "(`aten.mm.default`)", _DISPATCHER),
    Misconception("overload-packet-is-the-op",
                  "an operator's overload packet (`aten.add`) says which ATen operator ran, so its "
                  "overload (`.Tensor`, `.default`) can be left off", _DISPATCHER),
    Misconception("mode-entered-by-hand",
                  "a mode switched on with `__enter__()` and off with `__exit__()` after the call is "
                  "switched off even when the call raises, as a `with` block would be",
                  "Exercise 1 (implement, 3 points): which ATen operators does this call dispatch to?"),
    # Exercise 2: which node made it?
    Misconception("autograd-records-python-call",
                  "autograd records the Python call, so `x3 @ w` is made by a `MatmulBackward0` node",
                  _AUTOGRAD),
    Misconception("linear-is-mm-then-add",
                  "`F.linear(x, w.T, b)` runs an `mm` and then an `add`, so an `AddBackward0` node "
                  "makes its result", _DISPATCHER),
    Misconception("detached-operand-makes-constant",
                  "one detached operand makes a product a constant, with no `grad_fn`, although the "
                  "other operand requires grad", _AUTOGRAD),
    Misconception("batch-matmul-ends-in-mm",
                  "a batch of matrices times a matrix is one `mm`, so `MmBackward0` makes the "
                  "result of `x3 @ w`", _DISPATCHER),
    # Exercise 3: node_counts
    Misconception("node-per-path",
                  "a node reached along two paths counts twice, so a walk of the graph needs no set "
                  "of the nodes already seen", "The graph explorer"),
    Misconception("first-input-only",
                  "a node's first input leads back through the whole graph, so following "
                  "`next_functions[0]` visits every node", _AUTOGRAD),
    Misconception("accumulategrad-not-a-node",
                  "only the `*Backward` nodes belong to the graph, not the `AccumulateGrad` node "
                  "that ends it at each leaf", _AUTOGRAD),
    Misconception("one-node-per-class",
                  "a graph holds one node per class, so each class name counts once", _AUTOGRAD),
    Misconception("course-tools-walk-for-you",
                  "the course's graph tools (`tc.viz.describe_graph` and the explorers built on it) "
                  "may do the walk that the exercise asks you to write",
                  "Exercise 3 (implement, 3 points): count the nodes of a graph"),
    # Exercise 4: graph_op_counts
    Misconception("fx-nodes-are-operations",
                  "every node of an FX graph is an operation, its placeholders and its output "
                  "included", _COMPILER),
    Misconception("methods-are-call-function",
                  "Dynamo records every torch operation as a `call_function` node, method calls "
                  "such as `t.sin()` included",
                  "Exercise 4 (measure, 3 points): how many graphs, how many operations?"),
    Misconception("one-graph-per-function",
                  "`torch.compile` captures a function as one graph, so the first graph the backend "
                  "receives is the whole function", _BREAKS),
    Misconception("explain-op-count-per-graph",
                  "`torch._dynamo.explain`'s `op_count` is the number of operations in each "
                  "captured graph", _BREAKS),
    # Exercise 5: scale_rows without graph breaks
    Misconception("branch-on-data-compiles",
                  "a Python `if` on tensor data is captured in the graph once the `print` is gone",
                  _BREAKS),
    Misconception("print-compiles",
                  "a `print` in a compiled function is captured with the rest, without a graph "
                  "break", _BREAKS),
    Misconception("item-avoids-break",
                  "reading the tensor with `.item()` before the `if` turns it into plain Python, so "
                  "the graph does not break", _BREAKS),
    Misconception("floor-on-peak-harmless",
                  "putting a tiny floor under each row's peak (`clamp_min(1e-12)`, even "
                  "`finfo.tiny`) changes only the rows of zeros",
                  "Exercise 5 (fix, 3 points): a function that breaks the graph twice"),
    Misconception("one-peak-for-all-rows",
                  "dividing by the largest value of the whole tensor scales each row by its own peak",
                  "Exercise 5 (fix, 3 points): a function that breaks the graph twice"),
    # Exercise 6: which flag is True where?
    Misconception("graph-break-ends-compiling",
                  "a graph break ends compilation, so the rest of the function runs eagerly with "
                  "`is_compiling()` `False`", _BREAKS),
    Misconception("disabled-helper-still-traced",
                  "a helper marked `torch.compiler.disable` is still traced by Dynamo when a "
                  "compiled function calls it",
                  "Exercise 6 (predict, 3 points): which flag is `True` where?"),
    Misconception("every-tracer-is-compiling",
                  "every tracer counts as compiling, so `torch.compiler.is_compiling()` is `True` "
                  "under `torch.fx.symbolic_trace` and TorchScript too", _MODES),
    Misconception("compile-is-scripting",
                  "`torch.compile` is a kind of scripting, so `torch.jit.is_scripting()` is `True` "
                  "inside it", _MODES),
)
