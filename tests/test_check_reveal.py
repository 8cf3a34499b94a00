"""tc.check.reveal: the self-learner's "Check yourself" cell after a predict exercise."""

from __future__ import annotations

import pytest
import torch

import tensorcourse as tc


def test_reveals_nothing_until_every_answer_is_committed(capsys):
    assert tc.check.reveal({"a": None, "b": 2}, {"a": 1, "b": 2}) is None
    out = capsys.readouterr().out
    assert "Commit to every answer first" in out and "'a'" in out
    assert "right" not in out and "WRONG" not in out


def test_missing_key_counts_as_not_committed(capsys):
    assert tc.check.reveal({"b": 2}, {"a": 1, "b": 2}) is None
    assert "still missing" in capsys.readouterr().out


def test_counts_right_answers_with_exact_types(capsys):
    yours = {"dtype": torch.float32, "shape": (2, 3), "flag": 1, "name": None}
    truth = {"dtype": torch.float32, "shape": (2, 4), "flag": True, "name": None}
    assert tc.check.reveal(yours, truth, name="predicted") is None
    out = capsys.readouterr().out
    assert out.count("WRONG") == 2          # (2, 3) != (2, 4); 1 is not True
    assert out.count("right") == 3          # two rows, and the last line
    assert "2 of 4 right" in out


def test_all_right(capsys):
    assert tc.check.reveal({"x": (True, None)}, {"x": (True, None)}) is None
    assert "1 of 1 right." in capsys.readouterr().out


def test_not_a_dict_is_explained(capsys):
    assert tc.check.reveal(None, {"a": 1}) is None
    assert "should be a dict" in capsys.readouterr().out


def test_truth_must_be_a_mapping():
    with pytest.raises(TypeError, match="must be a dict"):
        tc.check.reveal({}, [1, 2])



def test_returns_none_so_a_check_cell_echoes_no_number():
    """A Check-yourself cell ends with the call: a returned count would show as a stray Out[ ]."""
    for yours in ({"a": 1, "b": 2}, {"a": 1, "b": 3}, {"a": None, "b": 2}, None):
        assert tc.check.reveal(yours, {"a": 1, "b": 2}) is None
