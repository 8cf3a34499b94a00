"""Misconceptions of notebook 09-layout-devices-gradient-lifetime (see __init__.py for the contract)."""

from . import Misconception

NOTEBOOK = "09-layout-devices-gradient-lifetime"

_STRIDES = "1. The strides worked example"
_EX1 = "Exercise 1 (implement, 3 points): the strides of a fresh tensor"
_EX2 = "Exercise 2 (implement, 3 points): is this layout contiguous?"
_TO = "2. What `.to(device)` and `.to(dtype)` really do"
_SYNC = "3. Implicit synchronization"
_NON_BLOCKING = "`non_blocking`: when a copy does not wait"
_EX4 = "Exercise 4 (implement, 3 points): move a batch, asynchronously where it helps"
_EX5 = "Exercise 5 (measure, 3 points): log the loss without waiting every step"
_LIFETIME = "4. Gradient lifetime: `.detach()`, `.item()`, `torch.no_grad()`"
_EX6 = "Exercise 6 (fix, 3 points): an evaluation loop that holds on to everything"

MISCONCEPTIONS: tuple[Misconception, ...] = (
    # Exercise 1: contiguous_strides
    Misconception("zero-size-in-stride-product",
                  "a size-0 dim enters the stride product as 0, so every dim before it gets stride 0",
                  _EX1),
    Misconception("first-dim-stride-one",
                  "a fresh tensor is laid out column by column, so its first dim has stride 1",
                  _STRIDES),
    Misconception("stride-includes-own-size",
                  "a dim's stride is the product of its own size and the sizes after it", _STRIDES),
    Misconception("strides-are-a-list",
                  "strides are any sequence of ints, so a list is as good as the tuple torch returns",
                  _EX1),
    Misconception("strides-from-a-tensor",
                  "creating a tensor and reading its `.stride()` is as good as computing the strides "
                  "from the shape", _EX1),
    # Exercise 2: is_contiguous_layout
    Misconception("size-one-stride-matters",
                  "a contiguous tensor has exactly a fresh tensor's strides, a size-1 dim's stride "
                  "included", _EX2),
    Misconception("empty-needs-strides",
                  "a tensor with no elements is contiguous only when its strides are row-major", _EX2),
    Misconception("decreasing-strides-enough",
                  "strides that decrease and end in 1 make a tensor contiguous, gaps between rows or "
                  "not", _EX2),
    Misconception("contiguity-from-a-tensor",
                  "building a tensor with the strides and asking `.is_contiguous()` is as good as "
                  "working it out from the numbers", _EX2),
    # Exercise 3: .to(), same tensor or copy
    Misconception("to-always-copies",
                  "`.to()` always makes a copy, even when neither the device nor the dtype changes",
                  _TO),
    Misconception("copy-leaves-graph",
                  "a copy made by `.to()` has left the graph: it has no `grad_fn`", _TO),
    Misconception("detach-copies-keeps-node",
                  "`detach()` copies the tensor and keeps pointing at the original node", _LIFETIME),
    Misconception("round-trip-gives-back",
                  "converting to float64 and back to float32 gives back the original tensor, `h` "
                  "itself", _TO),
    Misconception("contiguous-always-copies",
                  "`.contiguous()` always copies, even a tensor that is already contiguous",
                  "When does `contiguous()` copy?"),
    # Exercise 4: to_device
    Misconception("non-blocking-always-helps",
                  "`non_blocking=True` helps every copy, whether the tensor is pinned or not, and "
                  "whatever the target", _NON_BLOCKING),
    Misconception("non-blocking-never-matters",
                  "a plain `.to(device)` is as good as `non_blocking=True`, even from pinned memory",
                  _NON_BLOCKING),
    Misconception("non-blocking-for-any-cuda-copy",
                  "`non_blocking=True` makes every copy to the GPU asynchronous, from pinned memory or "
                  "not", _NON_BLOCKING),
    Misconception("tuple-becomes-list",
                  "a tuple and a list are the same kind of container, so a tuple may come back as a "
                  "list", _EX4),
    Misconception("moves-top-level-only",
                  "moving the tensors at the top of the batch is enough: those inside nested "
                  "containers can stay where they are", _EX4),
    Misconception("namedtuple-becomes-tuple",
                  "a namedtuple is a plain tuple, so `tuple(...)` rebuilds it", _EX4),
    Misconception("namedtuple-from-iterable",
                  "a namedtuple is built from an iterable of its items, as a tuple is: "
                  "`type(batch)(items)`", _EX4),
    Misconception("modify-batch-in-place",
                  "putting the moved tensors into the caller's dict is as good as returning a new one",
                  _EX4),
    # Exercise 5: logged_means
    Misconception("read-every-step",
                  "reading every step's loss from the device (`.item()` each step) costs no waiting, "
                  "so the block means can be computed on the host", _EX5),
    Misconception("numpy-read-is-free",
                  "turning a loss into NumPy (`.detach().cpu().numpy()`, `np.asarray`) does not wait "
                  "for the device, unlike `.item()`", _SYNC),
    Misconception("host-write-is-not-a-read",
                  "writing a device tensor into host memory (`host[i] = loss`, `copy_`) is not a read "
                  "from the device", "Counting the reads"),
    Misconception("short-block-not-logged",
                  "a last block shorter than `every` steps is not a block, so its mean is not logged",
                  _EX5),
    Misconception("zero-d-tensor-is-a-float",
                  "a 0-d tensor is as good as a Python float, so the result needs no `.item()`",
                  _LIFETIME),
    Misconception("read-at-the-end",
                  "keeping every block's mean on the device and reading them all when training ends "
                  "is a log", _EX5),
    # Exercise 6: evaluate
    Misconception("eval-stops-graph",
                  "`model.eval()` stops autograd from recording, as `torch.no_grad()` does", _LIFETIME),
    Misconception("set-grad-enabled-is-scoped",
                  "`torch.set_grad_enabled(False)` on its own line switches grad mode off only inside "
                  "the function that calls it", _EX6),
    Misconception("kept-losses-are-numbers",
                  "keeping each batch's loss in a list keeps only the numbers, not the batch's graph "
                  "and activations", _LIFETIME),
    Misconception("grad-mode-on-by-default",
                  "grad mode is on whenever a function is called, so switching it back on restores "
                  "the caller's mode", _EX6),
    Misconception("mean-over-samples",
                  "the mean loss over batches weights each batch by its number of samples", _EX6),
    Misconception("batches-are-a-list",
                  "`batches` is a list: it has a `len` and can be gone through more than once", _EX6),
)
