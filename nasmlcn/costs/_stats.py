"""Judging and fitting cost models: agreement figures, scale and least-squares fits.

Pearson, Spearman and MAPE come from :mod:`nasmlcn.stats` (re-exported here).
:func:`nnls` and :func:`fit_relative` solve least-squares problems with numpy,
imported when they are called so that importing the cost models stays cheap.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from nasmlcn.stats import _check_pair, mape, pearson, ranks, spearman

__all__ = [
    "Agreement",
    "agreement",
    "best_scale",
    "fit_relative",
    "mape",
    "nnls",
    "pearson",
    "ranks",
    "spearman",
]

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt


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
