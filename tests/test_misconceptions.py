"""The course's misconception catalog and how a check names one (tensorcourse.misconceptions).

Fast: no kernel. That every wrong answer is rejected by a check naming its misconception is
tests/test_notebooks.py (its probe run); that the feedback page shows it, tests/test_grading_units.py.
"""

from __future__ import annotations

import re

import pytest
import torch

import tensorcourse.check as check
from coursefiles import assignments, read, solution_path
from tensorcourse import misconceptions
from tensorcourse.misconceptions import Misconception, catalog, named_in
from wrong_answers import wrong_answers


def _headings(assignment: str) -> set[str]:
    found = set()
    for cell in read(solution_path(assignment)).cells:
        if cell.cell_type == "markdown":
            found |= {m.group(1).strip() for m in re.finditer(r"^#+\s+(.+)$", cell.source, re.M)}
    return found


@pytest.mark.parametrize("assignment", assignments())
def test_each_misconception_points_at_a_section_of_its_notebook(assignment):
    headings = _headings(assignment)
    mine = [m for m in catalog().values() if m.notebook == assignment]
    wrong = [f"{m.id}: {m.section!r}" for m in mine if m.section not in headings]
    assert not wrong, ("sections that are not a heading of the notebook (copy the heading's text "
                       "without the #s):\n  " + "\n  ".join(wrong))
    assert all(m.belief and not m.belief.endswith(".") for m in mine), \
        "a belief is a phrase the message's line ends for it (no final full stop)"


def test_every_misconception_is_embodied_by_a_wrong_answer():
    named = {w.misconception for a in assignments() for v in wrong_answers(a).values() for w in v}
    unused = sorted(set(catalog()) - named)
    assert not unused, f"misconceptions no wrong answer embodies (write one or drop them): {unused}"


def test_the_catalog_module_of_each_notebook_names_that_notebook():
    import importlib

    for i, name in enumerate(misconceptions.NOTEBOOK_MODULES, start=1):
        module = importlib.import_module(f"tensorcourse.misconceptions.{name}")
        assert module.NOTEBOOK == assignments()[i - 1]


def test_an_unknown_id_is_a_clear_error():
    with pytest.raises(KeyError, match="ids look like"):
        misconceptions.get("reduction")
    with pytest.raises(KeyError, match="unknown misconception"):
        misconceptions.get("01/no-such-belief")


def test_anchor_is_the_id_sphinx_gives_the_heading():
    nodes = pytest.importorskip("docutils.nodes")
    for a in assignments():
        for heading in _headings(a):
            plain = heading.replace("`", "")  # MyST renders code spans; their text stays
            assert misconceptions.anchor(heading) == nodes.make_id(plain), heading


# -- how a check names one -----------------------------------------------------------------

@pytest.fixture
def two(monkeypatch):
    """A catalog of two misconceptions, whatever the course's holds."""
    fake = {"01/keeps-dim": Misconception("keeps-dim", "a reduction keeps its dimension",
                                          "Setup", "01-why-tensors"),
            "01/in-place": Misconception("in-place", "changing the input is harmless",
                                         "Setup", "01-why-tensors")}
    monkeypatch.setattr(misconceptions, "catalog", lambda: fake)
    return fake


def _message(fn) -> str:
    with pytest.raises(AssertionError) as info:
        fn()
    return str(info.value)


def test_same_tensor_names_the_misconception_whose_prediction_matches(two):
    x = torch.tensor([[0.0, 2.0], [4.0, 8.0]])
    right = x - x.mean(dim=1, keepdim=True)
    predictions = {"01/keeps-dim": x - x.mean(dim=1)}
    wrong = _message(lambda: check.same_tensor(x - x.mean(dim=1), right, diagnose=predictions,
                                               misconception="01/in-place"))
    assert named_in(wrong) == "01/keeps-dim"
    assert wrong.splitlines()[-1] == ("Likely misconception [01/keeps-dim]: a reduction keeps its "
                                      "dimension (taught in \u00abSetup\u00bb).")
    other = _message(lambda: check.same_tensor(x, right, diagnose=predictions,
                                               misconception="01/in-place"))
    assert named_in(other) == "01/in-place"  # no prediction matches: the default
    assert named_in(_message(lambda: check.same_tensor(x, right))) == ""
    assert check.same_tensor(right.clone(), right, diagnose=predictions)  # right: no naming


def test_same_value_and_raises_name_theirs(two):
    assert named_in(_message(lambda: check.same_value(
        torch.int64, torch.float32, diagnose={"01/keeps-dim": torch.int64}))) == "01/keeps-dim"
    assert named_in(_message(lambda: check.raises(
        ValueError, lambda: 1, misconception="01/in-place"))) == "01/in-place"


def test_a_typo_in_an_id_fails_for_the_author_even_when_the_answer_is_right(two):
    with pytest.raises(KeyError):
        check.same_tensor(torch.ones(1), torch.ones(1) * 2, misconception="01/keep-dim")
    with pytest.raises(KeyError):
        check.misconception("01/inplace")


def test_the_block_form_keeps_the_courses_message_and_hides_the_learners(two):
    def learner_raises():
        raise AssertionError("the hidden test's inputs, quoted")

    def broadcast_error():
        return torch.ones(2) + torch.ones(3)

    def in_block(fn):
        def run():
            with check.misconception("01/in-place", name="center_rows"):
                fn()
        return run

    def course_assert():
        with check.misconception("01/in-place"):
            assert 1 == 2, "center_rows must not modify its input in place"  # noqa: PLR0133

    ours = _message(course_assert)
    assert ours.splitlines()[0] == "center_rows must not modify its input in place"
    assert named_in(ours) == "01/in-place"
    theirs = _message(in_block(learner_raises))
    assert "quoted" not in theirs and theirs.startswith("center_rows: your code raised AssertionError")
    assert named_in(theirs) == "01/in-place"
    error = _message(in_block(broadcast_error))
    assert error.startswith("center_rows: your code raised RuntimeError") and "size" not in error
    # A message that already names one keeps it.
    def named_inside():
        with check.misconception("01/in-place"):
            check.same_tensor(torch.ones(1), torch.zeros(1), misconception="01/keeps-dim")
    assert named_in(_message(named_inside)) == "01/keeps-dim"


def test_a_forged_file_name_does_not_make_learner_code_the_courses(two):
    # compile() lets code claim any file name, check.py's included: identity decides.
    forged = compile("def f():\n    raise AssertionError('leaked')\n", check.__file__, "exec")
    ns: dict = {}
    exec(forged, ns)

    def run():
        with check.misconception("01/in-place"):
            ns["f"]()
    assert "leaked" not in _message(run)


def test_keyboard_interrupt_passes_through_unnamed(two):
    with pytest.raises(KeyboardInterrupt):
        with check.misconception("01/in-place"):
            raise KeyboardInterrupt


def test_an_equal_copy_of_the_checkers_is_not_the_courses_code(two):
    # compile() of this very source makes code objects *equal* to the checkers' own: identity,
    # not equality, decides whose message is quoted.
    from pathlib import Path

    ns: dict = {"__name__": "tensorcourse.check", "__package__": "tensorcourse"}
    exec(compile(Path(check.__file__).read_text(), check.__file__, "exec"), ns)

    def run():
        with check.misconception("01/in-place"):
            ns["same_value"](1, 0, name="THEIR TEXT")
    message = _message(run)
    assert "THEIR TEXT" not in message and message.startswith("the check: your code raised")
