"""Misconceptions of notebook 11-leaks-gradients-compile-hangs (see __init__.py for the contract)."""

from . import Misconception

NOTEBOOK = "11-leaks-gradients-compile-hangs"

MISCONCEPTIONS: tuple[Misconception, ...] = ()
