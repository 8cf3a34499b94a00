"""Misconceptions of notebook 12-torch-func-and-kernels (see __init__.py for the contract)."""

from . import Misconception

NOTEBOOK = "12-torch-func-and-kernels"

_FUNC = "1. `torch.func`: transforms of functions"
_VMAP = "`vmap`: write the function for one item, run it on a batch"
_CALL = "`functional_call`: a module as a function of its parameters"
_EX1 = "Exercise 1 (predict, 3 points): what does `vmap` return?"
_PER_SAMPLE = "2. Per-sample gradients"
_ENSEMBLES = "3. Ensembles: many models, one call"
_EX3 = "Exercise 3 (implement, 3 points): an ensemble forward"
_TRITON = "4. Your own kernel, in Triton"
_EX4 = "Exercise 4 (implement, 4 points): a fused scale + bias + ReLU kernel"
_TORCH_FUNCTION = "5. `__torch_function__`: seeing every torch call"
_MEMORY = "6. Measuring a process's real memory"
_EX6 = "Exercise 6 (measure, 3 points): read a process's resident memory"

MISCONCEPTIONS: tuple[Misconception, ...] = (
    # Exercise 1: what vmap returns
    Misconception("vmap-maps-list-items", "`vmap` maps over the items of a list argument", _CALL),
    Misconception("out-dims-ignored",
                  "`out_dims` does not move the batch dimension: results are stacked along dimension 0 "
                  "anyway", _VMAP),
    Misconception("in-dims-is-the-reduced-dim",
                  "with `in_dims=1`, `f` works along dimension 1 and the result keeps dimension 0", _VMAP),
    Misconception("vmap-broadcasts-batch", "`vmap` broadcasts mapped inputs whose batch sizes differ", _EX1),
    # Exercise 2: per-sample gradients (vmap's in_dims also in exercise 3)
    Misconception("batch-grad-is-per-sample",
                  "the batch's gradient, repeated for each sample, is every sample's own gradient",
                  _PER_SAMPLE),
    Misconception("backward-replaces-grad",
                  "each `backward()` replaces `.grad`, so a loop of backward calls gives each sample's own "
                  "gradient", _FUNC),
    Misconception("per-sample-needs-a-loop",
                  "per-sample gradients need one forward and backward per sample", _PER_SAMPLE),
    Misconception("vmap-shares-unmapped-args",
                  "`vmap` works out by itself which arguments to map: shared ones (the parameters, the batch"
                  " `x`) need no `in_dims=None`", _VMAP),
    # Exercise 3: an ensemble forward
    Misconception("buffers-can-be-left-out",
                  "a model's parameters are all its state: its buffers (BatchNorm's running statistics) can "
                  "be left out", _ENSEMBLES),
    Misconception("module-to-copies",
                  "`module.to(...)` returns a moved copy and leaves the module where it was", _EX3),
    Misconception("ensemble-needs-a-loop", "an ensemble has to run its models one by one", _ENSEMBLES),
    # Exercise 4: a Triton kernel
    Misconception("no-mask-needed",
                  "the last block stays inside the tensor, so the store needs no mask", _TRITON),
    Misconception("unmasked-load-is-harmless",
                  "only a store past the end does harm: an unmasked load is safe", _TRITON),
    Misconception("relu-order-free",
                  "the ReLU can come before the scale and bias: the order does not change the result", _EX4),
    Misconception("program-id-implicit",
                  "each program instance finds its own block of the data without `tl.program_id`", _TRITON),
    Misconception("mask-includes-n",
                  "the mask `offsets <= n_elements` keeps the kernel inside the tensor", _TRITON),
    Misconception("block-size-fixed",
                  "a kernel's block size is fixed inside the kernel, whatever `BLOCK_SIZE` the launch passes",
                  _TRITON),
    Misconception("float32-is-enough",
                  "computing in float32 and converting back loses nothing for a float64 input", _EX4),
    Misconception("torch-code-as-kernel",
                  "anything that `kernel[grid](...)` can launch is a kernel, torch code included", _TRITON),
    # Exercise 5: a call logger
    Misconception("func-name-is-enough",
                  "`func.__name__` names a torch call well enough to tell calls apart", _TORCH_FUNCTION),
    Misconception("kwargs-can-be-dropped",
                  "passing on the positional arguments is enough: keyword arguments such as `dim=0` can be "
                  "dropped", _TORCH_FUNCTION),
    Misconception("kwargs-is-a-dict",
                  "the handler's `kwargs` is always a dict, `{}` when a call has no keyword arguments",
                  _TORCH_FUNCTION),
    Misconception("handler-runs-once-per-block",
                  "a mode's handler runs once for its block, not once for every torch call in it",
                  _TORCH_FUNCTION),
    # Exercise 6: rss_bytes
    Misconception("status-values-are-bytes", "the numbers in `/proc/self/status` are bytes already", _MEMORY),
    Misconception("kb-is-1000-bytes", "a kB in `/proc/self/status` is 1000 bytes", _EX6),
    Misconception("vmhwm-is-rss", "VmHWM is the process's resident memory now", _MEMORY),
    Misconception("maxrss-is-rss",
                  "`ru_maxrss` is the process's resident memory now, whatever status file the function is "
                  "given", _MEMORY),
    Misconception("missing-line-is-zero",
                  "a status file without a VmRSS line describes a process with no resident memory: 0 bytes",
                  _EX6),
    Misconception("status-read-once",
                  "a process's resident memory does not change, so reading the status file once is enough",
                  _MEMORY),
)
