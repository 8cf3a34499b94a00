"""Misconceptions of notebook 08-autograd-function-and-compilers (see __init__.py for the contract)."""

from . import Misconception

NOTEBOOK = "08-autograd-function-and-compilers"

_FUNCTION = "3. A custom `torch.autograd.Function`"
_GRADCHECK = "`gradcheck`: is the backward right?"
_CTX = "4. What `ctx` keeps: `save_for_backward` and `needs_input_grad`"
_COMPILE = "`torch.compile`: graph breaks, or an error with `fullgraph=True`"
_EXPORT = "`torch.export`: one graph or nothing"
_FIXES = "The fixes: `torch.cond` for branches, `torch.export.Dim` for sizes"

MISCONCEPTIONS: tuple[Misconception, ...] = (
    # Exercises 1 and 2: ReLUFn, LeakyReLUFn
    Misconception("grad-at-zero-is-one",
                  "at exactly 0 torch's gradient is the positive side's, 1, so `x >= 0` (or zeroing "
                  "only `input < 0`) is the right mask", _GRADCHECK),
    Misconception("grad-output-is-yours",
                  "`backward` may write into `grad_output`, since the gradient it receives is its own "
                  "to change", _GRADCHECK),
    Misconception("output-mask-is-input-mask",
                  "a mask on ReLU's saved output (`out >= 0`) keeps only the positive inputs, although "
                  "the clamped output is never negative", _FUNCTION),
    Misconception("float32-gradient-is-enough",
                  "a gradient computed in float32 and cast back is as exact as one computed in the "
                  "input's own dtype",
                  "Exercise 1 (fix, 2 points): a ReLU that agrees with `torch.relu`"),
    Misconception("autograd-does-the-backward",
                  "a custom `autograd.Function` may compute with the built-in (`torch.relu`, "
                  "`F.leaky_relu`) and let autograd differentiate it inside `backward`", _FUNCTION),
    Misconception("local-derivative-is-the-gradient",
                  "`backward` returns the function's local derivative, without multiplying it by "
                  "`grad_output`", _FUNCTION),
    Misconception("forward-may-modify-input",
                  "`forward` may change its input in place, since autograd does not record what "
                  "happens inside it", "5. `mark_dirty` and `mark_non_differentiable`"),
    Misconception("one-gradient-per-tensor-input",
                  "`backward` returns gradients for the tensor inputs only, so a Python number "
                  "argument such as `negative_slope` needs no `None`", _FUNCTION),
    Misconception("tensor-of-float-takes-input-dtype",
                  "`torch.tensor(slope)` takes the dtype of the tensors it meets, so a local "
                  "derivative built from it is as exact as a float64 input",
                  "Exercise 2 (implement, 3 points): leaky ReLU with a slope argument"),
    # Exercise 3: LinearFn
    Misconception("returns-every-gradient",
                  "`backward` may return a gradient for every input; autograd drops the ones nobody "
                  "needs", _CTX),
    Misconception("computes-unneeded-gradients",
                  "`backward` may compute a gradient nobody needs (alone, transposed or in one matmul "
                  "with another) as long as it returns `None` for it", _CTX),
    Misconception("bias-grad-is-mean",
                  "the bias gradient of a linear layer is the mean of `grad_out` over the batch, not "
                  "the sum",
                  "Exercise 3 (implement, 3 points): a linear layer that skips unneeded gradients"),
    Misconception("weight-grad-transposed",
                  "the weight gradient of `x @ w.T + b` is `x.T @ grad_out`, of shape (in, out), "
                  "although `w` has shape (out, in)",
                  "Exercise 3 (implement, 3 points): a linear layer that skips unneeded gradients"),
    # Exercise 4: saved_for_backward
    Misconception("saves-inputs-requiring-grad",
                  "autograd saves exactly the inputs that require grad, whatever the operations' "
                  "gradients need", _CTX),
    Misconception("measured-under-no-grad",
                  "measuring under `torch.no_grad()` leaves what autograd saves unchanged",
                  "Exercise 4 (measure, 3 points): how much does autograd keep?"),
    Misconception("saved-bytes-are-storage",
                  "a saved tensor's bytes are its whole storage's, so a saved column counts as the "
                  "whole matrix", "Exercise 4 (measure, 3 points): how much does autograd keep?"),
    Misconception("saved-twice-counts-once",
                  "a tensor saved twice (both operands of `x * x`) is one save", _CTX),
    # Exercise 5: who accepts what?
    Misconception("compile-captures-data-branch",
                  "`torch.compile(fullgraph=True)` captures a branch on a tensor's value in one graph",
                  _COMPILE),
    Misconception("script-refuses-loops",
                  "TorchScript cannot compile a `while` loop on tensor values", "TorchScript"),
    Misconception("fullgraph-refuses-side-effects",
                  "`fullgraph=True` refuses every Python side effect, an append to a list included",
                  _COMPILE),
    Misconception("export-refuses-python-calls",
                  "`torch.export` refuses a call into plain Python such as `time.time()`", _EXPORT),
    # Exercise 6: ExportableClipNorm
    Misconception("export-takes-data-branch",
                  "`torch.export` captures a Python `if` on the data, the way eager mode runs it",
                  _EXPORT),
    Misconception("exported-batch-is-free",
                  "an exported program accepts any batch size, as the module does, without declaring "
                  "it with `torch.export.Dim`", _FIXES),
    Misconception("cond-branches-swapped",
                  "`torch.cond(pred, a, b, operands)` runs `a` when `pred` is false", _FIXES),
    Misconception("clip-norm-is-clamp",
                  "clipping a tensor's norm to `max_norm` is clamping each entry to "
                  "`[-max_norm, max_norm]`", "Exercise 6 (fix, 3 points): make it exportable"),
    Misconception("cond-branch-may-return-operand",
                  "a `torch.cond` branch may return its operand itself, like the `return x` of the "
                  "`if` it replaces", _FIXES),
)
