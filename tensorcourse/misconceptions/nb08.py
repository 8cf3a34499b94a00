"""Misconceptions of notebook 08-autograd-function-and-compilers (see __init__.py for the contract)."""

from . import Misconception

NOTEBOOK = "08-autograd-function-and-compilers"

MISCONCEPTIONS: tuple[Misconception, ...] = ()
