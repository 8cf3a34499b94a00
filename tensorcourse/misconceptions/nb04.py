"""Misconceptions of notebook 04-operations-and-autograd (see __init__.py for the contract)."""

from . import Misconception

NOTEBOOK = "04-operations-and-autograd"

MISCONCEPTIONS: tuple[Misconception, ...] = ()
