"""Plausible wrong answers per assignment, used to prove the hidden tests reject them.

Each module is named after its assignment (``-`` becomes ``_``, with a leading
``a``: ``01-why-tensors`` -> ``a01_why_tensors.py``) and defines ``WRONG``: a dict
from a solution cell's ``grade_id`` to a list of ``(misconception, why it is wrong, cell
source)``. The source replaces the whole solution cell. Write mistakes a learner would
really make, not the untouched stub (that one is tested anyway).

``misconception`` names the belief the mistake embodies (``tensorcourse.misconceptions``):
a key of the assignment's own notebook (``"reduction-keeps-dim"``) or a full id of another
notebook's (``"04/view-copies"``). tests/test_notebooks.py holds that the hidden check
rejecting the answer names exactly that misconception on the last line of its message.
"""

from __future__ import annotations

import importlib
from typing import NamedTuple


class Wrong(NamedTuple):
    misconception: str  # full id, "01/reduction-keeps-dim" ("" in a table not yet converted)
    why: str
    source: str


def module_name(assignment: str) -> str:
    return "a" + assignment.replace("-", "_")


def _full_id(assignment: str, key: str) -> str:
    return key if "/" in key or not key else f"{assignment[:2]}/{key}"


def wrong_answers(assignment: str) -> dict[str, list[Wrong]]:
    """The WRONG table of an assignment ({} when it has none yet)."""
    try:
        module = importlib.import_module(f"{__name__}.{module_name(assignment)}")
    except ModuleNotFoundError:
        return {}
    table: dict[str, list[Wrong]] = {}
    for gid, variants in module.WRONG.items():
        table[gid] = [Wrong(_full_id(assignment, v[0]), v[1], v[2]) if len(v) == 3
                      else Wrong("", v[0], v[1]) for v in variants]
    return table
