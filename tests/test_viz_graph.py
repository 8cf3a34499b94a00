"""tc.viz graph layer: describe_graph against torch's own graph, text, drawing, explorer."""

from __future__ import annotations

import pytest
import torch

import tensorcourse as tc
from tensorcourse.viz.graph import MAX_NODES


def _line():
    torch.manual_seed(0)
    x = torch.randn(2, 3)
    w = torch.randn(3, 4, requires_grad=True)
    b = torch.randn(4, requires_grad=True)
    return x, w, b, x @ w + b


def _real_backward_order(root: torch.Tensor) -> list[str]:
    """The order backward() really runs the nodes, recorded with node pre-hooks."""
    order, handles, seen, stack = [], [], set(), [root.grad_fn]
    while stack:
        fn = stack.pop()
        if fn is None or fn in seen:
            continue
        seen.add(fn)
        handles.append(fn.register_prehook(lambda g, fn=fn: order.append(fn)))
        stack.extend(nf for nf, _ in fn.next_functions)
    root.backward(torch.ones_like(root), retain_graph=True)
    for h in handles:
        h.remove()
    return order


def test_nodes_and_edges_follow_next_functions():
    x, w, b, y = _line()
    rep = tc.viz.describe_graph(y, {"x": x, "w": w, "b": b, "y": y})
    assert rep.root_name == "y" and rep.root_shape == (2, 4)
    assert rep.ops() == ["AddBackward0", "MmBackward0", "AccumulateGrad", "AccumulateGrad"]
    assert rep.edges == [(0, 1), (0, 3), (1, 2)]
    assert [(n.name, n.shape) for n in rep.leaves] == [("w", (3, 4)), ("b", (4,))]
    assert rep.nodes[2].depth == 2 and rep.nodes[3].depth == 1


def test_saved_tensors_are_what_the_formula_needs_and_are_freed_by_backward():
    x, w, b, y = _line()
    mm = tc.viz.describe_graph(y, {"x": x, "w": w}).nodes[1]
    # d(x @ w)/dw needs x; x needs no grad, so w is not saved.
    assert [(s.attr, s.alias) for s in mm.saved] == [("self", "x")]
    x.requires_grad_()
    y2 = x @ w
    saved = {s.attr: s for s in tc.viz.describe_graph(y2, {"x": x, "w": w}).nodes[0].saved}
    assert set(saved) == {"self", "mat2"} and saved["mat2"].alias == "w"
    y2.sum().backward()
    after = tc.viz.describe_graph(y2).nodes[0].saved
    assert after and all(s.freed and s.shape is None for s in after)
    assert "freed by backward()" in tc.viz.graph_text(y2)


@pytest.mark.parametrize("seed", range(6))
def test_backward_order_matches_the_engine(seed):
    g = torch.Generator().manual_seed(seed)
    leaves = [torch.randn(3, generator=g, requires_grad=True) for _ in range(3)]
    values = list(leaves)
    for _ in range(6):  # random expressions that reuse earlier results (a DAG, not a tree)
        i, j = torch.randint(len(values), (2,), generator=g).tolist()
        op = torch.randint(4, (1,), generator=g).item()
        a, c = values[i], values[j]
        values.append([a * c, a + c, torch.sin(a) - c, (a * 2).exp()][op])
    root = sum(v.sum() for v in values[-3:])
    rep = tc.viz.describe_graph(root)
    real = _real_backward_order(root)
    fns, stack, seen = [], [root.grad_fn], set()
    while stack:  # the same numbering describe_graph uses
        fn = stack.pop()
        if fn in seen:
            continue
        seen.add(fn)
        fns.append(fn)
        stack.extend(nf for nf, _ in reversed(fn.next_functions) if nf is not None)
    ours = [fns[i] for i in rep.backward_order]
    # AccumulateGrad nodes all have the top priority, so when several are ready together
    # the engine's heap runs them in no specified order: compare each such run as a set.
    assert _runs(ours) == _runs(real)


def _runs(order):
    out, batch = [], set()
    for fn in order:
        if type(fn).__name__ == "AccumulateGrad":
            batch.add(fn)
            continue
        if batch:
            out.append(frozenset(batch))
            batch = set()
        out.append(fn)
    return out + ([frozenset(batch)] if batch else [])


def test_retain_grad_and_hooks_are_reported():
    x, w, b, y = _line()
    h = x @ w
    h.retain_grad()
    w.register_hook(lambda grad: grad)
    out = (h + b).relu()
    rep = tc.viz.describe_graph(out, {"h": h, "w": w, "b": b})
    node_h = next(n for n in rep.nodes if n.name == "h")
    assert node_h.op == "MmBackward0" and node_h.retains_grad
    leaf_w = next(n for n in rep.leaves if n.name == "w")
    assert leaf_w.hooks == 1
    text = tc.viz.graph_text(rep)
    assert "h.retain_grad()" in text and "1 hook(s)" in text


def test_shared_nodes_appear_once_in_the_text():
    w = torch.randn(3, requires_grad=True)
    s = w.sin()
    out = s * s
    text = tc.viz.graph_text(out, {"w": w})
    assert text.count("<- SinBackward0") == 2 and "(see above)" in text
    assert len(tc.viz.describe_graph(out).nodes) == 3


@pytest.mark.parametrize(("make", "note"), [
    (lambda: torch.randn(3), "does not require grad"),
    (lambda: torch.randn(3, requires_grad=True), "it is a leaf"),
    (lambda: torch.randn(3, requires_grad=True).detach(), "does not require grad"),
])
def test_tensors_without_a_graph_say_why(make, note):
    rep = tc.viz.describe_graph(make())
    assert rep.nodes == [] and rep.backward_order == [] and note in rep.note
    assert note in tc.viz.graph_text(rep)
    assert note in tc.viz.draw_graph(rep).text_content


def test_bad_input_is_a_clear_error():
    with pytest.raises(TypeError, match="needs a torch.Tensor"):
        tc.viz.describe_graph([1, 2])
    with pytest.raises(TypeError, match="names must be a dict"):
        tc.viz.describe_graph(torch.randn(2, requires_grad=True) * 2, names=["w"])
    with pytest.raises(TypeError, match="names must map str"):
        tc.viz.describe_graph(torch.randn(2, requires_grad=True) * 2, names={"w": 3})
    x, w, b, y = _line()
    with pytest.raises(ValueError, match="step must be"):
        tc.viz.draw_graph(y, step=9)


def test_a_huge_graph_is_refused():
    t = torch.zeros(1, requires_grad=True)
    for _ in range(MAX_NODES + 5):
        t = t + 1
    with pytest.raises(ValueError, match="more than"):
        tc.viz.describe_graph(t)


def test_drawing_has_every_node_and_edge_and_highlights_the_step():
    x, w, b, y = _line()
    fig = tc.viz.draw_graph(y, {"w": w, "b": b}, title="y = x @ w + b")
    assert fig.stats["nodes"] == 4 and fig.stats["edges"] == 3
    for s in ("y = x @ w + b", "AddBackward0", "MmBackward0", "AccumulateGrad -> w.grad"):
        assert s in fig.text_content
    assert fig.stats["rects"] == 4
    stepped = tc.viz.draw_graph(y, step=1)
    assert len(stepped._repr_png_()) > 1000


def test_explorer_steps_through_backward_without_running_it():
    x, w, b, y = _line()
    ex = tc.viz.graph_explorer(y, {"w": w, "b": b})
    assert ex.state["step"] == 0 and ex.state["running"] == "AddBackward0"
    assert "seeds a gradient of ones" in ex.summary.value
    ex.next_button.click()
    assert ex.state["running"] == "AccumulateGrad" and "b.grad" in ex.summary.value
    for _ in range(10):
        ex.next_button.click()
    assert ex.state["step"] == 4 and ex.state["running"] is None
    assert "backward() is done" in ex.summary.value
    ex.back_button.click()
    assert ex.state["step"] == 3
    assert w.grad is None and b.grad is None  # nothing ran
    assert ex.renders >= 5 and ex.last_figure is not None


def test_a_custom_function_shows_what_save_for_backward_kept():
    class Square(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return 2 * x * grad

    x = torch.randn(3, requires_grad=True)
    y = Square.apply(x)
    node = tc.viz.describe_graph(y, {"x": x}).nodes[0]
    assert node.op == "SquareBackward"
    assert [(s.attr, s.alias) for s in node.saved] == [("saved_tensors[0]", "x")]
    y.sum().backward()
    assert tc.viz.describe_graph(y).nodes[0].saved[0].freed
