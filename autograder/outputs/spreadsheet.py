"""Every CSV the grader writes for people to open: cells a spreadsheet cannot run as formulas.

Why: roster names, ids, sections, emails and feedback notes come from files the instructor
did not write character by character (an LMS export, a student's self-chosen display name), and
a spreadsheet program runs a cell that starts with ``=``, ``+``, ``-`` or ``@`` as a formula
(``=HYPERLINK(...)`` exfiltrates, ``=cmd|...`` ran programs in old Excel) when the instructor
opens the export. OWASP's CSV-injection guidance: prefix such a cell with ``'``, which the
spreadsheet shows as text and never evaluates; a leading tab or carriage return counts too.

Contract:

* :func:`cell` turns one value into the text written: a **number** (``int`` or ``float``,
  never ``bool``) is written as a number, ``repr``-exact, integral values without ``.0``
  (``14``, ``2.5``, ``-1``); it always matches :data:`NUMBER`, so a leading ``-`` is a sign
  that no spreadsheet reads as a formula and no text can pass as one. A non-finite number
  raises ``ValueError`` (scores are computed by the grader: a NaN is our bug, never written).
  **Anything else** is text (``str(value)``; ``None`` is an empty cell) and gets a leading
  ``'`` when it starts with one of :data:`FORMULA_START`, including text that looks numeric
  (a section named ``-1``). Control characters other than tab and line breaks (an ESC that
  would recolour a terminal showing the file) become U+FFFD.
* :func:`writer` is ``csv.writer`` with every cell of every row through :func:`cell`: the one
  way this package writes a CSV (the grade export and the Canvas and Moodle files).
"""

from __future__ import annotations

import csv
import math
import re
from collections.abc import Iterable
from typing import IO

# OWASP's list, and a newline (a cell that starts on a new line can start a formula there).
FORMULA_START = ("=", "+", "-", "@", "\t", "\r", "\n")
NUMBER = re.compile(r"-?\d+(\.\d+)?(e[+-]\d+)?\Z")
# Control characters other than tab and line breaks (C0, DEL, C1): shown as U+FFFD.
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


def cell(value: object) -> str:
    """The text to write for ``value`` (see the module docstring)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if not math.isfinite(value):
            raise ValueError(f"not a finite number: {value!r}")
        text = str(int(value)) if float(value).is_integer() else repr(float(value))
        assert NUMBER.match(text), text  # the property the docstring promises
        return text
    text = "" if value is None else str(value)
    text = _CONTROL.sub("\ufffd", text)   # ESC and friends: `cat grades.csv` recoloured the terminal
    return "'" + text if text.startswith(FORMULA_START) else text


class _Writer:
    def __init__(self, fh: IO[str]) -> None:
        self._csv = csv.writer(fh)

    def writerow(self, row: Iterable[object]) -> None:
        self._csv.writerow([cell(v) for v in row])

    def writerows(self, rows: Iterable[Iterable[object]]) -> None:
        for row in rows:
            self.writerow(row)


def writer(fh: IO[str]) -> _Writer:
    """A CSV writer whose every cell goes through :func:`cell`."""
    return _Writer(fh)
