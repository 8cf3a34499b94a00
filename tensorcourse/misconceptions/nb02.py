"""Misconceptions of notebook 02-creating-tensors (see __init__.py for the contract)."""

from . import Misconception

NOTEBOOK = "02-creating-tensors"

MISCONCEPTIONS: tuple[Misconception, ...] = ()
