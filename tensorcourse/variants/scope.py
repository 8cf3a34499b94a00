"""Which predict exercises have per-student variants, and why each other one has none yet.

Every predict exercise of the course either has a spec in :data:`tensorcourse.variants.SPECS`
or is listed in :data:`WITHOUT_VARIANTS` with its reason (``tests/test_variants.py`` holds
this): a new predict exercise gets a spec or says why not, so the gap stays visible. Without a
spec an exercise is graded as published for everyone (the grader notes it; a copied answer
still scores).

The reason, and what lifting it takes (answers that are tuples, dtypes or ``None`` are no
reason: a spec balances them by an ``answer_class`` and computes each misconception's
prediction on the variant with ``beliefs``, as 02 Ex4's strides, 07 Ex2's nodes and 12 Ex1's
shapes do):

* :data:`SCENARIOS`: the answers come from fixed code (named functions, models, threads, a
  scripted sequence), not from tensors a generator can redraw. A variant needs other code, or
  other numbers in the script (with the course's own model or torch computing the answers).
"""

from __future__ import annotations

SCENARIOS = "answers come from fixed code, not redrawable tensors"

# exercise -> (reason, what a variant would change)
WITHOUT_VARIANTS: dict[str, tuple[str, str]] = {
    "04-operations-and-autograd/ex6-grad-mode": (
        SCENARIOS, "which grad-mode block each thread and step runs in"),
    "05-memory-and-performance/ex3-recompiles": (
        SCENARIOS, "the call sequences given to seven compiled functions"),
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
