"""The course's nbgrader pipeline: generate student notebooks, grade, feedback, export.

Run ``python -m autograder --help``. ``autograder/README.md`` opens with the map of the rooms
below and what each may import (``tests/test_layout.py`` holds both):

* :mod:`autograder.sandbox`: what a learner's kernel may touch and send back.
* :mod:`autograder.judge`: what a submission is, and how a verdict is decided.
* :mod:`autograder.pipeline`: collect, grade each notebook, record (locally or on Dask).
* :mod:`autograder.outputs`: feedback pages, the class report, CSV and LMS files.
* :mod:`autograder.authoring`: the release: ``notebooks/`` from ``solutions/``, variants.
* :mod:`autograder.deploy`: cluster recipes (Slurm, Kubernetes) that run the command line.

Beside them, imported by every room: :mod:`autograder.course` (where the course is, the
nbgrader configuration) and :mod:`autograder.terminal` (submission text made safe to print);
and the entry point :mod:`autograder.cli`, which alone imports every room.
"""
