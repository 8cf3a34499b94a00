"""The real cause of a beginner's failed test, said in the learner's terms (issue #30).

Why: the commonest mistakes showed as someone else's. An answer cell with a syntax error, or a
function named ``hiden_grad``, made the test fail with a ``NameError`` raised in the test's
own call, which the feedback could only call "raised inside a library the test called"; an
endless loop read "the test ran past the time limit". The grader knows better, on its own
side, from the learner's text alone:

* :func:`answer_cause`: the answer cell does not compile (the line, its text and Python's
  message), or it never mentions a name its exercise's release cell defines (so the test's
  call of it cannot work; a close spelling the learner did write is suggested);
* :func:`timeout_cause`: which limit stopped the test, and that the learner's code was running.

Contract: every function here is decided from the learner's own answer text and the release,
never from what the kernel printed or raised, so nothing here can carry a hidden test's text
(the kernel's messages could: a learner's code can raise anything). Never raises: a cause that
cannot be worked out is ``""`` and the test's own message stands (:func:`autograder.unit.
learner_message`).
"""

from __future__ import annotations

import difflib
import re

from . import learner_source
from .integrity import bound_names

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SHOWN = 100   # characters of a learner's line quoted back


def _quote(line: str) -> str:
    line = " ".join(line.split())   # one line, no control characters or tabs
    return line if len(line) <= _SHOWN else line[:_SHOWN - 1] + "…"


def syntax_error(source: str) -> str:
    """``""``, or where ``source`` (one answer cell) fails to compile, in words."""
    found = learner_source.parse(source)
    if not isinstance(found, learner_source.NotPython):
        return ""
    where = f"line {found.line} of your answer cell" if found.line else "your answer cell"
    text = f" (`{_quote(found.text)}`)" if found.text.strip() else ""
    reason = re.sub(r" \(<answer>, line \d+\)$", "", found.reason)
    return f"your answer cell has a syntax error, so nothing in it ran: {where}{text}: {reason}"


def missing_names(source: str, required: set[str]) -> str:
    """``""``, or which of ``required`` (what the release's answer cell defines) the learner's
    ``source`` never even mentions: a test that calls it fails with a NameError that is theirs."""
    written = set(_IDENT.findall(source))
    missing = sorted(n for n in required if n not in written)
    if not missing:
        return ""
    name = missing[0]
    close = difflib.get_close_matches(name, sorted(written - required), n=1, cutoff=0.75)
    hint = f"; you wrote `{close[0]}`: check the spelling" if close else ""
    return (f"your answer does not define `{name}`, which this exercise asks for: the test's "
            f"call of it fails with NameError: name '{name}' is not defined{hint}")


def answer_cause(source: str, release_source: str) -> str:
    """Why the learner's answer cannot pass whatever the test does, or ``""``."""
    try:
        return syntax_error(source) or missing_names(source, bound_names(release_source))
    except Exception:  # noqa: BLE001 - a cause we cannot work out leaves the test's own message
        return ""


def timeout_cause(limit_seconds: int) -> str:
    """The message of a test stopped by the per-cell time limit."""
    return (f"stopped after {limit_seconds} s, the time limit for one cell: your code was still "
            "running (the solution passes this test well within it). Look for a loop that never "
            "ends, or far more work than the exercise needs")
