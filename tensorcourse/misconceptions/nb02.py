"""Misconceptions of notebook 02-creating-tensors (see __init__.py for the contract)."""

from . import Misconception

NOTEBOOK = "02-creating-tensors"

_CONSTRUCTORS = "1. Three constructors that look alike"
_IDS = "3. What ids cost"
_FRESH = "4.1 The strides of a fresh tensor"
_TO = "4.2 What `.to()` does to strides: nothing"
_LIKE = "4.4 Layout you choose: `*_like` and `channels_last`"
_TIMER = "Exercise 5 (measure, 3 points): time an allocation on an asynchronous device"
_BUFFER = "Exercise 6 (fix, 4 points): a batch loop with a preallocated buffer"

MISCONCEPTIONS: tuple[Misconception, ...] = (
    # Exercise 1: shape and dtype of a constructor
    Misconception(
        "tensor-class-int-is-data",
        "`torch.Tensor(3)` makes a tensor holding the value 3, as `torch.tensor([3.0])` does",
        _CONSTRUCTORS),
    Misconception(
        "tensor-int-is-size",
        "`torch.tensor(3)` reads the int as a size, like `torch.Tensor(3)`",
        _CONSTRUCTORS),
    Misconception(
        "from-numpy-gives-default-float",
        "`torch.from_numpy` converts NumPy's float64 to torch's default `float32`",
        "Copy or share? `torch.tensor` vs `torch.as_tensor` / `torch.from_numpy`"),
    Misconception(
        "arange-includes-end",
        "`torch.arange(start, end, step)` includes `end`",
        "Exercise 1 (predict, 3 points): shape and dtype of a constructor"),
    Misconception(
        "full-gives-float",
        "`torch.full` always gives the default float dtype, whatever the fill value",
        "Filled tensors: `torch.full`, and the `*_like` family"),
    # Exercise 2: the smallest integer dtype for ids
    Misconception(
        "iinfo-max-is-exclusive",
        "a dtype holds only the values below `torch.iinfo(dtype).max`, so an id equal to it "
        "needs the next dtype up",
        _IDS),
    Misconception(
        "bits-fit-signed-dtype",
        "an id of `b` bits fits a `b`-bit signed integer, so 8 bits hold up to 255",
        _IDS),
    Misconception(
        "int64-holds-any-id",
        "`int64` holds any id, so `max_id` needs no range check (negative, or beyond "
        "`2**63 - 1`)",
        _IDS),
    Misconception(
        "ids-are-int32-or-int64",
        "ids are stored as `int32` or `int64`, never in a smaller integer dtype",
        _IDS),
    # Exercise 3: contiguous strides
    Misconception(
        "zero-size-makes-zero-stride",
        "a size of 0 multiplies into the strides to its left like any other size",
        "Exercise 3 (implement, 3 points): contiguous strides"),
    Misconception(
        "first-dim-is-adjacent",
        "in a fresh tensor the first dimension is adjacent in memory (column-major, Fortran "
        "order)",
        _FRESH),
    Misconception(
        "stride-includes-own-size",
        "a dimension's stride is the product of its own size and the sizes to its right",
        _FRESH),
    Misconception(
        "list-for-tuple",
        "a list of strides does for the tuple of ints the contract asks for",
        "Exercise 3 (implement, 3 points): contiguous strides"),
    Misconception(
        "strides-can-be-read-off",
        "reading the strides off a tensor created for the purpose is as good as computing them",
        "Exercise 3 (implement, 3 points): contiguous strides"),
    # Exercise 4: strides after the fact
    Misconception(
        "to-makes-contiguous",
        "`.to()` returns a contiguous copy, whatever the input's strides",
        _TO),
    Misconception(
        "like-allocates-contiguous",
        "`torch.empty_like` allocates a fresh contiguous tensor, not one with its input's layout",
        _LIKE),
    Misconception(
        "copy-keeps-gaps",
        "a copy of a stepped slice keeps the slice's gaps in its strides",
        _TO),
    Misconception(
        "strides-follow-shape",
        "strides follow from the shape alone, so `memory_format=torch.channels_last` leaves them "
        "row-major",
        _LIKE),
    Misconception(
        "permute-is-reversal",
        "`x.permute(2, 0, 1)` reverses the dimensions, like `x.transpose(0, 2)`",
        "4.3 `transpose` vs `permute`"),
    # Exercise 5: time an allocation on an asynchronous device
    Misconception(
        "returns-when-done",
        "a call returns when its work is done, so the clock can stop as soon as `factory()` "
        "returns",
        _TIMER),
    Misconception(
        "no-sync-before-start",
        "only stopping the clock needs a `sync()`: work queued before the start cannot leak into "
        "the timing",
        _TIMER),
    Misconception(
        "fastest-run-is-the-time",
        "the fastest run is the time to report (the `timeit` habit), where the contract asks for "
        "the median",
        _TIMER),
    # Exercise 6: a batch loop with a preallocated buffer
    Misconception(
        "rows-are-independent",
        "`fn` computes each row on its own, so extra rows in the buffer (stale or zeroed) do not "
        "change the results of the valid ones",
        "6. Preallocated buffers and the stale-data bug"),
    Misconception(
        "output-is-a-copy",
        "what `fn` returns is a tensor of its own, safe to keep while the buffer is reused",
        _BUFFER),
    Misconception(
        "buffer-is-optional",
        "staging the rows in the buffer is optional: calling `fn` on the batch itself does the same",
        _BUFFER),
    # Used by notebook 03 (exercise 4): the dtype `.float()` gives is taught here.
    Misconception(
        "float-method-keeps-float64",
        "`.float()` only makes sure a tensor is floating point, so a float64 tensor keeps its "
        "precision",
        "Floats: `float32`"),
)
