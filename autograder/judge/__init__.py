"""What a submission is, and how a verdict is decided.

A submission is its answers (:mod:`.answers`, rebuilt into the release), parsed once with
bounds (:mod:`.learner_source`), screened before it runs (:mod:`.screen`) and guarded while it
runs (:mod:`.rewrite`, and the kernel's own code in :mod:`.in_kernel`, read as a file and sent
as text with its values as data). A test counts as passed only with this run's tokens
(:mod:`.integrity`), and value checks are decided again outside the kernel, against the
reference run (:mod:`.values`). :mod:`.causes` says, from the learner's own text, why a test
failed.

Contract: pure decisions from the notebook, the release and the kernel's outputs; no files
written, no kernels started. Imports nothing else of ``autograder``: the judge never sees the
gradebook, the report or the LMS files.
"""

# The rooms this one may import (tests/test_layout.py holds it, and that none is above it).
MAY_IMPORT: tuple[str, ...] = ()
