"""The pure core: the storage element the visualizer assigns to each logical element
is the one torch really reads, for every kind of view."""

from __future__ import annotations

import random

import numpy as np
import pytest
import torch

from tensorcourse import viz


def whole_storage(t: torch.Tensor) -> torch.Tensor:
    """t's entire storage as a flat 1-D tensor, read through torch (not through our code)."""
    return torch.empty(0, dtype=t.dtype, device=t.device).set_(t.untyped_storage())


def assert_map_matches_storage(t: torch.Tensor) -> None:
    index_map = viz.storage_index_map(t)
    assert index_map.dtype == torch.int64
    assert index_map.shape == t.shape
    assert torch.equal(whole_storage(t)[index_map], t)


def random_view(rng: random.Random, base: torch.Tensor) -> torch.Tensor:
    """A chain of 1-4 random view operations on ``base`` (never a copy)."""
    t = base
    for _ in range(rng.randint(1, 4)):
        nd = t.dim()
        choice = rng.choice(["permute", "slice", "expand", "narrow", "select", "diagonal",
                             "unfold", "as_strided", "t"])
        if choice == "permute" and nd:
            dims = list(range(nd))
            rng.shuffle(dims)
            t = t.permute(dims)
        elif choice == "slice" and nd:
            d = rng.randrange(nd)
            n = t.shape[d]
            start, step = rng.randrange(n), rng.randint(1, 3)
            t = t[(slice(None),) * d + (slice(start, None, step),)]
        elif choice == "expand" and nd < 5:
            d = rng.randint(0, nd)
            t = t.unsqueeze(d)
            shape = list(t.shape)
            shape[d] = rng.randint(1, 4)
            t = t.expand(shape)
        elif choice == "narrow" and nd:
            d = rng.randrange(nd)
            n = t.shape[d]
            start = rng.randrange(n)
            t = t.narrow(d, start, rng.randint(1, n - start))
        elif choice == "select" and nd > 1:
            d = rng.randrange(nd)
            t = t.select(d, rng.randrange(t.shape[d]))
        elif choice == "diagonal" and nd >= 2:
            t = t.diagonal(0, 0, 1)
        elif choice == "unfold" and nd:
            d = rng.randrange(nd)
            n = t.shape[d]
            t = t.unfold(d, rng.randint(1, n), rng.randint(1, 2))
        elif choice == "as_strided":
            size = [rng.randint(1, 4) for _ in range(rng.randint(1, 3))]
            stride = [rng.randint(0, 5) for _ in size]
            n = viz.storage_numel(t)
            need = sum((k - 1) * s for k, s in zip(size, stride))
            if need < n:
                t = t.as_strided(size, stride, rng.randint(0, n - 1 - need))
        elif choice == "t" and nd == 2:
            t = t.t()
    return t


def test_random_views_read_what_torch_reads() -> None:
    rng = random.Random(0)
    checked = 0
    for _ in range(300):
        shape = [rng.randint(1, 5) for _ in range(rng.randint(1, 4))]
        n, skip = int(np.prod(shape)), rng.randint(0, 2)
        # arange fills the whole storage, so every value equals its storage index; the
        # skip gives some bases a non-zero storage offset.
        base = torch.arange(n + 2)[skip: skip + n].reshape(shape)
        view = random_view(rng, base)
        if view.numel() == 0:
            continue
        assert_map_matches_storage(view)
        assert torch.equal(view, viz.storage_index_map(view))
        checked += 1
    assert checked > 250


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int8, torch.bool,
                                   torch.complex64])
def test_random_values_any_dtype(dtype: torch.dtype) -> None:
    g = torch.Generator().manual_seed(1)
    base = (torch.randn(5, 6, 7, generator=g) * 10).to(dtype)
    for view in (base.permute(2, 0, 1), base[1:, ::2, 3::3], base[:, :1].expand(5, 4, 7),
                 base.as_strided((3, 4), (7, 2), 5), base.unfold(2, 3, 2), base.diagonal(1, 1, 2)):
        assert_map_matches_storage(view)


def test_map_is_offset_plus_index_times_stride() -> None:
    x = torch.arange(60).reshape(3, 4, 5)
    v = x.transpose(0, 2)[1:, ::2]
    m = viz.storage_index_map(v)
    for idx in np.ndindex(*v.shape):
        expected = v.storage_offset() + sum(i * s for i, s in zip(idx, v.stride()))
        assert m[idx].item() == expected == v[idx].item()


def test_map_on_meta_and_empty_and_scalar() -> None:
    meta = torch.empty(3, 4, device="meta").t()
    assert torch.equal(viz.storage_index_map(meta), torch.arange(12).reshape(3, 4).t())
    assert viz.storage_index_map(torch.empty(0, 3)).shape == (0, 3)
    s = torch.arange(10)[7]
    assert viz.storage_index_map(s).item() == 7 and viz.storage_index_map(s).dim() == 0


def test_address_formula() -> None:
    x = torch.arange(24).reshape(4, 6)
    v = x[:, 2:]
    assert viz.address_formula(v, (1, 3)) == "2 + 1·6 + 3·1 = 11"
    assert v[1, 3].item() == 11
    assert viz.storage_index(v, "1, 3") == 11
    assert viz.address_formula(v, (-1, -1)) == "2 + 3·6 + 3·1 = 23"
    assert viz.address_formula(torch.arange(5)[3], ()) == "3 = 3"
    assert viz.address_formula(torch.arange(3).expand(2, 3), (1, 2)) == "0 + 1·0 + 2·1 = 2"
    with pytest.raises(IndexError, match="out of range for dim 0"):
        viz.address_formula(v, (4, 0))
    with pytest.raises(IndexError, match="one index per dim"):
        viz.address_formula(v, (1,))
    with pytest.raises(ValueError, match="whole numbers"):
        viz.address_formula(v, "1, x")


def test_shares_storage_from_real_tensors() -> None:
    x = torch.arange(24).reshape(4, 6)
    assert viz.shares_storage(x, x.t())
    assert viz.shares_storage(x[1:, ::2], x.t()[3])
    assert not viz.shares_storage(x, x[[0, 2]])
    assert not viz.shares_storage(x, x.t().contiguous())
    assert not viz.shares_storage(x, x.clone())
    assert viz.shares_storage(x, x.contiguous())  # already contiguous: the same tensor


def test_describe_layout() -> None:
    x = torch.arange(24.0).reshape(4, 6)
    facts = viz.describe_layout(x[1:, ::2])
    assert facts.shape == (3, 3) and facts.stride == (6, 2) and facts.offset == 6
    assert not facts.is_contiguous
    assert facts.span == (6, 22) and facts.storage_numel == 24 and facts.storage_bytes == 96
    assert "offset 6" in facts.headline() and "contiguous: no" in facts.headline()
    e = torch.arange(3).expand(4, 3)
    assert viz.describe_layout(e).expanded_dims == (0,)
    assert viz.expanded_dims(torch.zeros(1, 3).expand(1, 3)) == ()


@pytest.mark.parametrize("bad", [[1, 2, 3], np.arange(3), 3.0, "tensor"])
def test_not_a_tensor_is_a_type_error(bad: object) -> None:
    with pytest.raises(TypeError, match=r"pass a torch.Tensor, e.g. torch.tensor"):
        viz.storage_index_map(bad)  # type: ignore[arg-type]


def test_numpy_hint() -> None:
    with pytest.raises(TypeError, match="torch.from_numpy"):
        viz.describe_layout(np.zeros(3))  # type: ignore[arg-type]


def test_sparse_is_a_value_error() -> None:
    sparse = torch.eye(3).to_sparse()
    with pytest.raises(ValueError, match="to_dense"):
        viz.storage_index_map(sparse)
