"""How long redrawing a layout figure takes: figure creation plus an Agg canvas draw.

Run with ``python benchmarks/bench_viz.py``. The layout explorer redraws on every
control change, so a redraw must feel instant: the target is a median of at most
50 ms per figure on a laptop-class CPU. This is a report, not a timed test (timings
on shared CI machines are too noisy to assert on).
"""

from __future__ import annotations

import argparse
import sys

import torch

import tensorcourse as tc
from tensorcourse.viz import describe_graph, draw_broadcast, draw_graph, draw_layout
from tensorcourse.viz.draw import _glyph_path

TARGET_S = 0.050
TARGETED = 3  # the first cases in the list carry the target: the explorers' redraws


def _ten_node_graph():  # noqa: ANN202 - returns a GraphReport
    """A two-layer MLP's loss: 10 backward nodes, each explorer step redraws all of them."""
    torch.manual_seed(0)
    x = torch.randn(8, 4)
    w1, b1 = torch.randn(4, 16, requires_grad=True), torch.randn(16, requires_grad=True)
    w2 = torch.randn(16, 1, requires_grad=True)
    loss = ((x @ w1 + b1).relu() @ w2).sigmoid().pow(2).mean()
    report = describe_graph(loss, {"w1": w1, "b1": b1, "w2": w2, "loss": loss})
    assert len(report.nodes) == 10, report.ops()
    return report


def _redraw(make):  # noqa: ANN001, ANN202 - tiny local helper
    def run() -> None:
        fig = make()
        fig.canvas.draw()  # the Agg canvas attached by VizFigure: a full render, no PNG encode

    return run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args(argv)

    a = torch.randn(6, 8, dtype=torch.float32)
    base = torch.arange(60, dtype=torch.float32).reshape(3, 4, 5)
    b = base.transpose(0, 2)
    graph = _ten_node_graph()
    cases = [
        ("draw_layout 6x8 float32", _redraw(lambda: draw_layout(a))),
        ("draw_layout 3x4x5 transposed (5, 4, 3)", _redraw(lambda: draw_layout(b))),
        ("draw_graph 10-node graph, one explorer step", _redraw(lambda: draw_graph(graph, step=3))),
        ("draw_layout 3x4x5 transposed, base=", _redraw(lambda: draw_layout(b, base=base))),
        ("draw_broadcast (3, 1) with (4,)", _redraw(lambda: draw_broadcast((3, 1), (4,)))),
    ]
    def cold() -> None:
        # A tensor never drawn before: its label outlines are not cached yet.
        _glyph_path.cache_clear()
        _redraw(lambda: draw_layout(b))()

    cases.append(("draw_layout 3x4x5 transposed, cold text cache", cold))
    # What a notebook pays per redraw: the inline backend encodes a tight-cropped PNG.
    cases.append(("draw_layout 6x8 float32 + PNG encode", lambda: draw_layout(a)._repr_png_()))
    worst = 0.0
    for index, (label, fn) in enumerate(cases):
        timing = tc.measure(fn, repeats=args.repeats, warmup=2, label=label)
        target = " (target <= 50 ms)" if index < TARGETED else ""
        print(f"{timing}{target}")
        if index < TARGETED:
            worst = max(worst, timing.median)
    verdict = "meets" if worst <= TARGET_S else "MISSES"
    print(f"worst median of the {TARGETED} target cases: {tc.format_seconds(worst)}: {verdict} "
          f"the {tc.format_seconds(TARGET_S)} target")
    return 0


if __name__ == "__main__":
    sys.exit(main())
