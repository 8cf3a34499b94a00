"""Misconceptions of notebook 01-why-tensors (see __init__.py for the contract)."""

from . import Misconception

NOTEBOOK = "01-why-tensors"

_MODEL = "1. A tensor is memory plus a recipe for reading it"
_DTYPES = "4.1 dtype and device at creation: `torch.tensor` vs `torch.Tensor`"
_INDEXING = "4.2 Indexing: `x[0]` is a view, `x[[0]]` is a copy"
_BROADCAST = "4.3 Broadcasting stretches dimensions, silently"
_MEASURE = "5. Measuring honestly"

MISCONCEPTIONS: tuple[Misconception, ...] = (
    # Exercise 1: which dtype?
    Misconception(
        "true-division-keeps-ints",
        "`/` between integer tensors gives integers, like `//`",
        "Exercise 1 (predict, 2 points): which dtype?"),
    Misconception(
        "numpy-float64-becomes-float32",
        "`torch.tensor` turns a NumPy float64 array into torch's default `float32`",
        _DTYPES),
    Misconception(
        "tensor-class-infers-dtype",
        "`torch.Tensor(data)` infers the dtype from the data like `torch.tensor`, so a list of "
        "ints stays `int64`",
        _DTYPES),
    # Exercise 2: do two tensors share memory?
    Misconception(
        "data-ptr-is-storage-address",
        "`t.data_ptr()` is the address of `t`'s storage, so two tensors share memory exactly "
        "when their `data_ptr()`s are equal",
        _MODEL),
    Misconception(
        "equal-values-share-memory",
        "two tensors holding equal values share memory, and a transposed view does not",
        _INDEXING),
    Misconception(
        "only-views-of-a-base-share",
        "memory is shared only between a view and the tensor it was taken from, so two views "
        "of the same tensor do not share it",
        _MODEL),
    Misconception(
        "tensor-for-bool",
        "a one-element tensor such as `torch.tensor(True)` does for the Python `bool` a function "
        "is asked to return",
        "Exercise 2 (implement, 3 points): do two tensors share memory?"),
    # Exercise 3: center each row
    Misconception(
        "reduction-keeps-dim",
        "a reduction keeps the dimension it reduces, so `x.mean(dim=1)` lines up with the rows",
        _BROADCAST),
    Misconception(
        "row-mean-is-dim-0",
        "the mean of each row is `x.mean(dim=0)`, dim 0 being the one that numbers the rows",
        _BROADCAST),
    Misconception(
        "augmented-assignment-makes-a-copy",
        "`x -= ...` inside a function makes a new tensor, so the caller's `x` is left alone",
        _INDEXING),
    Misconception(
        "python-floats-keep-float64",
        "`torch.tensor` of Python floats taken with `.item()` from a float64 tensor is float64 "
        "again",
        _DTYPES),
    # Exercise 4: the gradient of a hidden layer
    Misconception(
        "non-leaf-grad-is-kept",
        "`backward()` keeps the `.grad` of every tensor in the graph, so `h.grad` is there "
        "without `retain_grad()` or a hook",
        "4.4 Gradients of intermediate values: `retain_grad()` vs `register_hook()`"),
    Misconception(
        "pre-activation-grad-is-grad-h",
        "the gradient with respect to `x @ w1`, before the relu, is the gradient with respect "
        "to `h`",
        "Exercise 4 (implement, 3 points): the gradient of a hidden layer"),
    Misconception(
        "autograd-grad-fills-grad",
        "`torch.autograd.grad` fills the leaves' `.grad` like `backward()`, so `w1.grad` and "
        "`w2.grad` are set",
        "Exercise 4 (implement, 3 points): the gradient of a hidden layer"),
    # Exercise 5: a median timer
    Misconception(
        "mean-is-as-good-as-median",
        "the mean time per call (or the total divided by the number of calls) is as good as "
        "the median: a few slow outliers average out",
        _MEASURE),
    Misconception(
        "first-call-is-typical",
        "the first call costs what the later ones cost, so no untimed warm-up call is needed",
        _MEASURE),
    Misconception(
        "even-median-is-a-middle-value",
        "the median of an even number of timings is one of the two middle values (what "
        "`torch.median` or `sorted(d)[n // 2]` gives), not their mean",
        "Exercise 5 (measure, 3 points): a median timer"),
)
