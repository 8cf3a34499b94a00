"""The real cause of a beginner's failed test, said in the learner's terms (issue #30).

Why: the commonest mistakes showed as someone else's. An answer cell with a syntax error, or a
function named ``hiden_grad``, made the test fail with a ``NameError`` raised in the test's
own call, which the feedback could only call "raised inside a library the test called"; an
endless loop read "the test ran past the time limit". The grader knows better, on its own
side, from the learner's text alone:

* :func:`answer_cause`: the answer cell does not compile (the line, its text and Python's
  message), or it never mentions a name its exercise's release cell defines (so the test's
  call of it cannot work; a close spelling the learner did write is suggested);
* :func:`timeout_cause`: which limit stopped the test, and that the learner's code was running;
* :func:`learner_lines`: where in the learner's own functions an error was raised, quoted
  from their answer as the grader holds it (the kernel reports function names and line
  numbers only, never text, and never a frame of the test).

Contract: every function here is decided from the learner's own answer text and the release,
never from what the kernel printed or raised, so nothing here can carry a hidden test's text
(the kernel's messages could: a learner's code can raise anything). Never raises: a cause that
cannot be worked out is ``""`` and the test's own message stands (:func:`autograder.pipeline.unit.
learner_message`).
"""

from __future__ import annotations

import ast
import difflib
import re

from . import learner_source
from .integrity import bound_names

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SHOWN = 100   # characters of a learner's line quoted back


_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def _quote(line: str) -> str:
    # one line; control and bidi characters shown as U+FFFD (an ESC in a learner's line reached
    # the feedback page and the report: red team of #29)
    line = _CONTROL.sub("\ufffd", " ".join(line.split()))
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


def defined_names(release_source: str) -> set[str]:
    """What a release's answer cell defines for the test to use: its functions, classes and
    assigned names, not its imports (an answer may import differently)."""
    tree = learner_source.tree_or_none(release_source)
    if tree is None:
        return set()
    imported = {(a.asname or a.name).split(".")[0] for n in ast.walk(tree)
                if isinstance(n, (ast.Import, ast.ImportFrom)) for a in n.names}
    return bound_names(release_source) - imported


def answer_cause(source: str, release_source: str) -> str:
    """Why the learner's answer cannot pass whatever the test does, or ``""``."""
    try:
        return syntax_error(source) or missing_names(source, defined_names(release_source))
    except Exception:  # noqa: BLE001 - a cause we cannot work out leaves the test's own message
        return ""


def timeout_cause(limit_seconds: int) -> str:
    """The message of a test stopped by the per-cell time limit."""
    return (f"stopped after {limit_seconds} s, the time limit for one cell: your code was still "
            "running (the solution passes this test well within it). Look for a loop that never "
            "ends, or far more work than the exercise needs")


def learner_lines(where: list[tuple[str, int]], sources: list[str]) -> str:
    """``"in hidden_grad, line 4 of your answer: `h = x @ w1 + b`"`` for the innermost of
    ``where`` (function name, line in its cell) that one of the learner's answer ``sources``
    defines around that line; ``""`` when none does. Never raises."""
    try:
        for name, line in reversed(where):
            for source in sources:
                found = learner_source.parse(source)
                if not isinstance(found, learner_source.Parsed) or found.ipython:
                    continue
                for node in ast.walk(found.tree):
                    if (isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
                            and getattr(node, "name", "<lambda>") == name
                            and node.lineno <= line <= (node.end_lineno or node.lineno)):
                        text = source.splitlines()[line - 1]
                        return f"in {name}, line {line} of your answer: `{_quote(text)}`"
    except Exception:  # noqa: BLE001 - a place we cannot work out leaves the message as it is
        return ""
    return ""
