"""See what a tensor is: a flat storage read through shape, strides and an offset.

* :mod:`tensorcourse.viz.layout`: the pure core. :func:`storage_index_map` gives
  the storage element every logical element reads; :func:`address_formula` works
  out ``offset + Σ index_k · stride_k`` with its numbers.
* :mod:`tensorcourse.viz.ops`: :func:`apply_op` runs one real operation (view,
  transpose, slicing, expand, unfold, as_strided...) and reports the layout it
  produced and whether it still shares storage with its input.
* :mod:`tensorcourse.viz.broadcast`: :func:`explain_broadcast`, dim by dim, with
  torch's own verdict and error text and the bytes stretching does not cost.
* :mod:`tensorcourse.viz.draw`: :func:`draw_layout` and :func:`draw_broadcast`,
  static matplotlib figures that render inline and in exported HTML.
* :mod:`tensorcourse.viz.widgets`: :func:`layout_explorer` and
  :func:`broadcast_explorer`, thin ipywidgets layers over the above (ipywidgets
  7.7 and 8, inline backend; no ipympl).
* :mod:`tensorcourse.viz.graph`: the autograd graph behind a tensor.
  :func:`describe_graph` (nodes, saved tensors, leaves, hooks, backward order),
  :func:`graph_text` (a text tree for feedback) and :func:`draw_graph` (a figure);
  :func:`graph_explorer` steps through ``backward()`` node by node.
* :mod:`tensorcourse.viz.compare`: :func:`compare_layouts` draws a learner's
  layout next to the expected one with a verdict (exercise feedback);
  :func:`layout_diff` is the verdict alone.

Notebooks do ``tc.viz.draw_layout(x.t(), base=x)``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .broadcast import BroadcastReport, DimRule, OperandInfo, explain_broadcast
from .graph import GraphNode, GraphReport, SavedTensor, describe_graph, draw_graph, graph_text
from .layout import (
    LayoutFacts,
    address_formula,
    describe_layout,
    expanded_dims,
    shares_storage,
    storage_index,
    storage_index_map,
    storage_numel,
)
from .ops import OPS, OpResult, apply_op

if TYPE_CHECKING:
    from .compare import LayoutComparison, LayoutDiff, compare_layouts, layout_diff
    from .draw import VizFigure, draw_broadcast, draw_layout
    from .widgets import (
        BroadcastExplorer,
        GraphExplorer,
        LayoutExplorer,
        broadcast_explorer,
        graph_explorer,
        layout_explorer,
    )

# matplotlib and ipywidgets take about half a second to import; every notebook does
# `import tensorcourse`, and most never draw. So the drawing and widget names are
# imported on first use (PEP 562), and `tc.viz.draw_layout` works as usual.
_LAZY = {
    "VizFigure": "draw", "draw_broadcast": "draw", "draw_layout": "draw",
    "BroadcastExplorer": "widgets", "LayoutExplorer": "widgets",
    "broadcast_explorer": "widgets", "layout_explorer": "widgets",
    "GraphExplorer": "widgets", "graph_explorer": "widgets",
    "LayoutComparison": "compare", "LayoutDiff": "compare", "compare_layouts": "compare",
    "layout_diff": "compare",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "BroadcastExplorer",
    "BroadcastReport",
    "DimRule",
    "GraphExplorer",
    "GraphNode",
    "GraphReport",
    "LayoutComparison",
    "LayoutDiff",
    "LayoutExplorer",
    "LayoutFacts",
    "OPS",
    "OpResult",
    "OperandInfo",
    "SavedTensor",
    "VizFigure",
    "address_formula",
    "apply_op",
    "broadcast_explorer",
    "compare_layouts",
    "describe_graph",
    "describe_layout",
    "draw_broadcast",
    "draw_graph",
    "draw_layout",
    "expanded_dims",
    "explain_broadcast",
    "graph_explorer",
    "graph_text",
    "layout_diff",
    "layout_explorer",
    "shares_storage",
    "storage_index",
    "storage_index_map",
    "storage_numel",
]
