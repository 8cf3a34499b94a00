"""Misconceptions of notebook 12-torch-func-and-kernels (see __init__.py for the contract)."""

from . import Misconception

NOTEBOOK = "12-torch-func-and-kernels"

MISCONCEPTIONS: tuple[Misconception, ...] = ()
