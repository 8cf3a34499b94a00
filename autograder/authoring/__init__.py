"""The course's release side: what learners get, made from ``solutions/``.

:mod:`.generate` (``solutions/`` -> ``notebooks/``, and ``--check`` for drift), :mod:`.verified`
(the "verified on" line, from the drift report), :mod:`.variants` (who gets which per-student
variant: the frozen manifest; the variants themselves are :mod:`tensorcourse.variants`).

Contract: writes the release and the manifest, never grades. May import the outputs (the
roster is read as the LMS files read it).
"""

# The rooms this one may import (tests/test_layout.py holds it, and that none is above it).
MAY_IMPORT: tuple[str, ...] = ('outputs',)
