"""Misconceptions of notebook 03-indexing-and-views (see __init__.py for the contract)."""

from . import Misconception

NOTEBOOK = "03-indexing-and-views"

_MODEL = "1. The model: one flat storage, read through (shape, stride, offset)"
_INDEXING = "2. Basic vs advanced indexing: who shares storage"
_IN_PLACE = "3. In place vs out of place, through views and copies"
_STANDARDIZE = "Exercise 4 (fix, 3 points): standardize a window without touching the signal"
_RESHAPE = "4. `view`, `reshape`, `flatten`: who copies, who fails"
_AS_STRIDED = "6. `as_strided`: any layout you can write down"
_WINDOWS = "Exercise 6 (implement, 3 points): sliding windows with `as_strided`"

MISCONCEPTIONS: tuple[Misconception, ...] = (
    # Exercise 1: where does an element live? (strides-from-shape: exercises 6 and 7 too)
    Misconception(
        "offset-not-counted",
        "element `[0, 0, ...]` of a tensor sits at the start of its storage, so the storage "
        "offset need not be added",
        _MODEL),
    Misconception(
        "strides-from-shape",
        "a tensor's strides follow from its shape (row-major, stride 1 for the last dim), "
        "whatever view it is",
        _MODEL),
    Misconception(
        "negative-index-used-as-is",
        "a negative index goes into the address formula as it is, like any other index",
        "Exercise 1 (implement, 3 points): where does an element live?"),
    Misconception(
        "out-of-range-index-is-an-address",
        "an index past the end of a dim still names a storage element, so it needs no check",
        "Exercise 1 (implement, 3 points): where does an element live?"),
    # Exercise 2: which results share storage with `x`?
    Misconception(
        "zero-d-index-is-advanced",
        "a 0-d index tensor such as `torch.tensor(2)` is advanced indexing, like "
        "`torch.tensor([2])`",
        _INDEXING),
    Misconception(
        "view-of-a-copy-reaches-x",
        "basic indexing of an advanced-indexing result (`x[[1, 3]][0]`) gives a view of `x`",
        _INDEXING),
    Misconception(
        "kept-dim-slice-copies",
        "a slice that keeps the dimension (`x[2:3]`) copies, like `x[[2]]`",
        _INDEXING),
    # Exercise 3: a scaling that scales nothing
    Misconception(
        "advanced-index-is-a-view",
        "`x[rows]` with a list of rows is a view, so an in-place method on it writes into `x`",
        _IN_PLACE),
    Misconception(
        "loop-scales-each-row-once",
        "scaling the listed rows one at a time in a loop is the same as one indexed assignment, "
        "even when a row is listed twice",
        _IN_PLACE),
    Misconception(
        "result-is-the-in-place-promise",
        "returning a scaled copy keeps the promise of a trailing `_`: the caller uses the "
        "returned tensor, not `x`",
        _IN_PLACE),
    Misconception(
        "accumulate-writes-like-assignment",
        "`index_put_(..., accumulate=True)` writes the values in place of the old ones, like an "
        "assignment",
        _IN_PLACE),
    # Exercise 4: standardize a window without touching the signal
    Misconception(
        "window-is-its-own-tensor",
        "the window `narrow` or `reshape` returns is a tensor of its own, so in-place arithmetic "
        "on it leaves the signal alone",
        _IN_PLACE),
    Misconception(
        "contiguous-always-copies",
        "`.contiguous()` always returns a copy, even of a window that is contiguous already",
        "7. Why a custom C++/CUDA extension wants contiguous inputs"),
    Misconception(
        "std-divides-by-n",
        "`Tensor.std()` divides by `n`, so `std(correction=0)` is the same standard deviation",
        _STANDARDIZE),
    Misconception(
        "std-needs-epsilon",
        "dividing by a standard deviation needs a small epsilon added, as normalization layers do",
        _STANDARDIZE),
    # Exercise 5: view, copy, or error?
    Misconception(
        "view-needs-contiguous",
        "`view` needs a contiguous tensor, so it fails on any non-contiguous one",
        _RESHAPE),
    Misconception(
        "view-copies-when-it-must",
        "`view` copies when no strides describe the new shape, like `reshape`",
        _RESHAPE),
    Misconception(
        "flatten-always-copies",
        "`flatten` always returns a new tensor, even of a contiguous one",
        _RESHAPE),
    Misconception(
        "reshape-keeps-stride-zero",
        "`reshape` of an expanded tensor is a view that keeps reading the shared elements with "
        "stride 0",
        _RESHAPE),
    # Exercises 6 and 7: sliding windows and the anti-diagonal with `as_strided`
    Misconception(
        "as-strided-offset-is-relative",
        "`as_strided`'s offset counts from the first element of the tensor it is called on",
        _AS_STRIDED),
    Misconception(
        "one-window-less",
        "`(len(x) - size) // step` windows fit, leaving out the window that starts at 0",
        _WINDOWS),
    Misconception(
        "copy-will-do-for-a-view",
        "a copy with the right values (stacked slices) is as good as the view the contract asks "
        "for",
        _WINDOWS),
    Misconception(
        "as-strided-checks-arguments",
        "`as_strided` refuses windows that do not fit the tensor, so the arguments need no "
        "checks of their own",
        _AS_STRIDED),
    Misconception(
        "flip-is-a-view",
        "`flip` returns a view, so `m.flip(1).diagonal()` reads `m`'s storage",
        _AS_STRIDED),
    Misconception(
        "diagonal-is-the-anti-diagonal",
        "`m.diagonal()` is the anti-diagonal, read from the top-right corner",
        _MODEL),
)
