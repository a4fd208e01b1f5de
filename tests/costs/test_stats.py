"""Statistics and least-squares helpers of the cost-model calibration."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from nasmlcn.stats import (
    agreement,
    best_scale,
    fit_relative,
    mape,
    nnls,
    pearson,
    ranks,
    spearman,
)


def test_pearson_on_known_data() -> None:
    assert pearson([1, 2, 3, 4], [2, 4, 6, 8]) == pytest.approx(1.0)
    assert pearson([1, 2, 3, 4], [8, 6, 4, 2]) == pytest.approx(-1.0)
    assert pearson([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx(0.8)
    assert math.isnan(pearson([1, 2, 3], [5, 5, 5]))


def test_pearson_and_spearman_match_numpy_on_random_data() -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(size=40)
    y = x + rng.normal(size=40)
    assert pearson(list(x), list(y)) == pytest.approx(np.corrcoef(x, y)[0, 1], abs=1e-12)
    rx = np.argsort(np.argsort(x)) + 1.0  # no ties in continuous data
    ry = np.argsort(np.argsort(y)) + 1.0
    assert spearman(list(x), list(y)) == pytest.approx(np.corrcoef(rx, ry)[0, 1], abs=1e-12)


def test_ranks_average_ties() -> None:
    assert ranks([10, 20, 20, 30]) == [1.0, 2.5, 2.5, 4.0]
    assert ranks([3, 3, 3]) == [2.0, 2.0, 2.0]
    assert ranks([]) == []


def test_spearman_is_rank_based() -> None:
    x = [1, 2, 3, 4, 5]
    assert spearman(x, [v**3 for v in x]) == pytest.approx(1.0)  # monotone, not linear
    # With ties: Pearson of the average ranks [1, 2.5, 2.5, 4] and [1, 2, 3, 4].
    expected = np.corrcoef([1, 2.5, 2.5, 4], [1, 2, 3, 4])[0, 1]
    assert spearman([1, 2, 2, 3], [1, 2, 3, 4]) == pytest.approx(expected)


def test_mape_and_its_errors() -> None:
    assert mape([110, 90], [100, 100]) == pytest.approx(10.0)
    assert mape([2.0], [1.0]) == pytest.approx(100.0)
    with pytest.raises(ValueError, match="> 0"):
        mape([1.0], [0.0])
    with pytest.raises(ValueError, match="length"):
        mape([1.0, 2.0], [1.0])
    with pytest.raises(ValueError, match="at least 2"):
        pearson([1.0], [1.0])


def test_best_scale_finds_the_unit() -> None:
    measured = [1.0, 2.0, 5.0]
    assert best_scale([m / 3 for m in measured], measured) == pytest.approx(3.0)


def test_agreement_counts_under_predictions_and_over_estimate() -> None:
    measured = [100.0, 100.0, 100.0, 100.0]
    predicted = [90.0, 97.0, 110.0, 120.0]  # one more than 5 % below
    a = agreement(predicted, measured)
    assert a.under_share == pytest.approx(0.25)
    assert a.max_under_pct == pytest.approx(10.0)
    assert a.mean_over_pct == pytest.approx(4.25)
    assert a.mean_over == pytest.approx(4.25)
    assert a.mape == pytest.approx((10 + 3 + 10 + 20) / 4)
    other_unit = agreement([p / 1000 for p in predicted], measured, same_unit=False)
    assert other_unit.mape is None
    assert other_unit.mape_scaled == pytest.approx(a.mape_scaled)
    assert agreement([1.0, 1.0], [1.0, 2.0]).to_dict()["pearson"] is None  # NaN -> JSON null


def _brute_force_nnls(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The best least-squares solution over every support whose solution is >= 0."""
    n = a.shape[1]
    best, best_res = np.zeros(n), float(np.linalg.norm(b))
    for k in range(1, n + 1):
        for support in itertools.combinations(range(n), k):
            cols = list(support)
            x = np.zeros(n)
            x[cols] = np.linalg.lstsq(a[:, cols], b, rcond=None)[0]
            if (x >= -1e-12).all():
                res = float(np.linalg.norm(a @ x - b))
                if res < best_res - 1e-12:
                    best, best_res = x, res
    return best


@pytest.mark.parametrize("seed", range(8))
def test_nnls_matches_brute_force(seed: int) -> None:
    rng = np.random.default_rng(seed)
    a = rng.normal(size=(12, 4))
    b = rng.normal(size=12)
    x = nnls(a, b)
    assert (x >= 0).all()
    assert np.linalg.norm(a @ x - b) == pytest.approx(
        np.linalg.norm(a @ _brute_force_nnls(a, b) - b), rel=1e-9, abs=1e-12
    )


def test_nnls_drops_a_coefficient_that_least_squares_makes_negative() -> None:
    a = np.array([[1.0, 1.0], [1.0, 2.0], [1.0, 3.0]])
    b = np.array([3.0, 2.0, 1.0])  # unconstrained: intercept 4, slope -1
    x = nnls(a, b)
    assert x[1] == 0.0
    assert x[0] == pytest.approx(2.0)


def test_fit_relative_recovers_known_coefficients() -> None:
    rng = np.random.default_rng(1)
    # Features spanning many orders of magnitude, like FLOPs next to a constant.
    x = np.column_stack(
        [rng.uniform(1e8, 1e11, 30), rng.uniform(1e4, 1e6, 30), rng.integers(2, 8, 30), np.ones(30)]
    )
    truth = np.array([5e-12, 0.0, 1.2e-3, 2.4e-3])
    y = x @ truth
    fitted = fit_relative(x.tolist(), y.tolist())
    assert fitted == pytest.approx(list(truth), rel=1e-6, abs=1e-15)


def test_fit_relative_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="> 0"):
        fit_relative([[1.0], [2.0]], [1.0, 0.0])
    with pytest.raises(ValueError, match="one feature row"):
        fit_relative([[1.0]], [1.0, 2.0])
