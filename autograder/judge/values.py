"""Value checks decided again outside the sandbox, against the solution's own run.

Why: a pass token proves a test ran to its end only if the learner's code could not reach the
interpreter. For checks about *values* the grader need not trust the kernel at all. Each call a
test makes to ``tc.check.same_tensor`` / ``same_value`` / ``raises`` is recorded in the kernel
as plain data (``TIO-VALUE`` lines: numbers, strings, nested lists; never pickles), for the
learner's run and for a run of the solution notebook (the reference, graded by the same
grader). The verdict of each such check is then computed here, in the grader's process: the
learner's ``actual`` against the **reference's** ``expected``, with the checker's own rules.
Forging it means printing values that pass against an oracle the learner's process never
computed: for a value exercise, that is solving it.

Contract:

* :func:`records` returns the recorded checks of one executed test cell (by its pass token).
* :func:`decide` returns ``""`` when every check of the reference is matched by the learner's
  records and passes here, else why not.
* :func:`partial` returns the points a failed test with parts earned (each check's
  ``points=``, decided here), for partial credit (``tensorcourse.check.parts``).

Checks whose expected value the grader cannot decode (tensors over 4096 elements, unknown
types) are left to the kernel's verdict, as are the test's plain ``assert`` statements
(structure: views, strides, graphs).
"""

from __future__ import annotations

import json
import math
from typing import Any

from nbformat.notebooknode import NotebookNode

TENSOR_TYPES = ("torch.Tensor", "torch.nn.parameter.Parameter")


def records(cell: NotebookNode, token: str) -> list[dict]:
    """The ``TIO-VALUE`` records a test cell printed with its pass token, in order."""
    from .integrity import _stdout

    prefix = f"TIO-VALUE {token} "
    found = []
    for line in _stdout(cell):
        if line.startswith(prefix):
            try:
                record = json.loads(line[len(prefix):])
            except Exception:  # noqa: BLE001 - the learner's output: too deep, too big, not JSON
                record = None
            found.append(record if isinstance(record, dict) else {"kind": "unreadable"})
    return found


def _decodable(enc: Any) -> bool:
    if not isinstance(enc, dict) or "u" in enc:
        return False
    items = enc.get("items", [])
    if enc.get("t") == "builtins.dict":
        return all(_decodable(k) and _decodable(v) for k, v in items)
    return all(_decodable(x) for x in items)


def _tensor(enc: dict) -> Any:
    import torch

    dtype = getattr(torch, str(enc["dtype"]).removeprefix("torch."))
    shape = [int(n) for n in enc["shape"]]
    values = enc["v"]
    if dtype.is_complex:
        real = torch.tensor(values, dtype=torch.float64).reshape(*shape, 2)
        return torch.view_as_complex(real).to(dtype)
    return torch.tensor(values, dtype=dtype).reshape(shape)


def _same_tensor(actual: dict, expected: dict, options: dict) -> str:
    from tensorcourse import check

    if actual.get("t") not in TENSOR_TYPES:
        return f"not a tensor ({actual.get('t')})"
    if options.get("check_device", True) and actual.get("device") != expected.get("device"):
        return f"device {actual.get('device')} (expected {expected.get('device')})"
    if "u" in actual:
        return "shape or size differs from the reference"
    try:
        check.same_tensor(_tensor(actual), _tensor(expected), rtol=options.get("rtol"),
                          atol=options.get("atol"), check_dtype=options.get("check_dtype", True),
                          check_device=False)
    except (AssertionError, ValueError, TypeError, RuntimeError, KeyError, AttributeError) as err:
        return str(err).splitlines()[0][:200]
    return ""


def _scalar(enc: dict) -> Any:
    return float(enc["v"]) if enc["t"] == "builtins.float" else enc["v"]


def _same_value(actual: Any, expected: dict) -> str:
    """``tc.check.same_value``'s rules on encoded values: exact types, then equality."""
    if not isinstance(actual, dict) or actual.get("t") != expected["t"]:
        return f"type {actual.get('t') if isinstance(actual, dict) else '?'} (expected {expected['t']})"
    kind = expected["t"]
    if kind in TENSOR_TYPES:
        return _same_tensor(actual, expected, {})
    if kind in ("builtins.list", "builtins.tuple"):
        a, e = actual.get("items", []), expected["items"]
        if len(a) != len(e):
            return f"length {len(a)} (expected {len(e)})"
        return next((why for x, y in zip(a, e) if (why := _same_value(x, y))), "")
    if kind == "builtins.dict":
        a = {json.dumps(k, sort_keys=True): v for k, v in actual.get("items", [])}
        e = {json.dumps(k, sort_keys=True): v for k, v in expected["items"]}
        if set(a) != set(e):
            return "keys differ"
        return next((why for k in e if (why := _same_value(a[k], e[k]))), "")
    if "v" not in actual:
        return "a value the grader cannot decode"
    a, e = _scalar(actual), _scalar(expected)
    if isinstance(e, float) and (math.isnan(e) or math.isnan(a)):
        return "wrong value"  # same_value compares with ==, and nan == nan is False
    return "" if a == e else "wrong value"


def _raises(actual: dict, expected: dict, options: dict) -> str:
    if actual.get("t") != "exception":
        return "did not raise"
    if expected.get("v") not in actual.get("mro", []):
        return f"raised {actual.get('mro', ['?'])[0]} (expected {expected.get('v')})"
    match = options.get("match")
    if match is not None and match not in str(actual.get("message", "")):
        return f"the message does not mention {match!r}"
    return ""


def decide(reference: list[dict], learner: list[dict]) -> str:
    """``""`` when the learner's records pass every decodable check of the reference.

    Never raises: records the grader cannot judge (nested too deep for its recursive decoding,
    shaped as no check is) fail, with the reason. The learner's records come from their
    process, so this is learner input, never a grader failure."""
    try:
        return _decide(reference, learner)
    except Exception as err:  # noqa: BLE001 - see the docstring
        return f"the recorded values could not be judged ({type(err).__name__})"


def _decide(reference: list[dict], learner: list[dict]) -> str:
    if len(learner) != len(reference):
        return (f"the test made {len(learner)} check(s), the reference {len(reference)}")
    for i, (ref, got) in enumerate(zip(reference, learner)):
        if got.get("kind") != ref.get("kind") or got.get("options") != ref.get("options"):
            return f"check {i + 1} is not the one the reference made"
        why = _judge(ref, got)
        if why and why != UNDECIDABLE:
            return f"check {i + 1} ({ref['kind']}): {why}"
    return ""


UNDECIDABLE = "left to the kernel"


def _judge(ref: dict, got: dict) -> str:
    """One learner record against the reference's: ``""`` passes."""
    expected = ref.get("expected")
    if not _decodable(expected) or ref.get("undecidable"):
        return UNDECIDABLE
    actual = got.get("actual", {})
    kind = ref["kind"]
    if kind == "same_tensor":
        return _same_tensor(actual, expected, ref.get("options") or {})
    if kind == "same_value":
        return _same_value(actual, expected)
    if kind == "raises":
        return _raises(actual, expected, ref.get("options") or {})
    return f"unknown check {kind!r}"


def partial(reference: list[dict], learner: list[dict]) -> float | None:
    """Points a test with parts earned (``tensorcourse.check.parts``), or ``None`` when the
    reference's checks carry no points. Each reference check with points is matched, in order,
    to the learner's next record of the same kind and options (its points and name included:
    a part whose check never ran, because the learner's code raised first, is skipped, not
    shifted onto the next) and decided here; only a pass decided here earns (a check the grader
    cannot decode earns nothing). The points are the reference's. Never raises."""
    try:
        if not any((r.get("options") or {}).get("points") for r in reference):
            return None
        earned, start = 0.0, 0
        for ref in reference:
            found = next((i for i in range(start, len(learner))
                          if learner[i].get("kind") == ref.get("kind")
                          and learner[i].get("options") == ref.get("options")), None)
            if found is None:
                continue
            start = found + 1
            points = (ref.get("options") or {}).get("points")
            if points and _judge(ref, learner[found]) == "":
                earned += float(points)
        return round(earned, 6)
    except Exception:  # noqa: BLE001 - learner records: what cannot be judged earns nothing
        return 0.0
