"""Misconceptions of notebook 01-why-tensors (see __init__.py for the contract)."""

from . import Misconception

NOTEBOOK = "01-why-tensors"

MISCONCEPTIONS: tuple[Misconception, ...] = ()
