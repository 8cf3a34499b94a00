"""The autograd graph behind a tensor: read it (:func:`describe_graph`), print it, draw it.

``y = x @ w + b`` records a graph of *backward nodes*: ``y.grad_fn`` is the node that
made ``y`` (``AddBackward0``), its ``next_functions`` lead to the nodes that made its
inputs, and the walk ends at ``AccumulateGrad`` nodes, one per leaf that requires grad
(where ``.grad`` is written). Each node keeps the tensors its backward formula needs
(``MmBackward0`` saves both operands) until ``backward()`` frees them.

:func:`describe_graph` walks that structure once and returns a plain
:class:`GraphReport` (nodes, edges, saved tensors, leaf names, hooks, the order in
which ``backward()`` runs the nodes). :func:`graph_text` renders it as an indented
tree for assert messages; :func:`draw_graph` as a matplotlib figure (drawn like the
layout figures: one collection of rectangles and one of glyph outlines, so a redraw
of a 10-node graph stays well under 50 ms, ``benchmarks/bench_viz.py``). The
explorer widget (:func:`tensorcourse.viz.graph_explorer`) steps through
:attr:`GraphReport.backward_order`.

Only documented attributes are needed (``grad_fn``, ``next_functions``,
``AccumulateGrad.variable``, the ``_saved_*`` properties that autograd generates for
every node); the two private ones (``_sequence_nr``, ``_input_metadata``) are read
with a fallback, so this works from torch 2.4 on.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

__all__ = ["GraphNode", "GraphReport", "SavedTensor", "describe_graph", "draw_graph", "graph_text"]

# A graph that large is not something to look at node by node.
MAX_NODES = 200


@dataclass(frozen=True)
class SavedTensor:
    """A tensor a backward node keeps for its formula: ``_saved_<attr>`` on the node.

    ``shape``/``dtype`` are ``None`` once ``backward()`` has freed it (``freed``), and
    ``alias`` names the tensor it is, when it is one of the named tensors.
    """

    attr: str
    shape: tuple[int, ...] | None
    dtype: torch.dtype | None
    freed: bool = False
    alias: str | None = None

    def text(self) -> str:
        if self.freed:
            return f"saved {self.attr}: freed by backward()"
        what = self.alias or f"{tuple(self.shape or ())} {str(self.dtype).replace('torch.', '')}"
        return f"saved {self.attr}: {what}"


@dataclass
class GraphNode:
    """One backward node. ``kind`` is ``"op"`` or ``"leaf"`` (an ``AccumulateGrad``).

    ``inputs`` are indices of the nodes this one sends gradients to (its
    ``next_functions``, in order, ``None`` entries skipped). ``name`` is the display
    name given for the tensor behind it (a leaf, or a named non-leaf's ``grad_fn``).
    ``grad_shape`` is the shape of the gradient the node receives, when known.
    """

    index: int
    op: str
    kind: str
    inputs: list[int] = field(default_factory=list)
    saved: list[SavedTensor] = field(default_factory=list)
    name: str | None = None
    shape: tuple[int, ...] | None = None
    grad_shape: tuple[int, ...] | None = None
    retains_grad: bool = False
    hooks: int = 0
    depth: int = 0

    @property
    def label(self) -> str:
        if self.kind == "leaf":
            return f"{self.name or 'leaf'} {self.shape}" if self.shape is not None else (
                self.name or "leaf")
        return self.op if self.name is None else f"{self.op} -> {self.name}"


@dataclass
class GraphReport:
    """The graph behind ``root``: ``nodes[0]`` is ``root.grad_fn`` (empty if it has none).

    ``backward_order`` lists node indices in the order ``root.backward()`` runs them
    (the engine's rule: a node runs once every node that feeds it a gradient has run;
    among ready nodes, ``AccumulateGrad`` first, then the most recently created;
    several ready ``AccumulateGrad`` nodes run in an order the engine leaves open).
    ``note`` explains an empty graph.
    """

    root_name: str
    root_shape: tuple[int, ...]
    root_requires_grad: bool
    nodes: list[GraphNode]
    backward_order: list[int]
    note: str = ""

    @property
    def edges(self) -> list[tuple[int, int]]:
        return [(n.index, i) for n in self.nodes for i in n.inputs]

    @property
    def leaves(self) -> list[GraphNode]:
        return [n for n in self.nodes if n.kind == "leaf"]

    def ops(self) -> list[str]:
        """The node class names in walk order (``nodes[0]`` first): handy in asserts."""
        return [n.op for n in self.nodes]


def _shape(t: torch.Tensor) -> tuple[int, ...]:
    return tuple(int(s) for s in t.shape)


def _names_by_identity(names: Mapping[str, Any] | None) -> dict[str, torch.Tensor]:
    if names is None:
        return {}
    if not isinstance(names, Mapping):
        raise TypeError("names must be a dict of display name -> tensor, e.g. {'w': w, 'b': b}, "
                        f"got {type(names).__name__}")
    for key, value in names.items():
        if not isinstance(key, str) or not isinstance(value, torch.Tensor):
            raise TypeError(f"names must map str -> torch.Tensor; entry {key!r} is "
                            f"{type(key).__name__} -> {type(value).__name__}")
    return dict(names)


def _alias(value: torch.Tensor, named: dict[str, torch.Tensor]) -> str | None:
    return next((n for n, t in named.items()
                 if t.layout == torch.strided and value.layout == torch.strided
                 and t.data_ptr() == value.data_ptr() and t.shape == value.shape
                 and t.stride() == value.stride() and t.dtype == value.dtype), None)


def _saved_of(node: Any, named: dict[str, torch.Tensor]) -> list[SavedTensor]:
    out: list[SavedTensor] = []
    if isinstance(node, torch.autograd.function.BackwardCFunction):
        # A custom autograd.Function's node: what ctx.save_for_backward kept, in order.
        try:
            values = node.saved_tensors
        except RuntimeError:  # freed by backward()
            return [SavedTensor("saved_tensors", None, None, freed=True)]
        return [SavedTensor(f"saved_tensors[{i}]", _shape(v), v.dtype, alias=_alias(v, named))
                for i, v in enumerate(values) if isinstance(v, torch.Tensor)]
    for attr in dir(node):
        if not attr.startswith("_saved_") or attr.endswith(("_sym_sizes", "_sym_strides")):
            continue
        short = attr[len("_saved_"):]
        try:
            value = getattr(node, attr)
        except RuntimeError:  # freed by a backward() without retain_graph=True
            out.append(SavedTensor(short, None, None, freed=True))
            continue
        if not isinstance(value, torch.Tensor):
            continue
        out.append(SavedTensor(short, _shape(value), value.dtype, alias=_alias(value, named)))
    return out


def _priority(node: Any) -> float:
    if type(node).__name__ == "AccumulateGrad":
        return float("inf")
    seq = getattr(node, "_sequence_nr", None)
    return float(seq()) if callable(seq) else 0.0


def describe_graph(t: torch.Tensor, names: Mapping[str, torch.Tensor] | None = None, *,
                   root_name: str = "result") -> GraphReport:
    """Walk the autograd graph that produced ``t``; ``names`` labels leaves and named tensors.

    Raises ``TypeError`` when ``t`` is not a tensor (or ``names`` is not a dict of
    tensors) and ``ValueError`` for a graph of more than ``MAX_NODES`` nodes. A
    tensor without ``grad_fn`` gives an empty report whose ``note`` says why.
    """
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"describe_graph needs a torch.Tensor, got {type(t).__name__}. "
                        "Pass the result of a computation, e.g. describe_graph(loss).")
    named = _names_by_identity(names)
    root_label = next((n for n, v in named.items() if v is t), root_name)
    if t.grad_fn is None:
        note = ("it is a leaf: it starts a graph instead of ending one" if t.requires_grad else
                "it does not require grad, so autograd recorded nothing for it")
        return GraphReport(root_label, _shape(t), t.requires_grad, [], [],
                           note=f"{root_label} has no grad_fn: {note}.")
    by_fn: dict[Any, int] = {}
    fns: list[Any] = []
    stack = [t.grad_fn]
    while stack:  # depth-first, inputs in next_functions order: a stable numbering
        fn = stack.pop()
        if fn in by_fn:
            continue
        if len(fns) >= MAX_NODES:
            raise ValueError(f"the graph has more than {MAX_NODES} nodes; draw a smaller piece "
                             "(e.g. one layer's output) instead")
        by_fn[fn] = len(fns)
        fns.append(fn)
        stack.extend(nf for nf, _ in reversed(fn.next_functions) if nf is not None)
    named_fns = {v.grad_fn: n for n, v in named.items() if v.grad_fn is not None}
    nodes: list[GraphNode] = []
    for i, fn in enumerate(fns):
        op = type(fn).__name__
        node = GraphNode(i, op, "leaf" if op == "AccumulateGrad" else "op",
                         inputs=[by_fn[nf] for nf, _ in fn.next_functions if nf is not None],
                         saved=_saved_of(fn, named))
        if node.kind == "leaf":
            var = fn.variable
            node.name = next((n for n, v in named.items() if v is var), None)
            node.shape = _shape(var)
            node.hooks = len(getattr(var, "_backward_hooks", None) or {})
        else:
            tensor_name = named_fns.get(fn) or (root_label if fn is t.grad_fn else None)
            node.name = tensor_name
            tensor = t if fn is t.grad_fn else named.get(tensor_name or "")
            if tensor is not None:
                node.retains_grad = bool(tensor.retains_grad)
                node.hooks = len(getattr(tensor, "_backward_hooks", None) or {})
            meta = getattr(fn, "_input_metadata", None)
            if meta:
                node.grad_shape = tuple(int(s) for s in meta[0].shape)
        nodes.append(node)
    order = _backward_order(nodes, [_priority(fn) for fn in fns])
    # Depth: the longest path from the root, so every edge points downwards. The backward
    # order lists a node only after every node that feeds it, which is what this needs.
    for i in order:
        for j in nodes[i].inputs:
            nodes[j].depth = max(nodes[j].depth, nodes[i].depth + 1)
    return GraphReport(root_label, _shape(t), t.requires_grad, nodes, order)


def _backward_order(nodes: list[GraphNode], priority: list[float]) -> list[int]:
    """The engine's order from the root: a node once all its consumers ran, highest priority first."""
    waiting = [0] * len(nodes)
    for n in nodes:
        for j in n.inputs:
            waiting[j] += 1
    ready = [0] if nodes else []
    out: list[int] = []
    while ready:
        ready.sort(key=lambda k: (priority[k], -k))
        i = ready.pop()
        out.append(i)
        for j in nodes[i].inputs:
            waiting[j] -= 1
            if waiting[j] == 0:
                ready.append(j)
    return out


def _node_lines(node: GraphNode) -> list[str]:
    if node.kind == "leaf":
        lines = [f"AccumulateGrad -> {node.name or 'leaf'}.grad",
                 f"leaf {node.shape}, requires_grad"]
    else:
        lines = [node.op + (f"  (makes {node.name})" if node.name else "")]
        if node.retains_grad:
            lines.append(f"{node.name}.retain_grad(): .grad kept")
    if node.hooks:
        lines.append(f"{node.hooks} hook(s) registered")
    lines += [s.text() for s in node.saved]
    return lines


def graph_text(t: torch.Tensor | GraphReport, names: Mapping[str, torch.Tensor] | None = None,
               ) -> str:
    """The graph behind ``t`` as an indented tree, one node per line (shared nodes once).

    Meant for feedback messages: ``assert ..., tc.viz.graph_text(yours)``.
    """
    report = t if isinstance(t, GraphReport) else describe_graph(t, names)
    if not report.nodes:
        return report.note
    lines: list[str] = [f"{report.root_name} {report.root_shape}"]
    shown: set[int] = set()

    def visit(i: int, indent: int) -> None:
        node = nodes[i]
        pad = "  " * indent
        head, *rest = _node_lines(node)
        if i in shown:
            lines.append(f"{pad}<- {head} (see above)")
            return
        shown.add(i)
        lines.append(f"{pad}<- {head}")
        lines.extend(f"{pad}     {r}" for r in rest)
        for j in node.inputs:
            visit(j, indent + 1)

    nodes = report.nodes
    visit(0, 1)
    return "\n".join(lines)


# --------------------------------------------------------------------------- drawing

# Chosen to stay apart under deuteranopia, protanopia and tritanopia (tests/test_viz_colours.py);
# the boxes also say it in words: "AccumulateGrad -> x.grad" (a leaf), "✓ done", "▶ running now".
NODE_BLUE = (0.78, 0.86, 1.00, 1.0)
LEAF_GREEN = (0.88, 0.96, 0.70, 1.0)
DONE_GREY = (0.82, 0.82, 0.82, 1.0)
CURRENT_GOLD = (1.00, 0.80, 0.45, 1.0)


def draw_graph(t: torch.Tensor | GraphReport, names: Mapping[str, torch.Tensor] | None = None, *,
               title: str | None = None, step: int | None = None) -> Any:
    """A figure of the graph behind ``t``: the result on top, leaves at the bottom.

    Op nodes are blue boxes, leaves (``AccumulateGrad``) green, each listing what it
    saved; arrows follow the gradient, from the result down to the leaves. With
    ``step=k`` the first ``k`` nodes of ``backward_order`` are greyed out as done and
    the next one is highlighted (what the explorer shows). Returns a
    :class:`~tensorcourse.viz.draw.VizFigure` (shows inline in Jupyter).
    """
    from matplotlib.collections import LineCollection
    from matplotlib.transforms import Affine2D

    from .draw import FS_SMALL, FS_TEXT, FS_TITLE, INK, MARGIN_IN, MUTED, _Scene, _text_w

    report = t if isinstance(t, GraphReport) else describe_graph(t, names)
    if step is not None and not (isinstance(step, int) and 0 <= step <= len(report.backward_order)):
        raise ValueError(f"step must be an int from 0 to {len(report.backward_order)} "
                         f"(the number of nodes), got {step!r}")
    scene = _Scene()
    y = MARGIN_IN
    heading = title or f"autograd graph of {report.root_name} {report.root_shape}"
    heading_alt = title or f"Autograd graph of {report.root_name} {report.root_shape}"
    y = scene.lines(MARGIN_IN, y, [(heading, {"fontsize": FS_TITLE, "weight": "bold"})])
    if not report.nodes:
        scene.lines(MARGIN_IN, y + 0.05, [(report.note, {"fontsize": FS_TEXT, "color": MUTED})])
        scene.height = y + 0.4
        fig = scene.render()
        fig.alt, fig.description = _graph_text(report, heading_alt, step)
        return fig
    done = set(report.backward_order[:step]) if step is not None else set()
    current = (report.backward_order[step] if step is not None
               and step < len(report.backward_order) else None)
    lines = {n.index: _node_lines(n) for n in report.nodes}
    for i in done:
        lines[i].append("✓ done")
    if current is not None:
        lines[current].append("▶ running now")
    styles = [({"fontsize": FS_TEXT, "weight": "bold"}), ({"fontsize": FS_SMALL, "color": INK})]
    size: dict[int, tuple[float, float]] = {}
    for i, ls in lines.items():
        w = max(_text_w(s, styles[0] if k == 0 else styles[1]) for k, s in enumerate(ls))
        size[i] = (w + 0.24, 0.12 + FS_TEXT * 1.55 / 72 + (len(ls) - 1) * FS_SMALL * 1.55 / 72)
    rows: dict[int, list[int]] = {}
    for n in report.nodes:
        rows.setdefault(n.depth, []).append(n.index)
    gap_x, gap_y = 0.3, 0.45
    row_w = {d: sum(size[i][0] for i in ids) + gap_x * (len(ids) - 1) for d, ids in rows.items()}
    total_w = max(row_w.values())
    pos: dict[int, tuple[float, float]] = {}
    y += 0.15
    for d in sorted(rows):
        x = MARGIN_IN + (total_w - row_w[d]) / 2
        h = max(size[i][1] for i in rows[d])
        for i in rows[d]:
            pos[i] = (x, y)
            x += size[i][0] + gap_x
        y += h + gap_y
    for n in report.nodes:
        x, top = pos[n.index]
        w, h = size[n.index]
        colour = (CURRENT_GOLD if n.index == current else DONE_GREY if n.index in done
                  else LEAF_GREEN if n.kind == "leaf" else NODE_BLUE)
        scene.rects.append((x, top, w, h))
        scene.faces.append(np.array([colour]))
        if n.index == current:
            scene.outlines.append((x, top, w, h))
        scene.lines(x + 0.12, top + 0.04,
                    [(s, styles[0] if k == 0 else styles[1]) for k, s in enumerate(lines[n.index])])
    scene.width = max(scene.width, MARGIN_IN + total_w)
    scene.height = y - gap_y
    fig = scene.render()
    segments = []
    for a, b in report.edges:
        (xa, ya), (wa, ha) = pos[a], size[a]
        (xb, yb), (wb, _) = pos[b], size[b]
        segments.append([(xa + wa / 2, ya + ha), (xb + wb / 2, yb)])
    h_in = fig.get_figheight()
    to_fig = Affine2D().scale(1, -1).translate(0, h_in) + fig.dpi_scale_trans
    fig.add_artist(LineCollection(segments, colors=MUTED, linewidths=1.2, transform=to_fig))
    heads = []
    for (_, _), (xe, ye) in segments:  # a small arrowhead where the gradient arrives
        heads.append([(xe - 0.06, ye - 0.1), (xe, ye), (xe + 0.06, ye - 0.1)])
    fig.add_artist(LineCollection(heads, colors=MUTED, linewidths=1.2, transform=to_fig))
    fig.stats.update({"nodes": len(report.nodes), "edges": len(segments)})
    fig.graph_report = report
    fig.alt, fig.description = _graph_text(report, heading_alt, step)
    return fig


def _node_name(node: GraphNode) -> str:
    if node.kind == "leaf":
        return f"AccumulateGrad into {node.name or 'a leaf'}.grad"
    return node.op + (f" (makes {node.name})" if node.name else "")


def _graph_text(report: GraphReport, heading: str, step: int | None) -> tuple[str, Any]:
    """The alt text and the full description of a :func:`draw_graph` figure."""
    from .describe import Doc

    doc = Doc()
    if not report.nodes:
        return f"{heading}: no graph. {report.note}", doc
    order = report.backward_order
    names = [_node_name(report.nodes[i]) for i in order]
    leaves = ", ".join(f"{n.name or 'leaf'} {n.shape}" for n in report.leaves) or "none"
    alt = (f"{heading}: {len(report.nodes)} nodes. backward() runs them in this order: "
           f"{'; '.join(names)}. Leaves: {leaves}.")
    if step is not None:
        state = (f"Step {step} of {len(order)}: " + (
            f"{names[step]} runs now" if step < len(order) else "backward() is done")
            + (f"; {step} done before it" if 0 < step < len(order) else "") + ".")
        alt = state + " " + alt
    doc.heading(f"Nodes in backward order ({len(order)}; arrows go from a node to the nodes "
                "it sends gradients to)")
    items = []
    for k, i in enumerate(order):
        node = report.nodes[i]
        status = ""
        if step is not None:
            status = ("[done] " if k < step else "[running now] " if k == step else "[waiting] ")
        parts = [status + _node_name(node)]
        if node.kind == "leaf":
            parts.append(f"leaf of shape {node.shape}, requires_grad")
        else:
            if node.grad_shape is not None:
                parts.append(f"receives a gradient of shape {node.grad_shape}")
            targets = [_node_name(report.nodes[j]) for j in node.inputs]
            parts.append("sends gradients to: " + (", ".join(targets) or "nothing"))
            if node.retains_grad:
                parts.append(f"{node.name}.retain_grad(): .grad kept")
        if node.hooks:
            parts.append(f"{node.hooks} hook(s) registered")
        parts += [s.text() for s in node.saved]
        items.append("; ".join(parts))
    doc.items(items, ordered=True)
    doc.heading("The graph as a tree, from the result down to the leaves")
    doc.pre(graph_text(report))
    return alt, doc
