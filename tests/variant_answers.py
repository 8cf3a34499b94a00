"""What a student with a given variant of a predict exercise submits, for the variant tests.

``answer_cell`` writes the answer cell a learner pastes (the dict the notebook prints for their
variant), filled with the answers given; ``right`` gives torch's answers for a variant;
``as_kind`` carries a wrong answer of variant 0 (tests/wrong_answers) over to another variant:
the same belief, applied to the expressions of the same kinds.
"""

from __future__ import annotations

import json
from typing import Any

from tensorcourse.variants import SPECS, PredictSpec

# The dict each exercise's answer cell binds (notebook 03), by exercise id.
ANSWER_NAMES = {"03-indexing-and-views/ex2-sharing": "predicted_sharing",
                "03-indexing-and-views/ex5-view-copy-error": "predicted_outcomes"}


def answer_id(spec: PredictSpec) -> str:
    """The grade_id of the exercise's answer cell."""
    return spec.exercise.split("/", 1)[1] + "-answer"


def answer_cell(spec: PredictSpec, params: dict, answers: list[Any]) -> str:
    rows = "".join(f"    {json.dumps(e)}: {a!r},\n" for e, a in zip(params["expressions"], answers))
    return f"{ANSWER_NAMES[spec.exercise]} = {{\n{rows}}}\n"


def right(spec: PredictSpec, params: dict) -> list[Any]:
    return spec.oracle(params)


def as_kind(spec: PredictSpec, wrong0: dict[str, Any], params: dict) -> list[Any]:
    """Variant 0's wrong answer dict ``wrong0`` as the same belief on ``params``' variant:
    where it differs from torch's answer on variant 0, the expression of the same kind gets
    the wrong value; every other expression gets torch's answer."""
    believed = {kind: wrong0[expr] for kind, expr, truth in zip(
        spec.kinds0, spec.variant0["expressions"], spec.answers0) if wrong0[expr] != truth}
    return [believed.get(kind, truth) for kind, truth in zip(params["kinds"], right(spec, params))]


__all__ = ["ANSWER_NAMES", "SPECS", "answer_cell", "answer_id", "as_kind", "right"]
