"""What a student with a given variant of a predict exercise submits, for the variant tests.

``answer_cell`` writes the answer cell a learner pastes (the dict the notebook prints for their
variant), filled with the answers given; ``right`` gives torch's answers for a variant;
``as_kind`` carries a wrong answer of variant 0 (tests/wrong_answers) over to another variant:
the same belief, applied to the expressions of the same kinds.
"""

from __future__ import annotations

import json
from typing import Any

from tensorcourse.variants import MEMORY, SPECS, PredictSpec, memory

# The dict each exercise's answer cell binds, and the name the release cell gives its
# expressions, by exercise id.
ANSWER_NAMES = {"01-why-tensors/ex1-dtypes": "predicted_dtypes",
                "02-creating-tensors/ex1-constructors": "predicted_constructors",
                "02-creating-tensors/ex4-layouts": "predicted_strides",
                "04-operations-and-autograd/ex4-graph-flags": "predicted_graph",
                "05-memory-and-performance/ex5-autocast": "predicted_autocast",
                "09-layout-devices-gradient-lifetime/ex3-to-predict": "predicted_to",
                "07-programmable-tensor-system/ex2-grad-fn": "predicted_grad_fn",
                "12-torch-func-and-kernels/ex1-vmap-shapes": "predicted_vmap",
                "06-troubleshooting/ex3-allocator": "predicted_memory",
                "03-indexing-and-views/ex2-sharing": "predicted_sharing",
                "03-indexing-and-views/ex5-view-copy-error": "predicted_outcomes"}
EXPRESSION_NAMES = {"01-why-tensors/ex1-dtypes": "EXPRESSIONS",
                    "02-creating-tensors/ex1-constructors": "CONSTRUCTOR_EXPRESSIONS",
                    "02-creating-tensors/ex4-layouts": "LAYOUT_EXPRESSIONS",
                    "04-operations-and-autograd/ex4-graph-flags": "GRAPH_EXPRESSIONS",
                    "05-memory-and-performance/ex5-autocast": "AUTOCAST_EXPRESSIONS",
                    "09-layout-devices-gradient-lifetime/ex3-to-predict": "TO_EXPRESSIONS",
                    "07-programmable-tensor-system/ex2-grad-fn": "GRAD_FN_EXPRESSIONS",
                    "12-torch-func-and-kernels/ex1-vmap-shapes": "VMAP_EXPRESSIONS",
                    "06-troubleshooting/ex3-allocator": "MEMORY_STEPS",
                    "03-indexing-and-views/ex2-sharing": "SHARING_EXPRESSIONS",
                    "03-indexing-and-views/ex5-view-copy-error": "SHAPE_EXPRESSIONS"}


def assignment(spec: PredictSpec) -> str:
    return spec.exercise.split("/", 1)[0]


def answer_id(spec: PredictSpec) -> str:
    """The grade_id of the exercise's answer cell."""
    return spec.exercise.split("/", 1)[1] + "-answer"


def answer_cell(spec: PredictSpec, params: dict, answers: list[Any]) -> str:
    rows = "".join(f"    {json.dumps(e)}: {a!r},\n" for e, a in zip(params["expressions"], answers))
    # (a dtype's repr, torch.int64, is how a learner writes it too)
    return f"{ANSWER_NAMES[spec.exercise]} = {{\n{rows}}}\n"


def right(spec: PredictSpec, params: dict) -> list[Any]:
    return spec.oracle(params)


def as_kind(spec: PredictSpec, wrong0: dict[str, Any], params: dict,
            misconception: str = "") -> list[Any]:
    """Variant 0's wrong answer dict ``wrong0`` as the same belief on ``params``' variant:
    where it differs from torch's answer on variant 0, the expression of the same kind gets
    the wrong value; every other expression gets torch's answer. The wrong value is the one
    the spec's ``beliefs`` give ``misconception`` on that variant when the spec has them (a
    wrong stride tuple of variant 0 is no belief about another shape), else variant 0's."""
    believed = {kind: wrong0[expr] for kind, expr, truth in zip(
        spec.kinds0, spec.variant0["expressions"], spec.answers0) if wrong0[expr] != truth}
    predicted = spec.beliefs(params) if spec.beliefs else [{} for _ in params["kinds"]]
    if spec is MEMORY:   # a script's belief is a chain of states, named where it starts
        chain = memory.chains(params)[misconception]
        predicted = [{misconception: state} for state in chain]
    return [(predicted[i][misconception] if spec.beliefs else believed[kind])
            if kind in believed else truth
            for i, (kind, truth) in enumerate(zip(params["kinds"], right(spec, params)))]


__all__ = ["ANSWER_NAMES", "EXPRESSION_NAMES", "SPECS", "answer_cell", "answer_id", "as_kind",
           "assignment", "right"]
