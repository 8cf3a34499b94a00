"""What the instructor and the students get from the gradebook: feedback, the report, the LMS files.

:mod:`.feedback` (one HTML page per student and notebook: results, never test code),
:mod:`.report` (the class report, with :mod:`.similarity`), :mod:`.export` (the course's CSV,
Canvas and Moodle import files, with :mod:`.lms`), every CSV cell through :mod:`.spreadsheet`
(no text runs as a formula).

Contract: reads the gradebook and the results; never grades and never changes a score. May
import the pipeline's readers and the judge's answer parsing.
"""

# The rooms this one may import (tests/test_layout.py holds it, and that none is above it).
MAY_IMPORT: tuple[str, ...] = ('pipeline', 'judge')
