"""explain_broadcast agrees with torch.broadcast_shapes, and its error text is torch's."""

from __future__ import annotations

import math
import random

import pytest
import torch

from tensorcourse import viz


def random_shape(rng: random.Random) -> tuple[int, ...]:
    return tuple(rng.choice([1, 1, 2, 3, 4]) for _ in range(rng.randint(0, 4)))


@pytest.mark.parametrize("n_shapes", [2, 3])
def test_verdict_matches_torch_on_random_shapes(n_shapes: int) -> None:
    rng = random.Random(1234 + n_shapes)
    ok = bad = 0
    for _ in range(400):
        shapes = [random_shape(rng) for _ in range(n_shapes)]
        report = viz.explain_broadcast(*shapes)
        try:
            expected = tuple(torch.broadcast_shapes(*shapes))
        except RuntimeError as err:
            bad += 1
            assert not report.ok and report.result_shape is None
            assert report.error == str(err)
            assert any(d.rule == "incompatible" for d in report.dims)
            continue
        ok += 1
        assert report.ok and report.result_shape == expected
        assert tuple(d.result for d in report.dims) == expected
        assert all(d.rule != "incompatible" for d in report.dims)
        # Strides and bytes from a real expand (checked here on real CPU tensors).
        for op, shape in zip(report.operands, shapes):
            real = torch.empty(shape).expand(expected)
            assert op.expanded_stride == tuple(real.stride())
            assert op.allocated_bytes == real.untyped_storage().nbytes() == math.prod(shape) * 4
            assert op.logical_bytes == math.prod(expected) * 4
        assert report.result_bytes == math.prod(expected) * 4
    assert ok > 50 and bad > 50  # both branches were exercised


def test_rules_per_dim() -> None:
    r = viz.explain_broadcast((3, 1), (4,))
    assert [d.rule for d in r.dims] == ["missing", "stretched from 1"]
    assert [d.sizes for d in r.dims] == [(3, None), (1, 4)]
    assert r.operands[0].expanded_stride == (1, 0) and r.operands[1].expanded_stride == (0, 1)
    assert r.operands[0].stretched_dims == (1,) and r.operands[1].stretched_dims == (0,)
    assert viz.explain_broadcast((2, 3), (2, 3)).dims[0].rule == "equal"
    # A stretched operand allocates nothing new: 3 floats, though it looks like 12.
    assert (r.operands[0].allocated_bytes, r.operands[0].logical_bytes) == (12, 48)


def test_incompatible_uses_torch_text() -> None:
    r = viz.explain_broadcast((2, 3), (4, 3))
    with pytest.raises(RuntimeError) as info:
        torch.broadcast_shapes((2, 3), (4, 3))
    assert r.error == str(info.value)
    with pytest.raises(RuntimeError) as info2:
        torch.zeros(2, 3) + torch.zeros(4, 3)
    assert r.op_error == str(info2.value)
    assert r.dims[0].rule == "incompatible" and r.dims[0].result is None
    assert "✗" in r.table() and "incompatible" in r.to_html()


def test_dtype_bytes_and_meta_for_huge_shapes() -> None:
    r = viz.explain_broadcast((100_000, 1), (1, 100_000), dtype="float16")
    assert r.result_bytes == 100_000 * 100_000 * 2  # 20 GB: never allocated here
    assert r.operands[0].allocated_bytes == 200_000
    assert viz.explain_broadcast((3,), (3,), dtype=torch.int8).result_bytes == 3


def test_accepts_sizes_tensors_and_text() -> None:
    a = torch.zeros(3, 1)
    r = viz.explain_broadcast(a, torch.Size([4]), "2, 1, 1")
    assert r.result_shape == (2, 3, 4)
    assert viz.explain_broadcast((), (2,)).result_shape == (2,)


def test_text_and_html_render() -> None:
    r = viz.explain_broadcast((3, 1), (4,))
    text = str(r)
    assert "(3, 4)" in text and "stretched from 1" in text
    assert "<table" in r.to_html()


def test_bad_inputs() -> None:
    with pytest.raises(ValueError, match="2 or 3 shapes"):
        viz.explain_broadcast((3,))
    with pytest.raises(ValueError, match="2 or 3 shapes"):
        viz.explain_broadcast((1,), (1,), (1,), (1,))
    with pytest.raises(ValueError, match="negative"):
        viz.explain_broadcast((3, -1), (3,))
    with pytest.raises(ValueError, match="dtype"):
        viz.explain_broadcast((3,), (3,), dtype="float99")
    with pytest.raises(TypeError, match="tuple of ints"):
        viz.explain_broadcast((3,), 2.5)
    with pytest.raises(ValueError, match="whole numbers"):
        viz.explain_broadcast("3, x", (3,))
