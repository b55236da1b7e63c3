"""Figures with matplotlib (the optional ``plot`` extra), and a clear message when it is missing."""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["MISSING_MATPLOTLIB", "pyplot_or_none"]

MISSING_MATPLOTLIB = 'matplotlib is not installed: install it with pip install "privsum[plot]" to write the figures'


def pyplot_or_none() -> Any:
    """``matplotlib.pyplot`` on the non-interactive Agg backend, or ``None`` when matplotlib is not installed."""
    try:
        matplotlib = importlib.import_module("matplotlib")
    except ImportError:
        return None
    matplotlib.use("Agg")  # files only: no display needed
    return importlib.import_module("matplotlib.pyplot")
