"""Interactive explorers: thin ipywidgets layers over :mod:`.ops`, :mod:`.broadcast`, :mod:`.draw`.

Each explorer is a ``VBox`` whose controls are plain attributes, and whose last
computed result is kept (``.last_result`` / ``.last_report``, ``.last_figure``,
``.state``), so tests and notebooks can drive it from Python by setting
``.value`` on a control. All the logic lives in the pure layers; a callback only
reads the controls, calls them, and redraws.

Compatibility: only widgets and arguments that exist in both ipywidgets 7.7
(Colab) and 8.x (Dropdown, Text, IntText, Button, HTML, Output, HBox, VBox;
``observe(..., names="value")``), and figures are shown with
``IPython.display.display(fig)`` inside an ``Output``, which works with the
inline backend (no ipympl).

Accessibility: every control is a native, focusable HTML control (text boxes, menus,
buttons, a slider), so an explorer is driven with the keyboard alone: Tab to a control;
a slider moves with Left/Right; a menu opens with Space (or Alt+Down), Up/Down choose and
Enter picks (on a closed menu, Up/Down are JupyterLab's "previous/next cell" keys in
command mode); a text box takes typing and Enter; a button Enter or Space
(``tests/test_browser.py`` does each in Chromium). Each redraw displays the figure with its
text alternative (``alt`` and a "Text description" under it, see
:class:`~tensorcourse.viz.draw.VizFigure`), so the description changes with the figure;
``state["alt"]`` is the current summary.
"""

from __future__ import annotations

import html
from typing import Any

import ipywidgets as widgets
import torch
from IPython import get_ipython
from IPython.display import display
from matplotlib.figure import Figure

from ._inputs import parse_ints, require_tensor
from .broadcast import BroadcastReport, explain_broadcast
from .draw import draw_broadcast, draw_layout
from .graph import describe_graph, draw_graph
from .layout import address_formula
from .ops import OPS, OpResult, apply_op, default_params

__all__ = ["BroadcastExplorer", "GraphExplorer", "LayoutExplorer", "broadcast_explorer", "graph_explorer",
           "layout_explorer"]

_WIDE = {"description_width": "initial"}
_ERR = "color:#b00020"


def _show(out: widgets.Output, fig: Figure | None) -> None:
    """Replace what ``out`` shows with ``fig`` (nothing to show it on outside IPython)."""
    if get_ipython() is None:
        return
    out.clear_output(wait=True)
    if fig is not None:
        with out:
            display(fig)


def _alt(fig: Figure | None) -> str:
    """The figure's text summary (its ``alt``), shown and updated with it."""
    return getattr(fig, "alt", "") if fig is not None else ""


def _ints_text(values: Any) -> str:
    return ", ".join(str(v) for v in values)


def _yes(flag: bool | None) -> str:
    return "—" if flag is None else ("yes" if flag else "no")


class LayoutExplorer(widgets.VBox):
    """Apply view operations to a tensor and watch shape, strides and offset change.

    Controls: ``op`` (Dropdown of :data:`OPS`), ``controls[op][param]`` (one Text
    or IntText per parameter of each operation; only the chosen operation's are
    shown), ``index`` (Text: the element whose address is worked out),
    ``apply_button`` (the result becomes the new input), ``reset_button``.
    Outputs: ``summary`` (HTML) and ``out`` (Output with the figure).
    State: ``current`` (the input tensor), ``expr`` (how it was made from the
    start, e.g. ``t.transpose(0, 1)``), ``last_result`` (:class:`OpResult`),
    ``formula``, ``last_figure``, ``renders``, ``error`` and the dict ``state``.
    """

    def __init__(self, t: torch.Tensor | None = None, *, max_elements: int = 10) -> None:
        super().__init__()
        start = torch.arange(24).reshape(4, 6) if t is None else require_tensor(t, "layout_explorer")
        self.start = start
        self.current = start
        self.expr = "t"
        self.history: list[str] = []
        self.max_elements = max_elements
        self.last_result: OpResult | None = None
        self.last_figure: Figure | None = None
        self.formula = ""
        self.error: str | None = None
        self.renders = 0
        self._quiet = False

        self.op = widgets.Dropdown(options=[(spec.label, name) for name, spec in OPS.items()],
                                   value="transpose", description="operation", style=_WIDE,
                                   layout=widgets.Layout(width="430px"))
        self.controls: dict[str, dict[str, widgets.Widget]] = {}
        for name, spec in OPS.items():
            ctrls: dict[str, widgets.Widget] = {}
            for q in spec.params:
                if q.kind == "ints":
                    ctrl = widgets.Text(description=q.name, placeholder=q.help,
                                        continuous_update=False, style=_WIDE,
                                        layout=widgets.Layout(width="220px"))
                else:
                    ctrl = widgets.IntText(description=q.name, style=_WIDE,
                                           layout=widgets.Layout(width="130px"))
                ctrl.observe(self._on_change, names="value")
                ctrls[q.name] = ctrl
            self.controls[name] = ctrls
        self.params_box = widgets.HBox()
        self.index = widgets.Text(description="element index", placeholder="e.g. 1, 3",
                                  continuous_update=False, style=_WIDE,
                                  layout=widgets.Layout(width="240px"))
        self.apply_button = widgets.Button(description="apply: result becomes t",
                                           layout=widgets.Layout(width="200px"))
        self.reset_button = widgets.Button(description="reset", layout=widgets.Layout(width="80px"))
        self.summary = widgets.HTML()
        self.out = widgets.Output()

        self.op.observe(self._on_op, names="value")
        self.index.observe(self._on_change, names="value")
        self.apply_button.on_click(lambda _button: self.apply())
        self.reset_button.on_click(lambda _button: self.reset())
        self.children = [
            widgets.HBox([self.op, self.apply_button, self.reset_button]),
            self.params_box, self.index, self.summary, self.out,
        ]
        self._load_defaults()
        self.refresh()

    # -- driving it -------------------------------------------------------------------

    def params(self) -> dict[str, Any]:
        """The current operation's parameter values as read from its controls."""
        return {name: ctrl.value for name, ctrl in self.controls[self.op.value].items()}

    def apply(self) -> None:
        """Make the current result the new input (a chain of operations); no-op on failure."""
        res = self.last_result
        if res is None or not res.ok or res.result is None or res.result.numel() == 0:
            return
        self.current = res.result
        self.expr = self.expr + res.code[1:]  # codes start with "t"
        self.history.append(res.code)
        self._load_defaults()
        self.refresh()

    def reset(self) -> None:
        """Back to the starting tensor."""
        self.current, self.expr, self.history = self.start, "t", []
        self._load_defaults()
        self.refresh()

    @property
    def state(self) -> dict[str, Any]:
        """A snapshot of what the explorer shows, for tests and for printing."""
        res = self.last_result
        return {
            "expr": self.expr, "op": self.op.value, "params": self.params(),
            "input_shape": tuple(self.current.shape), "index": self.index.value,
            "formula": self.formula, "ok": bool(res and res.ok),
            "shape": res.shape if res else None, "stride": res.stride if res else None,
            "offset": res.offset if res else None,
            "contiguous": res.is_contiguous if res else None,
            "shares_storage_with_input": res.shares_storage_with_input if res else None,
            "error": res.error if res else None, "history": list(self.history),
            "renders": self.renders, "alt": _alt(self.last_figure),
        }

    # -- callbacks ---------------------------------------------------------------------

    def _on_op(self, _change: dict[str, Any]) -> None:
        self.params_box.children = tuple(self.controls[self.op.value].values())
        self.refresh()

    def _on_change(self, _change: dict[str, Any]) -> None:
        if not self._quiet:
            self.refresh()

    def _load_defaults(self) -> None:
        """Reset every operation's controls to defaults that suit the current input."""
        self._quiet = True
        try:
            for name, ctrls in self.controls.items():
                for param, value in default_params(name, self.current).items():
                    ctrl = ctrls[param]
                    ctrl.value = _ints_text(value) if isinstance(ctrl, widgets.Text) \
                        else int(value)
            self.params_box.children = tuple(self.controls[self.op.value].values())
        finally:
            self._quiet = False

    def refresh(self) -> None:
        """Recompute from the controls and redraw; errors are shown, never raised."""
        try:
            self.error = None
            self._refresh()
        except Exception as err:  # noqa: BLE001 - a callback must show, not swallow, a bug
            self.error = f"{type(err).__name__}: {err}"
            self.summary.value = (f'<p style="{_ERR}">The explorer hit an unexpected error: '
                                  f"{html.escape(self.error)}</p>")

    def _refresh(self) -> None:
        res = apply_op(self.current, self.op.value, **self.params())
        self.last_result = res
        target = res.result if res.ok and res.result is not None else self.current
        index = self._pick_index(target)
        fig = None
        if res.ok and res.result is not None and res.result.numel():
            fig = draw_layout(res.result, base=self.current, title=self._title(res.code),
                              highlight=index, max_elements=self.max_elements)
        elif res.reshape_result is not None:
            fig = draw_layout(res.reshape_result, base=self.current,
                              title=f"view failed, so this is reshape instead: "
                                    f"{self._title(res.code.replace('.view', '.reshape'))}",
                              max_elements=self.max_elements)
        elif not res.ok and self.current.numel():
            fig = draw_layout(self.current, title=f"{self.expr} (unchanged: the operation "
                                                  "failed)", highlight=index,
                              max_elements=self.max_elements)
        self.summary.value = self._summary_html(res, target, index)
        self.last_figure = fig
        self.renders += 1
        _show(self.out, fig)

    def _title(self, code: str) -> str:
        return self.expr + code[1:] if self.expr != "t" else code

    def _pick_index(self, target: torch.Tensor) -> tuple[int, ...] | None:
        """The element to explain: the typed index; all zeros when its rank does not fit."""
        self.formula = ""
        if target.numel() == 0:
            return None
        try:
            index = parse_ints(self.index.value, "element index")
        except ValueError as err:
            self.formula = str(err)
            return None
        if len(index) != target.dim():
            # The rank changed with the operation: start again at the first element.
            index = (0,) * target.dim()
            self._quiet = True
            try:
                self.index.value = _ints_text(index)
            finally:
                self._quiet = False
        try:
            self.formula = address_formula(target, index)
        except IndexError as err:
            self.formula = f"element index: {err}"
            return None
        return tuple(int(i) % n for i, n in zip(index, target.shape))

    def _summary_html(self, res: OpResult, target: torch.Tensor,
                      index: tuple[int, ...] | None) -> str:
        esc = html.escape
        rows = [("shape", res.input_shape, res.shape), ("stride", res.input_stride, res.stride),
                ("storage offset", res.input_offset, res.offset),
                ("contiguous", _yes(self.current.is_contiguous()), _yes(res.is_contiguous))]
        cells = "".join(f"<tr><th style='text-align:left;padding:1px 8px'>{esc(name)}</th>"
                        f"<td style='padding:1px 8px'>{esc(str(a))}</td>"
                        f"<td style='padding:1px 8px'>{esc(str(b)) if res.ok else '—'}</td></tr>"
                        for name, a, b in rows)
        parts = [f"<p><code>{esc(self._title(res.code))}</code> — {esc(OPS[res.op].doc)}</p>",
                 "<table style='border-collapse:collapse'><tr><th></th>"
                 f"<th style='padding:1px 8px'>input <code>{esc(self.expr)}</code></th>"
                 "<th style='padding:1px 8px'>result</th></tr>" + cells + "</table>"]
        if res.ok:
            share = res.shares_storage_with_input
            colour = "#1b5e20" if share else "#b00020"
            parts.append(f"<p style='color:{colour}'><b>shares storage with the input: "
                         f"{_yes(share)}</b> (untyped_storage().data_ptr() "
                         f"{'equal' if share else 'differs'})</p>")
        else:
            parts.append(f"<p style='{_ERR}'><b>{esc(res.code)} failed:</b> "
                         f"{esc(res.error or '')}</p>")
            if res.torch_message:
                parts.append(f"<p style='{_ERR}'>torch says: <code>{esc(res.torch_message)}"
                             "</code></p>")
        parts += [f"<p>{esc(note)}</p>" for note in res.notes]
        if index is not None and self.formula:
            which = "result" if res.ok else "input"
            parts.append(f"<p>element <code>{index}</code> of the {which} reads storage element "
                         f"<b><code>{esc(self.formula)}</code></b> "
                         f"(offset + Σ index<sub>k</sub> · stride<sub>k</sub>)</p>")
        elif self.formula:
            parts.append(f"<p style='{_ERR}'>{esc(self.formula)}</p>")
        if res.ok and res.result is not None and res.result.numel() == 0:
            parts.append("<p>The result has 0 elements: nothing to draw.</p>")
        return "".join(parts)


def layout_explorer(t: torch.Tensor | None = None, *, max_elements: int = 10) -> LayoutExplorer:
    """A widget to apply view operations to ``t`` (default ``torch.arange(24).reshape(4, 6)``).

    Pick an operation (view/reshape, transpose/permute, slicing with a step,
    narrow, select, unsqueeze/expand, diagonal, unfold, contiguous, as_strided,
    index_select) and its parameters; the figure and summary show the result's
    shape, strides, offset, contiguity, whether it shares storage with its input,
    and the address arithmetic of the chosen element. Raises ``TypeError`` /
    ``ValueError`` for a ``t`` that is not a strided ``torch.Tensor``.
    """
    return LayoutExplorer(t, max_elements=max_elements)


_DTYPES = ["float32", "float64", "float16", "bfloat16", "int64", "int32", "int16", "int8",
           "uint8", "bool"]


class BroadcastExplorer(widgets.VBox):
    """Type 2 or 3 shapes, pick a dtype, see the broadcasting rule per dim and the bytes.

    Controls: ``shape_a``, ``shape_b``, ``shape_c`` (Text; ``shape_c`` blank =
    unused; ``()`` is a 0-d tensor), ``dtype`` (Dropdown). Outputs: ``summary``
    (HTML) and ``out`` (Output with the figure). State: ``last_report``
    (:class:`BroadcastReport` or None), ``last_figure``, ``error``, ``renders``,
    ``state``.
    """

    def __init__(self, a: str = "3, 1", b: str = "4", c: str = "") -> None:
        super().__init__()
        self.last_report: BroadcastReport | None = None
        self.last_figure: Figure | None = None
        self.error: str | None = None
        self.renders = 0
        box = widgets.Layout(width="200px")
        self.shape_a = widgets.Text(value=a, description="a", continuous_update=False, layout=box)
        self.shape_b = widgets.Text(value=b, description="b", continuous_update=False, layout=box)
        self.shape_c = widgets.Text(value=c, description="c", placeholder="optional",
                                    continuous_update=False, layout=box)
        self.dtype = widgets.Dropdown(options=_DTYPES, value="float32", description="dtype",
                                      layout=widgets.Layout(width="200px"))
        self.summary = widgets.HTML()
        self.out = widgets.Output()
        for ctrl in (self.shape_a, self.shape_b, self.shape_c, self.dtype):
            ctrl.observe(lambda _change: self.refresh(), names="value")
        self.children = [widgets.HBox([self.shape_a, self.shape_b, self.shape_c, self.dtype]),
                         self.summary, self.out]
        self.refresh()

    def shapes(self) -> list[str]:
        texts = [self.shape_a.value, self.shape_b.value]
        if self.shape_c.value.strip():
            texts.append(self.shape_c.value)
        return texts

    @property
    def state(self) -> dict[str, Any]:
        rep = self.last_report
        return {"shapes": self.shapes(), "dtype": self.dtype.value, "ok": bool(rep and rep.ok),
                "result_shape": rep.result_shape if rep else None,
                "error": rep.error if rep else self.error,
                "rules": [d.rule for d in rep.dims] if rep else [], "renders": self.renders,
                "alt": _alt(self.last_figure)}

    def refresh(self) -> None:
        """Recompute the report from the text boxes and redraw; errors are shown, not raised."""
        self.error, self.last_report, fig = None, None, None
        try:
            for name, text in (("a", self.shape_a.value), ("b", self.shape_b.value)):
                if not text.strip():
                    raise ValueError(f"type a shape for {name}, e.g. 3, 1 (or () for a 0-d "
                                     "tensor)")
            report = explain_broadcast(*self.shapes(), dtype=self.dtype.value)
            self.last_report = report
            body = report.to_html()
            fig = draw_broadcast(*report.shapes, dtype=report.dtype)
        except (ValueError, TypeError) as err:
            self.error = str(err)
            body = f'<p style="{_ERR}">{html.escape(self.error)}</p>'
        except Exception as err:  # noqa: BLE001 - a callback must show, not swallow, a bug
            self.error = f"{type(err).__name__}: {err}"
            body = (f'<p style="{_ERR}">The explorer hit an unexpected error: '
                    f"{html.escape(self.error)}</p>")
        self.summary.value = body
        self.last_figure = fig
        self.renders += 1
        _show(self.out, fig)


def broadcast_explorer(a: str = "3, 1", b: str = "4", c: str = "") -> BroadcastExplorer:
    """A widget: shapes in text boxes and a dtype menu → the broadcasting report and figure.

    Shows the right-aligned dims, the rule per dim, the result shape or torch's
    own error message, each operand's allocated vs apparent bytes, and a figure of
    the operands stretched to the result with the not-allocated cells hatched.
    """
    return BroadcastExplorer(a, b, c)


class GraphExplorer(widgets.VBox):
    """Step through ``backward()`` on the graph behind a tensor, one node at a time.

    Controls: ``step`` (IntSlider, 0 = before backward starts), ``back_button`` and
    ``next_button``. Outputs: ``summary`` (HTML: which node runs, the gradient it
    receives, where it sends gradients, which saved tensors it reads) and ``out``
    (the figure, done nodes grey, the running one gold). State: ``report``
    (:class:`~tensorcourse.viz.graph.GraphReport`), ``last_figure``, ``renders``,
    ``state``. Nothing is run: the order is worked out from the graph, so the
    tensor's graph and ``.grad`` fields are untouched.
    """

    def __init__(self, t: torch.Tensor, names: Any = None) -> None:
        super().__init__()
        self.report = describe_graph(t, names)
        n = len(self.report.backward_order)
        self.last_figure: Figure | None = None
        self.renders = 0
        self.step = widgets.IntSlider(value=0, min=0, max=n, description="step",
                                      continuous_update=False)
        self.back_button = widgets.Button(description="◀ back")
        self.next_button = widgets.Button(description="next ▶")
        self.back_button.on_click(lambda _b: self._move(-1))
        self.next_button.on_click(lambda _b: self._move(+1))
        self.step.observe(lambda _change: self.refresh(), names="value")
        self.summary = widgets.HTML()
        self.out = widgets.Output()
        self.children = [widgets.HBox([self.back_button, self.step, self.next_button]),
                         self.summary, self.out]
        self.refresh()

    def _move(self, delta: int) -> None:
        self.step.value = min(self.step.max, max(0, self.step.value + delta))

    @property
    def state(self) -> dict[str, Any]:
        order = self.report.backward_order
        k = self.step.value
        return {"step": k, "steps": len(order),
                "done": [self.report.nodes[i].op for i in order[:k]],
                "running": self.report.nodes[order[k]].op if k < len(order) else None,
                "renders": self.renders, "alt": _alt(self.last_figure)}

    def _describe(self, k: int) -> str:
        rep = self.report
        if not rep.nodes:
            return f"<p>{html.escape(rep.note)}</p>"
        order = rep.nodes
        if k >= len(rep.backward_order):
            leaves = [n.name or f"leaf {n.shape}" for n in rep.leaves]
            return ("<p><b>backward() is done.</b> Gradients were written into "
                    f"{html.escape(', '.join(f'{x}.grad' for x in leaves)) or 'no leaf'}; "
                    "the saved tensors are freed (unless <code>retain_graph=True</code>).</p>")
        node = order[rep.backward_order[k]]
        if k == 0:
            intro = (f"<p><b>Step 0.</b> <code>{html.escape(rep.root_name)}.backward()</code> "
                     f"seeds a gradient of ones, shape {rep.root_shape}, into "
                     f"<code>{html.escape(node.op)}</code>.</p>")
        else:
            intro = f"<p><b>Step {k}.</b></p>"
        if node.kind == "leaf":
            body = (f"<p><code>AccumulateGrad</code> adds the incoming gradient into "
                    f"<code>{html.escape(node.name or 'the leaf')}.grad</code> "
                    f"(shape {node.shape}).</p>")
        else:
            targets = ", ".join(order[j].label for j in node.inputs) or "nothing (no input needs grad)"
            saved = ", ".join(s.attr for s in node.saved) or "nothing"
            got = f" of shape {node.grad_shape}" if node.grad_shape is not None else ""
            body = (f"<p><code>{html.escape(node.op)}</code> receives the gradient{got}, "
                    f"uses the saved tensors: {html.escape(saved)}, and sends gradients to: "
                    f"{html.escape(targets)}.</p>")
        return intro + body

    def refresh(self) -> None:
        """Redraw for the current step; errors are shown, not raised."""
        k = self.step.value
        try:
            fig = draw_graph(self.report, step=k)
            body = self._describe(k)
        except Exception as err:  # noqa: BLE001 - a callback must show, not swallow, a bug
            fig = None
            body = (f'<p style="{_ERR}">The explorer hit an unexpected error: '
                    f"{html.escape(f'{type(err).__name__}: {err}')}</p>")
        self.summary.value = body
        self.last_figure = fig
        self.renders += 1
        _show(self.out, fig)


def graph_explorer(t: torch.Tensor, names: Any = None) -> GraphExplorer:
    """A widget to step through ``t.backward()`` node by node on the graph behind ``t``.

    ``names`` maps display names to tensors (``{"w": w, "b": b}``) so leaves and saved
    tensors are labelled. Raises ``TypeError`` for a ``t`` that is not a tensor.
    Nothing runs backward: ``t``'s graph and every ``.grad`` are left as they were.
    """
    return GraphExplorer(t, names)
