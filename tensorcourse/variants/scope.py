"""Which predict exercises have per-student variants, and why each other one has none yet.

Every predict exercise of the course either has a spec in :data:`tensorcourse.variants.SPECS`
or is listed in :data:`WITHOUT_VARIANTS` with its reason (``tests/test_variants.py`` holds
this): a new predict exercise gets a spec or says why not, so the gap stays visible. Without a
spec an exercise is graded as published for everyone (the grader notes it; a copied answer
still scores).

The reasons, and what lifting them takes:

* :data:`ANSWERS`: the answers are tuples, dtypes or ``None``, and
  :class:`~tensorcourse.variants.PredictSpec`'s balance rule (as many of each answer as
  variant 0) counts *equal* answers, which the shapes or dtypes of another expression often
  are not. Such a spec needs an ``answer_class`` to balance, as 02 Ex4's strides have
  ("row-major" against "reordered", :mod:`tensorcourse.variants.layouts`), and ``beliefs``
  that compute each misconception's prediction on the variant. The grader already encodes
  such answers outside the kernel (``autograder.judge.variants._encoded``).
* :data:`SCENARIOS`: the answers come from fixed code (named functions, models, threads, a
  scripted sequence), not from tensors a generator can redraw. A variant needs other code, or
  other numbers in the script (with the course's own model or torch computing the answers).
"""

from __future__ import annotations

ANSWERS = "answers need classes to balance"
SCENARIOS = "answers come from fixed code, not redrawable tensors"

# exercise -> (reason, what a variant would change)
WITHOUT_VARIANTS: dict[str, tuple[str, str]] = {
    "07-programmable-tensor-system/ex2-grad-fn": (
        ANSWERS, "node names or None: other expressions of x, w, b and c"),
    "12-torch-func-and-kernels/ex1-vmap-shapes": (
        ANSWERS, "shapes or 'error': other batch sizes and in_dims/out_dims"),
    "04-operations-and-autograd/ex6-grad-mode": (
        SCENARIOS, "which grad-mode block each thread and step runs in"),
    "05-memory-and-performance/ex3-recompiles": (
        SCENARIOS, "the call sequences given to seven compiled functions"),
    "06-troubleshooting/ex3-allocator": (
        SCENARIOS, "the sizes in the allocator script (the course's allocator model answers)"),
    "06-troubleshooting/ex6-find-unused": (
        SCENARIOS, "which of five models leave a parameter without a gradient"),
    "07-programmable-tensor-system/ex6-mode-flags": (
        SCENARIOS, "which of seven execution contexts each flag is read in"),
    "08-autograd-function-and-compilers/ex5-who-accepts": (
        SCENARIOS, "the six functions given to script, compile and export"),
    "10-training-script/ex1-collate": (
        SCENARIOS, "the samples each batch is collated from"),
    "10-training-script/ex3-scaler": (
        SCENARIOS, "where the inf gradient falls and the scaler's growth interval"),
    "11-leaks-gradients-compile-hangs/ex5-graph-breaks": (
        SCENARIOS, "the six functions whose graph breaks are counted"),
}
