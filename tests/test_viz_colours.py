"""Colour is never the only carrier of meaning, and the palettes survive colour-vision deficiencies.

Deuteranopia, protanopia and tritanopia are simulated with colorspacious (Machado et al.
2009, severity 100: a full dichromacy) and distances measured in CAM02-UCS, where about 1
is a just-noticeable difference.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

from tensorcourse import viz
from tensorcourse.viz import draw, graph

colorspacious = pytest.importorskip("colorspacious", reason="colorspacious is in requirements.txt "
                                    "(test-only): `python3 tio.py test` installs it")

VISION = [None, "deuteranomaly", "protanomaly", "tritanomaly"]  # None: typical colour vision
MIN_STORAGE = 4.0  # CAM02-UCS distance between any two of up to 8 storage colours (4 JNDs)
MIN_CATEGORY = 8.0  # between the graph's node kinds


def _seen(rgb: np.ndarray, vision: str | None) -> np.ndarray:
    if vision is None:
        return rgb
    cvd = {"name": "sRGB1+CVD", "cvd_type": vision, "severity": 100}
    return np.clip(colorspacious.cspace_convert(rgb, cvd, "sRGB1"), 0, 1)


def _min_distance(rgb: np.ndarray) -> float:
    ucs = colorspacious.cspace_convert(rgb, "sRGB1", "CAM02-UCS")
    return min(float(np.linalg.norm(ucs[i] - ucs[k]))
               for i, k in itertools.combinations(range(len(ucs)), 2))


def _luminance(rgb: np.ndarray) -> np.ndarray:
    lin = np.where(rgb <= 0.04045, rgb / 12.92, ((rgb + 0.055) / 1.055) ** 2.4)
    return lin @ np.array([0.2126, 0.7152, 0.0722])


@pytest.mark.parametrize("vision", VISION)
@pytest.mark.parametrize("n", range(2, 9))
def test_storage_colours_stay_apart(vision: str | None, n: int) -> None:
    """A view reading n storage elements gets n colours that stay distinguishable."""
    rgb = draw._colours(np.arange(n), 0, n - 1)[:, :3]
    assert _min_distance(_seen(rgb, vision)) >= MIN_STORAGE


@pytest.mark.parametrize("vision", VISION)
def test_graph_node_kinds_stay_apart(vision: str | None) -> None:
    kinds = np.array([graph.NODE_BLUE, graph.LEAF_GREEN, graph.DONE_GREY,
                      graph.CURRENT_GOLD])[:, :3]
    assert _min_distance(_seen(kinds, vision)) >= MIN_CATEGORY


def test_black_labels_keep_aa_contrast_on_every_storage_colour() -> None:
    rgb = draw._colours(np.arange(200), 0, 199)[:, :3]
    ink = _luminance(np.array([int(draw.INK[i:i + 2], 16) / 255 for i in (1, 3, 5)]))
    contrast = (_luminance(rgb) + 0.05) / (ink + 0.05)
    assert contrast.min() >= 4.5


def test_unread_storage_has_a_dashed_border_not_only_grey() -> None:
    x = torch.arange(24).reshape(4, 6)
    fig = viz.draw_layout(x[1:, ::2], base=x)
    # Base cells the view skips (12 of 24) and the strip's unread elements (offset 6 onwards
    # the view reads 6, 8, ..., 22: the other 6..23 and the 0..5 before the offset).
    assert fig.stats["dashed"] >= 12 + 6
    assert "dashed border" in fig.text_content
    full = viz.draw_layout(x)
    assert full.stats["dashed"] == 0 and "dashed border" not in full.text_content


def test_comparison_marks_wrong_cells_and_the_verdict_in_text_not_only_red() -> None:
    x = torch.arange(12)
    wrong = viz.compare_layouts(x.as_strided((4, 3), (3, 1)), x.unfold(0, 3, 1)[:4])
    assert wrong.text_content.count("✗") >= 1 + wrong.stats["mismatched_cells_drawn"]
    assert "Red outline and ✗" in wrong.text_content
    right = viz.compare_layouts(x.unfold(0, 3, 1), x.unfold(0, 3, 1))
    assert "✓ same layout" in right.text_content and "✗" not in right.text_content


def test_graph_steps_are_written_on_the_boxes() -> None:
    w = torch.ones(2, requires_grad=True)
    loss = (w * 2).sum()
    fig = viz.draw_graph(loss, {"w": w}, step=1)
    assert fig.text_content.count("✓ done") == 1 and "▶ running now" in fig.text_content
    assert "✓ done" not in viz.draw_graph(loss, {"w": w}).text_content


def test_stretched_cells_are_hatched_as_well_as_faded() -> None:
    fig = viz.draw_broadcast((4, 1), (3,))
    assert fig.stats["hatched"] == 8 + 9 and "hatched" in fig.text_content.lower()
