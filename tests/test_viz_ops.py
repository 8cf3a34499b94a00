"""apply_op: real torch operations, layouts read off the real results."""

from __future__ import annotations

import pytest
import torch

from tensorcourse import viz
from tensorcourse.viz.ops import OPS, default_params, view_blockers


def whole_storage(t: torch.Tensor) -> torch.Tensor:
    return torch.empty(0, dtype=t.dtype).set_(t.untyped_storage())


@pytest.fixture
def x() -> torch.Tensor:
    return torch.arange(24).reshape(4, 6)


def test_every_op_runs_with_defaults(x: torch.Tensor) -> None:
    for op in OPS:
        res = viz.apply_op(x, op)
        assert res.ok, (op, res.error)
        out = res.result
        assert res.shape == tuple(out.shape) and res.stride == tuple(out.stride())
        assert res.offset == out.storage_offset() and res.is_contiguous == out.is_contiguous()
        # Sharing is decided from the real storages.
        same = out.untyped_storage().data_ptr() == x.untyped_storage().data_ptr()
        assert res.shares_storage_with_input is same
        # And the layout the explorer draws is what torch reads.
        assert torch.equal(whole_storage(out)[viz.storage_index_map(out)], out)


@pytest.mark.parametrize("op, params, shape, stride, offset, shared", [
    ("transpose", {"dim0": 0, "dim1": 1}, (6, 4), (1, 6), 0, True),
    ("permute", {"dims": "1, 0"}, (6, 4), (1, 6), 0, True),
    ("slice", {"dim": 1, "start": 1, "stop": 6, "step": 2}, (4, 3), (6, 2), 1, True),
    ("slice", {"dim": 0, "start": 1, "stop": None, "step": 2}, (2, 6), (12, 1), 6, True),
    ("narrow", {"dim": 1, "start": 2, "length": 3}, (4, 3), (6, 1), 2, True),
    ("select", {"dim": 1, "index": 3}, (4,), (6,), 3, True),
    ("unsqueeze", {"dim": 1}, (4, 1, 6), (6, 6, 1), 0, True),
    ("expand", {"shape": (2, 4, 6)}, (2, 4, 6), (0, 6, 1), 0, True),
    ("diagonal", {"offset": 1, "dim1": 0, "dim2": 1}, (4,), (7,), 1, True),
    ("unfold", {"dimension": 1, "size": 3, "step": 2}, (4, 2, 3), (6, 2, 1), 0, True),
    ("as_strided", {"size": "3, 3", "stride": "1, 1", "storage_offset": 4}, (3, 3), (1, 1), 4,
     True),
    ("view", {"shape": "3, 8"}, (3, 8), (8, 1), 0, True),
    ("reshape", {"shape": (2, -1)}, (2, 12), (12, 1), 0, True),
    ("index_select", {"dim": 1, "indices": "5, 0"}, (4, 2), (2, 1), 0, False),
])
def test_op_layouts(x: torch.Tensor, op: str, params: dict, shape: tuple, stride: tuple,
                    offset: int, shared: bool) -> None:
    res = viz.apply_op(x, op, **params)
    assert res.ok, res.error
    assert (res.shape, res.stride, res.offset, res.shares_storage_with_input) == \
        (shape, stride, offset, shared)


def test_contiguous_copies_only_when_needed(x: torch.Tensor) -> None:
    same = viz.apply_op(x, "contiguous")
    assert same.shares_storage_with_input and any("no copy" in n for n in same.notes)
    copy = viz.apply_op(x.t(), "contiguous")
    assert copy.ok and not copy.shares_storage_with_input and copy.stride == (4, 1)
    assert any("copied" in n for n in copy.notes)


def test_expand_notes_stride_zero(x: torch.Tensor) -> None:
    res = viz.apply_op(x[:1], "expand", shape="3, 6")
    assert res.stride == (0, 1)
    assert any("stride 0" in n and "nothing was allocated" in n for n in res.notes)


def test_overlapping_views_are_noted(x: torch.Tensor) -> None:
    res = viz.apply_op(x, "unfold", dimension=1, size=3, step=2)
    assert any("overlap: its 24 elements read only 20 distinct" in n for n in res.notes)
    assert not any("overlap" in n for n in viz.apply_op(x, "transpose").notes)


def test_view_failure_explained_and_reshape_copies(x: torch.Tensor) -> None:
    res = viz.apply_op(x.t(), "view", shape="24")
    assert not res.ok and res.result is None
    with pytest.raises(RuntimeError) as info:
        x.t().view(24)
    assert res.torch_message == str(info.value).splitlines()[0]
    assert "back to back" in res.error and "dims 0 and 1" in res.error
    assert "stride[0] = 1" in res.error and "4·6 = 24" in res.error
    assert res.reshape_result is not None and res.reshape_shares_storage is False
    assert res.reshape_result.untyped_storage().data_ptr() != x.untyped_storage().data_ptr()
    assert torch.equal(res.reshape_result, x.t().reshape(24))
    assert any("reshape" in n and "copies" in n for n in res.notes)


def test_view_blockers() -> None:
    assert view_blockers((4, 6), (6, 1)) == []
    assert view_blockers((4, 1, 6), (6, 99, 1)) == []  # size-1 dims never block
    assert len(view_blockers((6, 4), (1, 6))) == 1


def test_view_wrong_numel(x: torch.Tensor) -> None:
    res = viz.apply_op(x, "view", shape=(5, 5))
    assert not res.ok and "different number of elements" in res.error
    assert res.torch_message == "shape '[5, 5]' is invalid for input of size 24"
    assert res.reshape_result is None


def test_as_strided_out_of_bounds_uses_torch_message(x: torch.Tensor) -> None:
    res = viz.apply_op(x[2:], "as_strided", size=(3, 3), stride=(2, 1), storage_offset=20)
    assert not res.ok
    with pytest.raises(RuntimeError) as info:
        x[2:].as_strided((3, 3), (2, 1), 20)
    assert res.torch_message == str(info.value)
    assert "out of bounds for storage" in res.torch_message
    assert "20 + 2·2 + 2·1 = 26" in res.error and "24 elements" in res.error
    # as_strided checks the whole storage, not the input view: this one is in bounds.
    ok = viz.apply_op(x[2:], "as_strided", size=(3,), stride=(1,), storage_offset=0)
    assert ok.ok and ok.result.tolist() == [0, 1, 2]


def test_refusals_never_raise(x: torch.Tensor) -> None:
    cases = [("slice", {"step": 0}), ("slice", {"dim": 5}), ("expand", {"shape": "2, 6"}),
             ("transpose", {"dim0": 7}), ("permute", {"dims": "0, 0"}),
             ("narrow", {"start": 3, "length": 5}), ("select", {"index": 9}),
             ("unfold", {"size": 9}), ("as_strided", {"stride": "-1, 1"}),
             ("index_select", {"indices": "9"}), ("transpose", {"dim0": "x"}),
             ("view", {"shape": "3, y"})]
    for op, params in cases:
        res = viz.apply_op(x, op, **params)
        assert not res.ok and res.error, (op, params)
        assert str(res).startswith(res.code)


def test_bad_arguments_raise(x: torch.Tensor) -> None:
    with pytest.raises(ValueError, match="unknown operation"):
        viz.apply_op(x, "flip")
    with pytest.raises(TypeError, match="unexpected"):
        viz.apply_op(x, "transpose", dims=(1, 0))
    with pytest.raises(TypeError, match="torch.Tensor"):
        viz.apply_op([1, 2, 3], "transpose")  # type: ignore[arg-type]


def test_default_params_fit_any_rank() -> None:
    for t in (torch.arange(5), torch.arange(60).reshape(3, 4, 5), torch.tensor(3)):
        for op in OPS:
            default_params(op, t)  # never raises
