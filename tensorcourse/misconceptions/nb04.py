"""Misconceptions of notebook 04-operations-and-autograd (see __init__.py for the contract)."""

from . import Misconception

NOTEBOOK = "04-operations-and-autograd"

_BROADCAST = "1. Broadcasting: the rules, and who pays"
_EX1 = "Exercise 1 (implement, 3 points): the broadcasting rule, by hand"
_EX2 = "Exercise 2 (measure, 3 points): what does `a + b` cost in memory?"
_INPLACE_AUTOGRAD = "In-place and autograd: two errors, one safe case"
_EX3 = 'Exercise 3 (fix, 3 points): an in-place "optimisation" that breaks backward'
_LEAVES = "3. Who requires grad, and who is a leaf"
_DETACH = "4. `detach()` vs `clone()` (and why not `.data`)"
_FREEZE = "5. Freezing a backbone, training a head"
_GRAD_MODE = "6. Grad mode: `no_grad`, `set_grad_enabled`, and threads"

MISCONCEPTIONS: tuple[Misconception, ...] = (
    # Exercise 1: broadcast_shape
    Misconception("broadcast-aligns-left",
                  "shapes are lined up from the left, so `(2, 1)` with `(2,)` pairs the two 2s "
                  "and gives `(2, 1)`", _BROADCAST),
    Misconception("broadcast-takes-max",
                  "a broadcast dim takes the larger of the two sizes, so a 1 against a 0 gives 1",
                  _EX1),
    Misconception("shape-as-list", "a list of sizes is as good as a tuple for a shape", _EX1),
    Misconception("error-names-no-sizes",
                  "raising the right exception is enough, without saying which sizes clash", _EX1),
    # Exercise 2: add_cost
    Misconception("result-size-of-larger-operand",
                  "the result of `a + b` is no bigger than the larger operand, as if broadcasting "
                  "cost nothing", "The hidden cost is the result"),
    Misconception("result-dtype-of-first-operand",
                  "the result of `a + b` has `a`'s dtype, whatever `b`'s is", _EX2),
    Misconception("zero-dim-promotes",
                  "a 0-d tensor raises the result's dtype like any other operand, so float16 plus "
                  "a 0-d float64 is float64", _EX2),
    # Exercise 3: layer_loss
    Misconception("inplace-on-saved-tensor",
                  "an in-place operation is safe once the forward pass runs, even on a tensor that "
                  "an earlier operation saved for backward", _INPLACE_AUTOGRAD),
    Misconception("no-grad-hides-inplace",
                  "an in-place change made under `torch.no_grad()` is hidden from autograd, so it "
                  "cannot break backward", "The version counter"),
    Misconception("detach-keeps-gradient",
                  "`.detach()` only keeps autograd from complaining: gradients still flow back "
                  "through it", _DETACH),
    Misconception("bias-inside-tanh",
                  "adding the bias before the `tanh` instead of after it gives the same function",
                  _EX3),
    Misconception("float32-detour-harmless",
                  "a float32 copy of one operand costs no precision when the result is float64",
                  _EX3),
    # Exercise 4: requires_grad, is_leaf, grad_fn
    Misconception("same-dtype-conversion-copies",
                  "converting a tensor to the dtype it already has (`w.float()`) makes a new, "
                  "recorded tensor", _LEAVES),
    Misconception("clone-leaves-graph", "`clone()` leaves the graph, like `detach()`", _DETACH),
    Misconception("requires-grad-makes-non-leaf",
                  "a tensor that requires grad is a non-leaf, even one just detached and switched "
                  "on with `requires_grad_()`", _LEAVES),
    Misconception("integer-results-require-grad",
                  "every result of a tensor that requires grad requires grad, integer ones "
                  "(`argmax`) included", _LEAVES),
    # Exercise 5: train_head_step
    Misconception("frozen-by-not-updating",
                  "a backbone is frozen as long as the step does not update its parameters, even "
                  "if it runs with autograd recording", _FREEZE),
    Misconception("detach-after-backbone",
                  "detaching the backbone's output is as good as running it under "
                  "`torch.no_grad()`, though its graph was already recorded", _FREEZE),
    Misconception("backward-overwrites-grad",
                  "`backward()` writes a fresh gradient into `.grad`, so old gradients need no "
                  "clearing", _LEAVES),
    Misconception("inplace-update-of-leaf",
                  "a parameter can be updated in place with grad mode on, like any tensor",
                  _INPLACE_AUTOGRAD),
    Misconception("rebinding-updates-parameter",
                  "`p = p - lr * p.grad` in a loop over the parameters updates them",
                  "2. In-place vs out-of-place"),
    Misconception("flags-off-inside-step",
                  "switching the backbone's `requires_grad` off inside the step is harmless, "
                  "though the flags stay off for the caller", _FREEZE),
    # Exercise 6: grad mode
    Misconception("threads-inherit-grad-mode",
                  "a new thread inherits grad mode from the thread that starts it", _GRAD_MODE),
    Misconception("set-grad-enabled-is-global",
                  "`torch.set_grad_enabled(False)` in one thread switches recording off in every "
                  "thread", _GRAD_MODE),
    Misconception("no-grad-result-rejoins-graph",
                  "a result computed under `torch.no_grad()` joins the graph again once grad mode "
                  "is back on, so gradients reach what it was computed from", _GRAD_MODE),
    Misconception("no-grad-clears-requires-grad",
                  "`torch.no_grad()` switches `requires_grad` off on the tensors that exist",
                  _GRAD_MODE),
    # Named by notebook 06's validation loop (Exercise 4): taught by grad mode here.
    Misconception("eval-mode-stops-recording",
                  "`model.eval()` stops autograd from recording, like `torch.no_grad()`",
                  _GRAD_MODE),
)
