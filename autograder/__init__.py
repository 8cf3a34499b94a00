"""The course's nbgrader pipeline: generate student notebooks, grade, feedback, export.

Run ``python -m autograder --help``. See ``autograder/README.md`` for the workflow.

Modules:

* :mod:`autograder.course`: where things are (repository, assignments) and the
  nbgrader configuration both sides share.
* :mod:`autograder.generate`: ``solutions/`` -> ``notebooks/``.
* :mod:`autograder.submissions`: read a folder (or zips) of submissions: bounded, no
  symlinks, never written to, with clear problem lines.
* :mod:`autograder.answers`: a submission is its answers; the notebook rebuilt from the release.
* :mod:`autograder.screen`: static screen of answer code (what it may not use).
* :mod:`autograder.integrity`: pass tokens and integrity cells; verdicts from the executed notebook.
* :mod:`autograder.sandbox`: bubblewrap sandbox and resource limits for each kernel.
* :mod:`autograder.execute`: an nbgrader ``Execute`` that survives a dying kernel.
* :mod:`autograder.unit`: grade one notebook (what each worker runs).
* :mod:`autograder.grading`: the class in parallel, the gradebook (one writer), feedback, export.
* :mod:`autograder.feedback`: the HTML page a student sees (results, never test code).
* :mod:`autograder.cli`: the command line.
"""
