"""Misconceptions of notebook 05-memory-and-performance (see __init__.py for the contract)."""

from . import Misconception

NOTEBOOK = "05-memory-and-performance"

MISCONCEPTIONS: tuple[Misconception, ...] = ()
