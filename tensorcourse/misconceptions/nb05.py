"""Misconceptions of notebook 05-memory-and-performance (see __init__.py for the contract)."""

from . import Misconception

NOTEBOOK = "05-memory-and-performance"

_TIMING = "3. Measuring GPU work honestly"
_EX1 = "Exercise 1 (measure, 3 points): a timer that synchronizes when it must"
_PREFETCH = "Prefetching one batch ahead"
_EX2 = "Exercise 2 (implement, 3 points): prefetch one batch ahead"
_RECOMPILE = "When does it recompile?"
_EX4 = "Exercise 4 (implement, 3 points): pad to a bucket"
_AUTOCAST = "5. `torch.autocast`: a dtype per operation"
_SCALER = "6. `GradScaler`: scale the loss, unscale before you clip"

MISCONCEPTIONS: tuple[Misconception, ...] = (
    # Exercise 1: time_once
    Misconception("sync-only-after",
                  "one synchronize after the work is enough, as if work queued before the timer "
                  "started could not be billed to it", _TIMING),
    Misconception("device-string-equality",
                  "`device == \"cuda\"` tells a CUDA device, `\"cuda:1\"` and "
                  "`torch.device(\"cuda\", 0)` included", _EX1),
    Misconception("sync-on-any-device",
                  "calling `torch.cuda.synchronize()` is harmless on any device, the CPU included",
                  _TIMING),
    Misconception("sync-after-clock",
                  "the second synchronize may come after the second clock reading", _TIMING),
    # Exercise 2: run_prefetched
    Misconception("copy-just-in-time",
                  "copying each batch right before computing it overlaps copy and compute",
                  _PREFETCH),
    Misconception("prefetch-everything",
                  "prefetching means copying every batch first, then computing them all", _PREFETCH),
    Misconception("last-batch-left-pending",
                  "the loop over the remaining batches computes every batch, the last pending one "
                  "included", _EX2),
    Misconception("batches-are-a-list",
                  "`batches` is always a list, so `len(batches)` and `batches[i]` work", _EX2),
    # Exercise 3: how many graphs
    Misconception("every-shape-recompiles",
                  "with the default `dynamic=None`, every new input shape compiles a new graph",
                  _RECOMPILE),
    Misconception("size-one-is-dynamic", "a dynamic graph also covers sizes 0 and 1", _RECOMPILE),
    Misconception("dtype-change-reuses-graph",
                  "a graph compiled for float32 inputs also runs float64 ones", _RECOMPILE),
    # Exercise 4: pad_to_bucket
    Misconception("equal-length-moves-up",
                  "a length equal to a bucket goes to the next bucket up", _EX4),
    Misconception("buckets-come-sorted",
                  "the buckets come in increasing order, so the first one that fits is the "
                  "smallest", _EX4),
    Misconception("pad-pair-order",
                  "`F.pad(x, (a, b))` pads the end of the last dimension with `a` values", _EX4),
    Misconception("too-long-passes-through",
                  "a sequence longer than every bucket may pass through unpadded",
                  "Keeping shapes stable: buckets"),
    Misconception("new-tensor-on-default-device",
                  "a tensor made with `torch.full` lands on the input's device without `device=`",
                  _EX4),
    Misconception("new-tensor-default-dtype",
                  "`torch.full` with a float fill value makes a tensor of the input's floating "
                  "dtype", _EX4),
    # Exercise 5: dtypes under CPU autocast
    Misconception("cpu-softmax-in-float32",
                  "CPU autocast runs `softmax` in float32, as CUDA autocast does", _AUTOCAST),
    Misconception("reductions-in-float32",
                  "a reduction such as `sum` always runs in float32 under autocast", _AUTOCAST),
    Misconception("autocast-casts-everything",
                  "autocast makes every operation bfloat16, `relu` and `+` included", _AUTOCAST),
    # Exercise 6: amp_train_step
    Misconception("scaler-step-does-the-rest",
                  "`scaler.step()` unscales and updates the scale by itself, so clipping right "
                  "after `backward()` is safe and `update()` is not needed", _SCALER),
    Misconception("clip-before-unscale",
                  "clipping before `unscale_` is the same, as if the threshold applied to the true "
                  "gradients", _SCALER),
    Misconception("update-optional",
                  "`scaler.update()` is optional: the scale can stay as it is", _SCALER),
    Misconception("optimizer-step-after-unscale",
                  "after `unscale_`, `optimizer.step()` is as good as `scaler.step(optimizer)`",
                  _SCALER),
)
