"""Misconceptions of notebook 06-troubleshooting (see __init__.py for the contract)."""

from . import Misconception

NOTEBOOK = "06-troubleshooting"

_FIND = "4. `isfinite` checks and hooks: find the first bad value"
_HOOKS = "Gradient hooks on parameters"
_ALLOCATOR = "A model of the caching allocator"
_LEAK = "7. The classic leak: keeping `loss` instead of `loss.item()`"
_EX5 = "Exercise 5 (measure, 3 points): how big is the graph a tensor keeps alive?"
_DDP = "8. Distributed training: DDP and unused parameters"

MISCONCEPTIONS: tuple[Misconception, ...] = (
    # Exercise 1: first_nonfinite (and Exercise 2's watch_gradients)
    Misconception("isnan-catches-inf",
                  "`torch.isnan` catches infinities too, so it finds every non-finite value", _FIND),
    Misconception("nonfinite-means-all-bad",
                  "a tensor is non-finite only when all its values are NaN or inf, not when one "
                  "element is", _FIND),
    Misconception("blame-the-next-step",
                  "the culprit is the step whose input is non-finite, rather than the step whose "
                  "output is", _FIND),
    Misconception("runs-every-step",
                  "the steps after the first non-finite output may still run",
                  "Exercise 1 (implement, 4 points): which step went wrong first?"),
    Misconception("reduction-reveals-nonfinite",
                  "a tensor is all finite exactly when a reduction of it (its sum, its norm) is "
                  "finite", _FIND),
    # Exercise 2: watch_gradients
    Misconception("loop-closure-binds-early",
                  "a function defined in a loop keeps the loop variable's value from when it was "
                  "defined", _FIND),
    Misconception("zero-dim-tensor-is-a-float",
                  "a 0-d tensor (`loss`, `loss.detach()`, `grad.norm()`) is as good as a Python "
                  "float", _LEAK),
    Misconception("hook-return-ignored",
                  "what a gradient hook returns is ignored, so returning a cleaned gradient "
                  "changes nothing", _HOOKS),
    Misconception("frozen-params-get-grads",
                  "frozen parameters (`requires_grad=False`) take part in backward like the "
                  "others", _HOOKS),
    # Exercise 3: allocated and reserved
    Misconception("free-returns-to-gpu",
                  "freeing a tensor gives its memory back to the GPU, so reserved falls with "
                  "allocated", "5. GPU memory: the caching allocator"),
    Misconception("no-block-reuse",
                  "every allocation reserves a new segment: cached free blocks are not reused",
                  _ALLOCATOR),
    Misconception("empty-cache-releases-free-pieces",
                  "`empty_cache()` releases the free part of a segment that is still partly in use",
                  _ALLOCATOR),
    # Exercise 4: validation_losses (also 04/eval-mode-stops-recording)
    Misconception("no-backward-no-graph",
                  "a forward pass whose loss is never backpropagated records no graph, so "
                  "validation needs no `torch.no_grad()`", _LEAK),
    # Exercise 5: graph_size
    Misconception("shared-node-counted-per-path",
                  "a node reached along several paths counts once per path", _EX5),
    Misconception("recursion-handles-any-depth",
                  "a recursive walk handles a graph of any depth", _EX5),
    Misconception("leaves-have-no-node",
                  "the leaves' `AccumulateGrad` nodes are not part of the graph", _EX5),
    # Exercise 6: find_unused_parameters (also 04/detach-keeps-gradient and
    # 04/no-grad-result-rejoins-graph, taught in notebook 04)
    Misconception("zero-gradient-is-no-gradient",
                  "a branch multiplied by zero gets no gradient, so DDP sees it as unused", _DDP),
    Misconception("frozen-params-need-find-unused",
                  "frozen parameters (`requires_grad=False`) that get no gradient need "
                  "`find_unused_parameters=True`", _DDP),
)
