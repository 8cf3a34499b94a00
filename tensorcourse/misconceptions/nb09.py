"""Misconceptions of notebook 09-layout-devices-gradient-lifetime (see __init__.py for the contract)."""

from . import Misconception

NOTEBOOK = "09-layout-devices-gradient-lifetime"

MISCONCEPTIONS: tuple[Misconception, ...] = ()
