"""Plausible wrong answers per assignment, used to prove the hidden tests reject them.

Each module is named after its assignment (``-`` becomes ``_``, with a leading
``a``: ``01-why-tensors`` -> ``a01_why_tensors.py``) and defines ``WRONG``: a dict
from a solution cell's ``grade_id`` to a list of ``(why it is wrong, cell source)``.
The source replaces the whole solution cell. Write mistakes a learner would
really make, not the untouched stub (that one is tested anyway).
"""

from __future__ import annotations

import importlib

Variant = tuple[str, str]


def module_name(assignment: str) -> str:
    return "a" + assignment.replace("-", "_")


def wrong_answers(assignment: str) -> dict[str, list[Variant]]:
    """The WRONG table of an assignment ({} when it has none yet)."""
    try:
        module = importlib.import_module(f"{__name__}.{module_name(assignment)}")
    except ModuleNotFoundError:
        return {}
    return module.WRONG
