"""Misconceptions of notebook 10-training-script (see __init__.py for the contract)."""

from . import Misconception

NOTEBOOK = "10-training-script"

MISCONCEPTIONS: tuple[Misconception, ...] = ()
