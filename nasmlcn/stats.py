"""Small statistics in pure Python: Pearson, Spearman, MAPE, percentiles.

Used by the cost-model calibration and the early-epoch correlation checks; kept
free of numpy/scipy so the planning layer stays light.
"""

from __future__ import annotations

import math
from collections.abc import Sequence


def pearson(x: Sequence[float], y: Sequence[float]) -> float:
    """Pearson's r; NaN when fewer than 2 points or either side is constant."""
    if len(x) != len(y):
        raise ValueError(f"pearson needs equal lengths, got {len(x)} and {len(y)}")
    n = len(x)
    if n < 2:
        return math.nan
    mx, my = math.fsum(x) / n, math.fsum(y) / n
    sxy = math.fsum((a - mx) * (b - my) for a, b in zip(x, y, strict=True))
    sxx = math.fsum((a - mx) ** 2 for a in x)
    syy = math.fsum((b - my) ** 2 for b in y)
    if sxx <= 0 or syy <= 0:
        return math.nan
    return max(-1.0, min(1.0, sxy / math.sqrt(sxx * syy)))


def ranks(values: Sequence[float]) -> list[float]:
    """1-based ranks, ties sharing their average rank."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    out = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        rank = (i + j) / 2 + 1
        for k in range(i, j + 1):
            out[order[k]] = rank
        i = j + 1
    return out


def spearman(x: Sequence[float], y: Sequence[float]) -> float:
    """Spearman's rho: Pearson's r of the ranks (average ranks for ties)."""
    if len(x) != len(y):
        raise ValueError(f"spearman needs equal lengths, got {len(x)} and {len(y)}")
    return pearson(ranks(x), ranks(y))


def mape(predicted: Sequence[float], measured: Sequence[float]) -> float:
    """Mean absolute percentage error of ``predicted`` against ``measured`` (%)."""
    if len(predicted) != len(measured) or not measured:
        raise ValueError("mape needs two non-empty sequences of equal length")
    return (
        100.0
        * math.fsum(abs(p - m) / abs(m) for p, m in zip(predicted, measured, strict=True))
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
