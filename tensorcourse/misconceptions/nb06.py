"""Misconceptions of notebook 06-troubleshooting (see __init__.py for the contract)."""

from . import Misconception

NOTEBOOK = "06-troubleshooting"

MISCONCEPTIONS: tuple[Misconception, ...] = ()
