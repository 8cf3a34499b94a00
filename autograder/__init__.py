"""The course's nbgrader pipeline: generate student notebooks, grade, feedback, export.

Run ``python -m autograder --help``. See ``autograder/README.md`` for the workflow.

Modules:

* :mod:`autograder.course`: where things are (repository, assignments) and the
  nbgrader configuration both sides share.
* :mod:`autograder.generate`: ``solutions/`` -> ``notebooks/``.
* :mod:`autograder.submissions`: collect a folder (or zips) of submissions into the
  working folder, read-only copies, with clear errors for what is not gradable.
* :mod:`autograder.grading`: autograde, feedback and CSV export.
* :mod:`autograder.execute`: an nbgrader ``Execute`` that survives a dying kernel.
* :mod:`autograder.cli`: the command line.
"""
