"""Per-student variants of predict exercises (a copied answer earns about chance).

* :mod:`.spec`: what a variant is; a pool drawn with torch as the oracle (balanced answers,
  far from the published variant 0, distinct answer vectors).
* :mod:`.manifest`: who has which variant, frozen at release from the roster and a course
  secret; read back from the manifest and a student id alone. In a notebook,
  :func:`yours` gives the learner's own variant (graded: the one the grader passed in).
* :mod:`.oracle`: how a spec's expression is evaluated (torch decides every answer).
* :mod:`.indexing`: notebook 03's specs (Exercises 2 and 5).
* :mod:`.dtypes`: notebook 01's Exercise 1 (dtypes).
* :mod:`.conversions`: notebook 09's Exercise 3 (same tensor, copy, and which node).
* :mod:`.autocast`: notebook 05's Exercise 5 (dtypes under CPU autocast).
* :mod:`.graph`: notebook 04's Exercise 4 (requires_grad, is_leaf, grad_fn).
* :mod:`.memory`: notebook 06's Exercise 3 (allocated and reserved, on other sizes).
* :mod:`.nodes`: notebook 07's Exercise 2 (which node made a result).
* :mod:`.vmaps`: notebook 12's Exercise 1 (the shape vmap returns).
* :mod:`.constructors`: notebook 02's Exercise 1 (shape and dtype of a constructor).
* :mod:`.layouts`: notebook 02's Exercise 4 (strides).
* :mod:`.scope`: every other predict exercise, with why it has no variants yet.

:data:`SPECS` lists every spec by exercise id; :data:`WITHOUT_VARIANTS` the rest.
"""

from __future__ import annotations

from . import autocast, constructors, conversions, dtypes, graph, indexing, layouts, memory, nodes, vmaps
from .autocast import AUTOCAST
from .constructors import CONSTRUCTORS
from .conversions import CONVERSIONS
from .dtypes import DTYPES
from .graph import GRAPH
from .indexing import OUTCOMES, SHARING
from .layouts import LAYOUTS
from .manifest import FILE_NAME, GRADER_ENV, freeze, load, mine, params_for, yours
from .memory import MEMORY
from .nodes import GRAD_FN
from .scope import WITHOUT_VARIANTS
from .spec import Params, PredictSpec, VariantError
from .vmaps import VMAP

SPECS: dict[str, PredictSpec] = {spec.exercise: spec for spec in (
    DTYPES, CONSTRUCTORS, LAYOUTS, SHARING, OUTCOMES, GRAPH, AUTOCAST, CONVERSIONS, GRAD_FN, VMAP, MEMORY)}

__all__ = ["AUTOCAST", "CONSTRUCTORS", "CONVERSIONS", "DTYPES", "FILE_NAME", "GRADER_ENV", "GRAD_FN",
           "GRAPH", "LAYOUTS", "MEMORY", "OUTCOMES", "SHARING", "SPECS", "VMAP", "Params", "PredictSpec",
           "VariantError",
           "WITHOUT_VARIANTS", "autocast", "constructors", "conversions", "dtypes", "freeze", "graph",
           "indexing", "layouts", "load", "memory", "nodes", "mine", "params_for", "vmaps", "yours"]
