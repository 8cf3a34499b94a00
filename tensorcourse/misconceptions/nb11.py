"""Misconceptions of notebook 11-leaks-gradients-compile-hangs (see __init__.py for the contract)."""

from . import Misconception

NOTEBOOK = "11-leaks-gradients-compile-hangs"

_CAUSE1 = "Cause 1: a tensor that keeps its graph"
_CAUSE2 = "Cause 2: a cache, hook or closure that keeps activations"
_CAUSE4 = "Cause 4: a small view of a big tensor"
_EX1 = "Exercise 1 (measure, 3 points): how much memory do these tensors keep alive?"
_EX2 = "Exercise 2 (fix, 4 points): a training loop that leaks three ways"
_GRADS = "2. Gradient diagnostics: vanishing and exploding gradients"
_EX3 = "Exercise 3 (implement, 4 points): per-layer gradient norms through hooks"
_EX4 = "Exercise 4 (implement, 3 points): vanishing, exploding or healthy?"
_BREAKS = "3. `torch.compile` failures: graph breaks, fullgraph, recompilations"
_EX5 = "Exercise 5 (predict, 3 points): how many graph breaks?"
_DYNAMIC = "Dynamic shapes: `dynamic=True` and `mark_dynamic`"
_EX6 = "Exercise 6 (fix, 3 points): one graph, same numbers"

MISCONCEPTIONS: tuple[Misconception, ...] = (
    # Exercise 1: pinned_bytes
    Misconception("shown-bytes-held",
                  "a tensor keeps alive only the bytes it shows (`t.nbytes`), not its whole storage",
                  _CAUSE4),
    Misconception("storage-counted-per-tensor",
                  "each tensor keeps its own memory, so a storage shared by several tensors counts once per "
                  "tensor", _CAUSE4),
    Misconception("data-ptr-identifies-storage",
                  "`t.data_ptr()` identifies a tensor's storage, so two views at different offsets are "
                  "different storages", _EX1),
    Misconception("base-holds-the-storage",
                  "a view keeps alive its `_base` tensor's bytes, and a tensor without a `_base` only the "
                  "bytes it shows", _CAUSE4),
    Misconception("unchecked-input-fails-anyway",
                  "a wrong input fails by itself, so there is no need to check that every item is a tensor",
                  _EX1),
    # Exercise 2: train_epoch (hooks also in exercise 3)
    Misconception("hook-ends-with-function",
                  "a hook registered inside a function goes away when the function returns", _CAUSE2),
    Misconception("remove-after-loop-always-runs",
                  "code after the loop still runs when a batch raises, so removing the hook there is enough",
                  _CAUSE2),
    Misconception("clearing-hooks-removes-only-mine",
                  "clearing a module's `_forward_hooks` removes only the hooks you added", _CAUSE2),
    Misconception("detached-scalar-is-a-float",
                  "a detached 0-d tensor such as `loss.detach()` is a Python number, as good as "
                  "`loss.item()`", _CAUSE1),
    Misconception("detached-activation-is-free",
                  "a detached activation holds no memory worth counting, so keeping it is no leak", _CAUSE2),
    Misconception("zero-grad-anywhere",
                  "`zero_grad()` can go anywhere in the step, after `backward()` as well as before it", _EX2),
    Misconception("mean-over-samples",
                  "the mean loss of an epoch weights each batch by its number of samples", _EX2),
    # Exercise 3: grad_norms
    Misconception("grad-holds-this-pass",
                  "after `backward()`, `p.grad` holds the gradient of that pass only", _GRADS),
    Misconception("closure-binds-each-name",
                  "a hook defined in a loop keeps the value the loop variable had in its own iteration",
                  _EX3),
    Misconception("norms-add-up", "a layer's gradient norm is the sum of its parameters' norms", _EX3),
    Misconception("no-gradient-is-zero", "a layer that no gradient reached has a gradient norm of 0.0", _EX3),
    Misconception("norm-per-parameter", "each parameter (`0.weight`, `0.bias`) is a layer of its own", _EX3),
    # Exercise 4: diagnose
    Misconception("ratio-by-division",
                  "dividing the first norm by the last is the same test as the multiplications", _EX4),
    Misconception("max-norm-not-needed",
                  "comparing the first and the last norms is enough: norms that are huge everywhere need no "
                  "check of their own", _EX4),
    Misconception("nan-compares-large", "a NaN norm is caught by `v > max_norm` like any huge value", _EX4),
    Misconception("output-side-first",
                  "per-layer gradient norms are listed from the output side, in the order backward reaches "
                  "them", _GRADS),
    Misconception("none-is-a-norm",
                  "every entry of the norms list is a number: `None` entries need no special handling", _EX4),
    Misconception("boundary-counts",
                  "a ratio of exactly `ratio` already counts as vanishing or exploding", _EX4),
    # Exercise 5: how many graph breaks
    Misconception("shape-branch-breaks",
                  "an `if` on a tensor's shape breaks the graph like an `if` on its values", _EX5),
    Misconception("python-loop-breaks", "a Python `for` loop breaks the graph at every iteration", _EX5),
    Misconception("prints-break-once",
                  "all the `print` calls of a function make one graph break together", _BREAKS),
    Misconception("item-is-traced", "`.item()` is traced into the graph like any tensor operation", _BREAKS),
    # Exercise 6: standardize_fixed
    Misconception("disable-removes-breaks",
                  "wrapping a function in `torch.compiler.disable` removes its graph breaks", _DYNAMIC),
    Misconception("tensor-if-is-traced",
                  "a Python `if` on a 0-d tensor, not on a Python number, stays in the graph", _BREAKS),
    Misconception("constant-std-is-safe",
                  "dividing by the standard deviation is safe for every input, constant ones included", _EX6),
    Misconception("biased-std-is-the-same",
                  "`x.std(unbiased=False)` gives the same standard deviation as `x.std()`", _EX6),
    Misconception("clamp-replaces-branch",
                  "clamping the std at 1e-6 does what the `if std < 1e-6` branch does", _EX6),
    Misconception("nan-to-num-replaces-branch",
                  "turning the NaN of a division by zero into 0 does what the `if std < 1e-6` branch does",
                  _EX6),
    Misconception("float32-is-enough",
                  "computing in float32 and converting back loses nothing for a float64 input", _EX6),
)
