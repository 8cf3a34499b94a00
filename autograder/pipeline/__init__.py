"""Grading a class: collect, grade each notebook in its sandbox, record, on one machine or a cluster.

:mod:`.submissions` reads a folder or zips (bounded, never written to); :mod:`.unit` grades one
notebook (what each worker runs: rebuild, screen, execute in the sandbox, judge);
:mod:`.execute` keeps a dying kernel from losing the notebook; :mod:`.grading` runs the class in
parallel and is the gradebook's one writer; :mod:`.reference_cache` keeps the solutions'
reference runs between runs; :mod:`.cluster` runs the same jobs on Dask workers;
:mod:`.gradebook` reads what was recorded; :mod:`.term` (due dates, submission times, late
policy) and :mod:`.adjustments` (manual scores that survive regrades) are applied when recording.

Contract: a grader failure is never a grade (``not graded``, with the reason, and regradable).
May import the sandbox and the judge, never the outputs.
"""

# The rooms this one may import (tests/test_layout.py holds it, and that none is above it).
MAY_IMPORT: tuple[str, ...] = ('sandbox', 'judge')
