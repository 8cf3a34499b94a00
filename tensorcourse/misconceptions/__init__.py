"""The mistakes the course's exercises are written to catch, each named once.

Every wrong answer in ``tests/wrong_answers/`` embodies one misconception, and the hidden
check that rejects it names that misconception in its message (``tensorcourse.check``'s
``misconception=``/``diagnose=``, or ``with tc.check.misconception(...)``). The grader
reads the name back from the message's last line, looks it up here (its own copy, never the
kernel's), and the feedback page and the class report (``autograder/outputs/report.py``) show the
belief and a link to the section that teaches it.

One module per notebook (``nb01.py`` ... ``nb12.py``) defines ``NOTEBOOK`` (the assignment
name) and ``MISCONCEPTIONS``: a tuple of :class:`Misconception`. A misconception's full id
is ``"<two-digit notebook>/<key>"``, e.g. ``"01/reduction-keeps-dim"``.

Contract (held by tests/test_misconceptions.py): ids are unique, keys are lowercase words
joined by hyphens, ``section`` is the text of a heading of that notebook, and every id is
named by at least one wrong answer.
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass
from functools import lru_cache

__all__ = ["Misconception", "catalog", "get", "line", "named_in", "anchor"]

NOTEBOOK_MODULES = tuple(f"nb{i:02d}" for i in range(1, 13))
_KEY = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
_ID = re.compile(r"^(\d\d)/([a-z0-9]+(?:-[a-z0-9]+)*)$")
# The last line of a check's message when it names a misconception. The grader parses it
# (autograder/judge/integrity.py); learners read it. Keep the two in step.
_LINE = "Likely misconception [{id}]: {belief} (taught in \u00ab{section}\u00bb)."
_LINE_RE = re.compile(r"^Likely misconception \[(\d\d/[a-z0-9-]+)\]: ")


@dataclass(frozen=True)
class Misconception:
    """A belief a learner may hold that makes an answer wrong.

    ``key``: short and stable (reports count by it); ``belief``: what the learner believes,
    in their terms ("a reduction keeps the dimension it reduces"); ``section``: the heading,
    word for word, of the notebook section that teaches the truth.
    """

    key: str
    belief: str
    section: str
    notebook: str = ""  # the assignment, e.g. "01-why-tensors" (filled in by catalog())

    @property
    def id(self) -> str:
        return f"{self.notebook[:2]}/{self.key}"


@lru_cache(maxsize=1)
def catalog() -> dict[str, Misconception]:
    """Every misconception of the course by id, in notebook order."""
    found: dict[str, Misconception] = {}
    for name in NOTEBOOK_MODULES:
        module = importlib.import_module(f"{__name__}.{name}")
        for m in module.MISCONCEPTIONS:
            if not _KEY.match(m.key):
                raise ValueError(f"{name}: misconception key {m.key!r} must be lowercase words "
                                 "joined by hyphens, e.g. 'reduction-keeps-dim'")
            full = Misconception(m.key, m.belief, m.section, module.NOTEBOOK)
            if full.id in found:
                raise ValueError(f"{name}: misconception {full.id!r} is defined twice")
            found[full.id] = full
    return found


def get(misconception_id: str) -> Misconception:
    """The misconception with this id; a clear error for an unknown one."""
    try:
        return catalog()[misconception_id]
    except KeyError:
        if not _ID.match(str(misconception_id)):
            raise KeyError(f"{misconception_id!r} is not a misconception id: ids look like "
                           "'01/reduction-keeps-dim' (notebook number, slash, key)") from None
        known = [k for k in catalog() if k.startswith(str(misconception_id)[:3])]
        raise KeyError(f"unknown misconception {misconception_id!r}; notebook "
                       f"{str(misconception_id)[:2]} defines {known[:8]}"
                       f"{' ...' if len(known) > 8 else ''} (tensorcourse/misconceptions/"
                       f"nb{str(misconception_id)[:2]}.py)") from None


def line(misconception_id: str) -> str:
    """The line a check's message ends with when it names this misconception."""
    m = get(misconception_id)
    return _LINE.format(id=m.id, belief=m.belief, section=m.section)


def named_in(message: str) -> str:
    """The id a check's message names on its last line, or ``""``. Not validated: the
    caller looks it up with :func:`get` (a learner's own text could imitate the line)."""
    lines = str(message).rstrip().splitlines()
    match = _LINE_RE.match(lines[-1]) if lines else None
    return match.group(1) if match else ""


def anchor(section: str) -> str:
    """The HTML id Sphinx (docutils ``make_id``) gives a heading: lowercase ASCII words
    joined by hyphens, with leading digits and punctuation dropped ("4.3 Broadcasting
    stretches..." -> "broadcasting-stretches..."). tests/test_misconceptions.py holds it
    equal to docutils' own."""
    import unicodedata

    text = unicodedata.normalize("NFKD", section).encode("ascii", "ignore").decode("ascii")
    text = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return re.sub(r"^[^a-z]+", "", text)
