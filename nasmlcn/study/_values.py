"""The conventions every reader of a study's values keeps: what counts as a figure,
and which way each objective is better."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any


def number(value: Any) -> float | None:
    """``value`` as a figure: a finite int or float (``True`` is no figure, nor is a
    NaN or an infinity, which no table, plot or ranking can place); else None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def objective_signs(directions: Sequence[Any]) -> list[float]:
    """Multiplying by these turns every objective into one to minimise: -1 for a
    maximised one, 1 otherwise. ``directions``: ``"maximize"``/``"minimize"`` or
    Optuna's ``StudyDirection`` s."""
    return [-1.0 if _name(d) == "maximize" else 1.0 for d in directions]


def _name(direction: Any) -> str:
    return str(getattr(direction, "name", direction)).lower()
