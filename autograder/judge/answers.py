"""A submission is its answers: read them out of a learner's notebook, rebuild what runs.

Contract:

* :func:`read_answers` parses the learner's notebook bytes and returns the source of each
  answer cell of the release, matched by nbgrader ``grade_id``, plus notes for the instructor
  on what did not match (missing or duplicated answers, extra cells, edited locked cells,
  cells whose kind changed). Nothing else of the learner's file is used: not other cells,
  metadata, outputs, attachments or kernelspec.
* :func:`rebuild` returns the notebook that is executed: the instructor's release, with the
  learner's answer sources (or a stub where an answer is missing or rejected by the screen)
  and the hidden tests from ``solutions/`` in the test cells.

Both are pure: no file or process is touched.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field

import nbformat
from nbformat.notebooknode import NotebookNode

from .learner_source import MAX_CHARS

# One answer cell's source, at most: far above any real answer (the longest solution is a few
# KiB), far below what makes the host's screen and rewrite (and the report's similarity
# search) cost gigabytes (a 6 MB answer cost 1.35 GB to screen).
MAX_ANSWER_CHARS = MAX_CHARS
MISSING_STUB = "raise NotImplementedError('no answer for this exercise was found in the submission')"


def meta(cell: NotebookNode) -> dict:
    return cell.get("metadata", {}).get("nbgrader", {}) or {}


def is_answer(cell: NotebookNode) -> bool:
    return bool(meta(cell).get("solution")) and bool(meta(cell).get("grade_id"))


def is_test(cell: NotebookNode) -> bool:
    m = meta(cell)
    return cell.cell_type == "code" and bool(m.get("grade")) and not m.get("solution")


def _source(cell: dict) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else str(src)


@dataclass
class Answers:
    """The learner's answers by grade id, and what the instructor should know about the file."""

    sources: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


class NotANotebook(ValueError):
    """The bytes are not a notebook this grader can read; the message says why."""


def parse(data: bytes) -> dict:
    """The notebook JSON as plain dicts; raises :class:`NotANotebook` with a one-line reason."""
    try:
        nb = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise NotANotebook(str(err).splitlines()[0] if str(err) else type(err).__name__) from None
    except RecursionError:  # JSON nested thousands deep: not a notebook, and not our failure
        raise NotANotebook("JSON nested too deeply to be a notebook") from None
    except ValueError as err:  # e.g. an integer past Python's 4,300-digit limit
        raise NotANotebook(f"unreadable JSON ({str(err).splitlines()[0][:120]})") from None
    if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list):
        raise NotANotebook("no list of cells (not nbformat 4)")
    if nb.get("nbformat") != 4:
        raise NotANotebook(f"nbformat {nb.get('nbformat')!r}, expected 4")
    for i, cell in enumerate(nb["cells"]):
        if not _well_formed(cell):
            raise NotANotebook(f"cell {i} is malformed (a cell is an object with a metadata "
                               "object and a text source)")
    return nb


def _well_formed(cell: object) -> bool:
    """Shaped as the rest of this module reads it (anything else is not a notebook)."""
    if not isinstance(cell, dict) or not isinstance(cell.get("metadata") or {}, dict):
        return False
    nbmeta = (cell.get("metadata") or {}).get("nbgrader") or {}
    source = cell.get("source", "")
    return (isinstance(nbmeta, dict) and isinstance(nbmeta.get("grade_id") or "", str)
            and (isinstance(source, str)
                 or isinstance(source, list) and all(isinstance(x, str) for x in source)))


def read_answers(data: bytes, release: NotebookNode) -> Answers:
    """Answers of ``release``'s answer cells found in the learner's notebook ``data``.

    Raises only :class:`NotANotebook`: whatever else fails on these bytes (memory, recursion, a
    shape no check here foresaw) is the learner's file refused, never a grader failure."""
    try:
        return _read_answers(data, release)
    except NotANotebook:
        raise
    except Exception as err:  # noqa: BLE001 - see the docstring
        raise NotANotebook(f"the grader could not read it ({type(err).__name__})") from None


GIVEN = ", given="


def _without_given(source: str) -> str:
    """A cell of a notebook released for one student (``variants --release``) passes their
    variant to ``tc.variants.yours(..., given=[...])``: without that argument, it is the
    release's cell. (Only what it shows changes; grading runs the release's cell.) Never
    raises: the text is the learner's."""
    at = source.find(GIVEN)
    if at < 0 or "tc.variants.yours(" not in source:
        return source
    try:
        _value, end = json.JSONDecoder().raw_decode(source, at + len(GIVEN))
    except Exception:  # noqa: BLE001 - not JSON, nested too deep: then it is simply changed
        return source
    return source[:at] + source[end:]


def _read_answers(data: bytes, release: NotebookNode) -> Answers:
    student = parse(data)
    wanted = {meta(c)["grade_id"]: c for c in release.cells if is_answer(c)}
    locked = {meta(c)["grade_id"]: c for c in release.cells
              if meta(c).get("grade_id") and not is_answer(c)}
    released_sources = {_source(c) for c in release.cells}
    found = Answers()
    extra = 0
    edited: list[str] = []
    oversized: list[str] = []
    for cell in student["cells"]:  # each well formed (parse)
        gid = ((cell.get("metadata") or {}).get("nbgrader") or {}).get("grade_id")
        if isinstance(gid, str) and gid in wanted:
            if cell.get("cell_type") != wanted[gid].cell_type:
                found.notes.append(f"answer {gid} is a {cell.get('cell_type')} cell, expected "
                                   f"{wanted[gid].cell_type}; ignored")
            elif gid in found.sources:
                found.notes.append(f"answer {gid} appears more than once; the first is graded")
            elif len(_source(cell)) > MAX_ANSWER_CHARS:
                found.notes.append(f"answer {gid} is {len(_source(cell)) // 1024} KiB, over the "
                                   f"{MAX_ANSWER_CHARS // 1024} KiB limit for one answer cell; "
                                   "not run (graded as unanswered)")
                oversized.append(gid)
            else:
                found.sources[gid] = _source(cell)
        elif isinstance(gid, str) and gid in locked:
            if _source(cell) != _source(locked[gid]) and gid not in edited:
                edited.append(gid)
        elif _without_given(_source(cell)) not in released_sources:
            extra += 1
    seen_locked = {((c.get("metadata") or {}).get("nbgrader") or {}).get("grade_id")
                   for c in student["cells"] if isinstance(c, dict)
                   and isinstance((c.get("metadata") or {}).get("nbgrader"), dict)}
    deleted = [g for g in locked if g not in seen_locked]
    if deleted:
        found.notes.append(f"locked cell(s) {', '.join(deleted)} were deleted; the released "
                           "version was run")
    missing = [g for g in wanted if g not in found.sources and g not in oversized]
    if missing:
        found.notes.append(f"no answer cell for {', '.join(missing)} (graded as unanswered)")
    if edited:
        found.notes.append(f"locked cell(s) {', '.join(edited)} were edited; the released "
                           "version was run")
    if extra:
        found.notes.append(f"{extra} cell(s) added or changed outside the answer cells were "
                           "ignored (only answer cells are graded)")
    return found


def rebuild(release: NotebookNode, solution: NotebookNode, answers: dict[str, str]) -> NotebookNode:
    """The notebook to execute: ``release`` + learner answers + hidden tests from ``solution``.

    ``answers`` maps answer grade ids to the source to run (a stub for missing ones is put in
    here). Test cells get the full source of the same grade id in ``solution``. Outputs,
    execution counts and notebook metadata come from the release, cleared.
    """
    hidden = {meta(c)["grade_id"]: _source(c) for c in solution.cells if is_test(c)}
    nb = copy.deepcopy(release)
    for cell in nb.cells:
        gid = meta(cell).get("grade_id")
        if is_answer(cell):
            cell.source = answers.get(gid, MISSING_STUB)
        elif is_test(cell):
            if gid not in hidden:
                raise ValueError(f"test cell {gid} of the release is not in solutions/; "
                                 "run `python -m autograder generate`")
            cell.source = hidden[gid]
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
    nb.metadata = nbformat.from_dict({"kernelspec": {"name": "python3", "language": "python",
                                                     "display_name": "Python 3"},
                                      "language_info": {"name": "python"}})
    return nb


def exercises(nb: NotebookNode) -> dict[str, list[str]]:
    """``{test grade_id: [answer grade_ids it grades]}``: the answers since the previous test."""
    out: dict[str, list[str]] = {}
    pending: list[str] = []
    for cell in nb.cells:
        if is_answer(cell):
            pending.append(meta(cell)["grade_id"])
        elif is_test(cell):
            out[meta(cell)["grade_id"]] = pending
            pending = []
    return out
