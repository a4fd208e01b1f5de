"""Statistics: Pearson, Spearman, MAPE, percentiles, paired, Welch and bootstrap
intervals, agreement of predictions with measurements, and non-negative least-squares
fits.

Shared by the cost-model calibration (:mod:`nasmlcn.costs`) and the early-epoch
correlation checks of the search. Pure Python but for :func:`nnls`,
:func:`fit_relative`, :func:`bootstrap_interval` (numpy), :func:`paired_interval` and
:func:`welch_interval` (scipy's t quantile), which import them when they are called,
so that importing this module (and the planning layer) stays light.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

__all__ = [
    "Agreement",
    "DifferenceInterval",
    "PairedInterval",
    "agreement",
    "best_scale",
    "bootstrap_interval",
    "fit_relative",
    "mape",
    "nnls",
    "paired_interval",
    "pearson",
    "percentile",
    "ranks",
    "spearman",
    "welch_interval",
]

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt


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


def best_scale(predicted: Sequence[float], measured: Sequence[float]) -> float:
    """The factor ``s`` minimising ``sum(((s * p - m) / m)^2)``: the relative-error fit.

    Used to put a model whose unit is not seconds (thesis eq. 5.1) on the measured
    scale before its percentage error means anything.
    """
    _check_pair(predicted, measured, 1)
    num = math.fsum(p / m for p, m in zip(predicted, measured, strict=True))
    den = math.fsum((p / m) ** 2 for p, m in zip(predicted, measured, strict=True))
    if den == 0:
        raise ValueError("every prediction is 0: no scale fits")
    return num / den


def worst_factor(predicted: Sequence[float], measured: Sequence[float]) -> tuple[float, float]:
    """The one common scale that minimises the worst factor between predictions and
    measurements, and that factor (``sqrt(max ratio / min ratio)``, >= 1): how far
    off the worst prediction is once the unit is put right."""
    _check_pair(predicted, measured, 1)
    ratios = [m / p for p, m in zip(predicted, measured, strict=True)]
    if min(ratios) <= 0:
        raise ValueError("predictions and measurements must be > 0")
    low, high = min(ratios), max(ratios)
    return math.sqrt(low * high), math.sqrt(high / low)


@dataclass(frozen=True)
class Agreement:
    """How predictions agree with measurements.

    Attributes:
        n: Pairs compared.
        pearson: Pearson's r.
        spearman: Spearman's rho.
        mape: Mean absolute % error as predicted (None when the units differ).
        scale: The single factor that best fits predictions to measurements
            (relative error); 1.0 would mean the unit is right.
        mape_scaled: Mean absolute % error after that factor (shape alone).
        under_share: Share of pairs predicted more than ``tolerance`` below
            the measurement.
        tolerance: The tolerance of ``under_share`` (0.05 = 5 %).
        max_under_pct: The largest under-prediction in % (0 if none).
        mean_over_pct: Mean signed error ``100 * (p - m) / m`` (> 0: above).
        mean_over: Mean signed error ``p - m``, in the measured unit.
    """

    n: int
    pearson: float
    spearman: float
    mape: float | None
    scale: float
    mape_scaled: float
    under_share: float
    tolerance: float
    max_under_pct: float
    mean_over_pct: float
    mean_over: float

    def to_dict(self) -> dict[str, Any]:
        """Plain values; NaN (a constant side) becomes None, which JSON can carry."""
        values = {
            "n": self.n,
            "pearson": self.pearson,
            "spearman": self.spearman,
            "mape": self.mape,
            "scale": self.scale,
            "mape_scaled": self.mape_scaled,
            "under_share": self.under_share,
            "tolerance": self.tolerance,
            "max_under_pct": self.max_under_pct,
            "mean_over_pct": self.mean_over_pct,
            "mean_over": self.mean_over,
        }
        return {
            k: None if isinstance(v, float) and not math.isfinite(v) else v
            for k, v in values.items()
        }


def agreement(
    predicted: Sequence[float],
    measured: Sequence[float],
    *,
    same_unit: bool = True,
    tolerance: float = 0.05,
) -> Agreement:
    """Compares ``predicted`` with ``measured`` (both > 0, same order).

    Args:
        predicted: Predictions.
        measured: Measurements.
        same_unit: False when predictions are in another unit: the raw % error
            and signed errors are then taken after the best single scale.
        tolerance: Relative shortfall counted as an under-prediction.
    """
    _check_pair(predicted, measured, 2)
    scale = best_scale(predicted, measured)
    scaled = [scale * p for p in predicted]
    compared = list(predicted) if same_unit else scaled
    rel = [(p - m) / m for p, m in zip(compared, measured, strict=True)]
    n = len(measured)
    return Agreement(
        n=n,
        pearson=pearson(predicted, measured),
        spearman=spearman(predicted, measured),
        mape=mape(predicted, measured) if same_unit else None,
        scale=scale,
        mape_scaled=mape(scaled, measured),
        under_share=sum(r < -tolerance for r in rel) / n,
        tolerance=tolerance,
        max_under_pct=max(0.0, -100.0 * min(rel)),
        mean_over_pct=100.0 * math.fsum(rel) / n,
        mean_over=math.fsum(c - m for c, m in zip(compared, measured, strict=True)) / n,
    )


def nnls(
    a: npt.ArrayLike, b: npt.ArrayLike, *, max_iter: int | None = None
) -> np.ndarray[tuple[int], np.dtype[np.float64]]:
    """Non-negative least squares: ``argmin |A x - b|`` subject to ``x >= 0``.

    The active-set algorithm of Lawson and Hanson (1974, ch. 23): variables enter
    the passive (free) set one at a time by largest gradient; whenever the
    unconstrained solution on that set has a non-positive entry, step back to
    the boundary and drop the variables that reached zero.
    """
    import numpy as np

    a_ = np.asarray(a, dtype=np.float64)
    b_ = np.asarray(b, dtype=np.float64)
    if a_.ndim != 2 or b_.shape != (a_.shape[0],):
        raise ValueError(f"need A of shape (m, n) and b of shape (m,), got {a_.shape}, {b_.shape}")
    n = a_.shape[1]
    x = np.zeros(n)
    passive = np.zeros(n, dtype=bool)
    tol = 10 * np.finfo(np.float64).eps * np.linalg.norm(a_, 1) * max(a_.shape)
    limit = max_iter if max_iter is not None else 3 * n + 30
    w = a_.T @ (b_ - a_ @ x)
    for _ in range(limit):
        if passive.all() or not (w[~passive] > tol).any():
            break
        j = int(np.argmax(np.where(passive, -np.inf, w)))
        passive[j] = True
        while True:
            s = np.zeros(n)
            s[passive] = np.linalg.lstsq(a_[:, passive], b_, rcond=None)[0]
            if (s[passive] > tol).all():
                break
            # Step from x towards s until the first passive variable hits zero.
            blocking = passive & (s <= tol)
            alpha = float(np.min(x[blocking] / (x[blocking] - s[blocking])))
            x = x + alpha * (s - x)
            passive &= x > tol
            x[~passive] = 0.0
            if not passive.any():
                s = np.zeros(n)
                break
        x = s
        w = a_.T @ (b_ - a_ @ x)
    return x


def fit_relative(features: Sequence[Sequence[float]], targets: Sequence[float]) -> list[float]:
    """Non-negative coefficients ``c`` minimising ``sum(((X c - y) / y)^2)``.

    The squared *relative* error, so that the cheap lanes (milliseconds) weigh
    as much as the costly ones (a plain least-squares fit would only serve the
    largest). Columns are scaled to unit norm first (features range over many
    orders of magnitude); a column that is all zero gets coefficient 0.

    Args:
        features: One row of feature values per sample.
        targets: Measured values (> 0), one per sample.
    """
    import numpy as np

    x = np.asarray(features, dtype=np.float64)
    y = np.asarray(targets, dtype=np.float64)
    if x.ndim != 2 or x.shape[0] != y.shape[0] or x.shape[0] == 0:
        raise ValueError(f"need one feature row per target, got {x.shape} and {y.shape}")
    if (y <= 0).any():
        raise ValueError("targets must be > 0 for a relative-error fit")
    a = x / y[:, None]
    norms = np.linalg.norm(a, axis=0)
    norms[norms == 0] = 1.0
    c = nnls(a / norms, np.ones_like(y)) / norms
    return [float(v) for v in c]


def _side_of_zero(low: float, high: float) -> str:
    if low > 0:
        return "ahead"
    if high < 0:
        return "behind"
    return "tie"


@dataclass(frozen=True)
class PairedInterval:
    """The mean of paired differences ``a - b`` with its t confidence interval.

    Attributes:
        mean: Mean difference.
        low: Lower end of the interval.
        high: Upper end.
        pairs: Pairs it rests on.
        confidence: Two-sided confidence (0.95).
    """

    mean: float
    low: float
    high: float
    pairs: int
    confidence: float

    @property
    def verdict(self) -> str:
        """``ahead`` (the interval is above 0), ``behind`` (below 0) or ``tie``."""
        return _side_of_zero(self.low, self.high)

    def to_dict(self) -> dict[str, Any]:
        return {
            "mean": self.mean,
            "low": self.low,
            "high": self.high,
            "pairs": self.pairs,
            "confidence": self.confidence,
            "verdict": self.verdict,
        }


def paired_interval(
    a: Sequence[float], b: Sequence[float], confidence: float = 0.95
) -> PairedInterval:
    """Student's t interval of the mean of ``a[i] - b[i]`` (pairs: e.g. one seed each).

    Raises:
        ValueError: The lengths differ or there are fewer than 2 pairs.
    """
    _check_pair(a, b, 2)
    from scipy.stats import t

    diffs = [float(x) - float(y) for x, y in zip(a, b, strict=True)]
    n = len(diffs)
    mean = sum(diffs) / n
    sd = math.sqrt(sum((d - mean) ** 2 for d in diffs) / (n - 1))
    half = float(t.ppf(0.5 + confidence / 2, n - 1)) * sd / math.sqrt(n)
    return PairedInterval(mean, mean - half, mean + half, n, confidence)


@dataclass(frozen=True)
class DifferenceInterval:
    """A statistic's difference between two independent samples, ``stat(a) - stat(b)``,
    with its confidence interval: Welch's t for means (:func:`welch_interval`), a
    percentile bootstrap otherwise (:func:`bootstrap_interval`).

    Attributes:
        difference: ``stat(a) - stat(b)``.
        low: Lower end of the interval.
        high: Upper end.
        sizes: The samples' sizes (``a``, ``b``).
        confidence: Two-sided confidence (0.95).
        method: ``welch`` or ``bootstrap``.
    """

    difference: float
    low: float
    high: float
    sizes: tuple[int, int]
    confidence: float
    method: str

    @property
    def verdict(self) -> str:
        """``ahead`` (the interval is above 0), ``behind`` (below 0) or ``tie``."""
        return _side_of_zero(self.low, self.high)

    def to_dict(self) -> dict[str, Any]:
        return {
            "difference": self.difference,
            "low": self.low,
            "high": self.high,
            "sizes": list(self.sizes),
            "confidence": self.confidence,
            "method": self.method,
            "verdict": self.verdict,
        }


def _two_samples(a: Sequence[float], b: Sequence[float]) -> None:
    if len(a) < 2 or len(b) < 2:
        raise ValueError(f"need at least 2 values in each sample, got {len(a)} and {len(b)}")


def welch_interval(
    a: Sequence[float], b: Sequence[float], confidence: float = 0.95
) -> DifferenceInterval:
    """Welch's t interval of ``mean(a) - mean(b)`` for two independent samples (e.g.
    the accuracies of the random models of two search settings).

    Raises:
        ValueError: A sample has fewer than 2 values.
    """
    _two_samples(a, b)
    from scipy.stats import t

    def mean_and_var(xs: Sequence[float]) -> tuple[float, float]:
        m = sum(float(x) for x in xs) / len(xs)
        return m, sum((float(x) - m) ** 2 for x in xs) / (len(xs) - 1) / len(xs)

    (ma, va), (mb, vb) = mean_and_var(a), mean_and_var(b)
    diff, spread = ma - mb, va + vb
    sizes = (len(a), len(b))
    if spread == 0:
        return DifferenceInterval(diff, diff, diff, sizes, confidence, "welch")
    df = spread**2 / (va**2 / (len(a) - 1) + vb**2 / (len(b) - 1))
    half = float(t.ppf(0.5 + confidence / 2, df)) * math.sqrt(spread)
    return DifferenceInterval(diff, diff - half, diff + half, sizes, confidence, "welch")


def bootstrap_interval(
    a: Sequence[float],
    b: Sequence[float],
    statistic: str = "max",
    confidence: float = 0.95,
    resamples: int = 10_000,
    seed: int = 0,
) -> DifferenceInterval:
    """Percentile bootstrap interval of ``stat(a) - stat(b)`` (``statistic``: ``max``,
    ``min`` or ``mean``), each sample resampled with replacement on its own; seeded,
    so the same samples give the same interval. For the best of a few random models
    it is wide, as it should be.

    Raises:
        ValueError: A sample has fewer than 2 values, or an unknown statistic.
    """
    _two_samples(a, b)
    import numpy as np

    functions: dict[str, Callable[..., Any]] = {"max": np.max, "min": np.min, "mean": np.mean}
    if statistic not in functions:
        raise ValueError(f"statistic {statistic!r}: use one of {', '.join(functions)}")
    stat = functions[statistic]
    rng = np.random.default_rng(seed)
    xa, xb = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    draws_a = stat(rng.choice(xa, size=(resamples, xa.size)), axis=1)
    draws_b = stat(rng.choice(xb, size=(resamples, xb.size)), axis=1)
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(draws_a - draws_b, [tail, 100 - tail])
    diff = float(stat(xa) - stat(xb))
    return DifferenceInterval(
        diff, float(low), float(high), (xa.size, xb.size), confidence, "bootstrap"
    )
