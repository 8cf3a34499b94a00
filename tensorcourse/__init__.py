"""tensorcourse: the small helper package behind the *Tensors Inside Out* notebooks.

Layout (one concern per module):

* :mod:`tensorcourse.device`: pick CUDA or CPU and print a banner saying which.
* :mod:`tensorcourse.timing`: :func:`measure`, an honest timer (warm-up, repeats,
  median, CUDA synchronized).
* :mod:`tensorcourse.check`: feedback helpers for exercise test cells.
* :mod:`tensorcourse.fakework`: recording fake workloads that timing exercises are graded on.
* :mod:`tensorcourse.variants`: per-student variants of predict exercises (``tc.variants``).

Notebooks do ``import tensorcourse as tc`` and ``device = tc.setup()``.
"""

from __future__ import annotations

from . import check, variants, viz
from .device import banner, describe, has_cuda, pick_device, setup, torch_build, why_cpu
from .timing import Timing, format_seconds, measure, synchronize

__version__ = "0.1.0"

__all__ = [
    "banner",
    "check",
    "describe",
    "format_seconds",
    "has_cuda",
    "measure",
    "pick_device",
    "setup",
    "synchronize",
    "Timing",
    "torch_build",
    "variants",
    "viz",
    "why_cpu",
]
