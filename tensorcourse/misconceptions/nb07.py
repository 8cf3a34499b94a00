"""Misconceptions of notebook 07-programmable-tensor-system (see __init__.py for the contract)."""

from . import Misconception

NOTEBOOK = "07-programmable-tensor-system"

MISCONCEPTIONS: tuple[Misconception, ...] = ()
