"""Misconceptions of notebook 03-indexing-and-views (see __init__.py for the contract)."""

from . import Misconception

NOTEBOOK = "03-indexing-and-views"

MISCONCEPTIONS: tuple[Misconception, ...] = ()
