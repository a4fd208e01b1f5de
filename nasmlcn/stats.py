"""Small statistics in pure Python: Pearson, Spearman, MAPE, percentiles.

Shared by the cost-model calibration (:mod:`nasmlcn.costs`) and the early-epoch
correlation checks of the search; free of numpy so the planning layer stays light.
"""

from __future__ import annotations

import math
from collections.abc import Sequence


def _check_pair(x: Sequence[float], y: Sequence[float], least: int) -> None:
    if len(x) != len(y):
        raise ValueError(f"x and y differ in length: {len(x)} != {len(y)}")
    if len(x) < least:
        raise ValueError(f"need at least {least} pairs, got {len(x)}")


def pearson(x: Sequence[float], y: Sequence[float]) -> float:
    """Pearson's correlation coefficient r; NaN when either side is constant."""
    _check_pair(x, y, 2)
    n = len(x)
    mx, my = math.fsum(x) / n, math.fsum(y) / n
    sxy = math.fsum((a - mx) * (b - my) for a, b in zip(x, y, strict=True))
    sxx = math.fsum((a - mx) ** 2 for a in x)
    syy = math.fsum((b - my) ** 2 for b in y)
    if sxx == 0 or syy == 0:
        return math.nan
    return max(-1.0, min(1.0, sxy / math.sqrt(sxx * syy)))


def ranks(values: Sequence[float]) -> list[float]:
    """1-based ranks; tied values share the average of the ranks they span."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    out = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        average = (i + j) / 2 + 1
        for k in range(i, j + 1):
            out[order[k]] = average
        i = j + 1
    return out


def spearman(x: Sequence[float], y: Sequence[float]) -> float:
    """Spearman's rank correlation rho (Pearson's r of the average ranks)."""
    _check_pair(x, y, 2)
    return pearson(ranks(x), ranks(y))


def mape(predicted: Sequence[float], measured: Sequence[float]) -> float:
    """Mean absolute percentage error, ``100 * mean(|p - m| / m)``.

    Raises:
        ValueError: A measured value is not > 0.
    """
    _check_pair(predicted, measured, 1)
    if any(m <= 0 for m in measured):
        raise ValueError("measured values must be > 0 for a percentage error")
    return (
        100.0
        * math.fsum(abs(p - m) / m for p, m in zip(predicted, measured, strict=True))
        / len(measured)
    )


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0-100), linear between closest ranks (numpy's default)."""
    if not values:
        raise ValueError("percentile of no values")
    data = sorted(values)
    position = (len(data) - 1) * q / 100.0
    low = math.floor(position)
    high = min(low + 1, len(data) - 1)
    return data[low] + (data[high] - data[low]) * (position - low)
