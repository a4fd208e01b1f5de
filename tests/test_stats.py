"""The shared statistics."""

from __future__ import annotations

import numpy as np
import pytest

from nasmlcn.search import epoch_correlations
from nasmlcn.stats import percentile


@pytest.mark.parametrize("q", [0, 10, 25, 50, 90, 100])
def test_percentile_matches_numpy(q: float) -> None:
    values = [3.0, 1.0, 4.0, 1.5, 9.0, 2.6]
    assert percentile(values, q) == pytest.approx(float(np.percentile(values, q)))
    with pytest.raises(ValueError, match="no values"):
        percentile([], 50)


def test_correlation_of_one_trial_is_undefined_not_an_error() -> None:
    rows = epoch_correlations([[0.5, 0.6]])
    assert [r.trials for r in rows] == [1, 1]
    assert rows[0].to_dict()["spearman"] is None


def test_paired_interval_matches_scipys_paired_t_test() -> None:
    from scipy.stats import ttest_rel

    from nasmlcn.stats import paired_interval

    a = [0.81, 0.84, 0.80, 0.86, 0.83]
    b = [0.80, 0.80, 0.79, 0.82, 0.80]
    got = paired_interval(a, b)
    want = ttest_rel(a, b).confidence_interval(0.95)
    assert got.low == pytest.approx(want.low)
    assert got.high == pytest.approx(want.high)
    assert got.mean == pytest.approx(0.026)
    assert got.pairs == 5
    assert got.verdict == "ahead"
    assert paired_interval(b, a).verdict == "behind"
    assert paired_interval([0.8, 0.9, 0.7], [0.85, 0.8, 0.75]).verdict == "tie"
    with pytest.raises(ValueError, match="at least 2 pairs"):
        paired_interval([0.8], [0.7])


def test_welch_interval_matches_scipys_unequal_variance_t_test() -> None:
    from scipy import stats as sp

    from nasmlcn.stats import welch_interval

    a, b = [73.3, 69.9, 72.6, 68.7, 70.2], [74.1, 74.6, 73.1, 71.0]
    found = welch_interval(a, b)
    expected = sp.ttest_ind(a, b, equal_var=False).confidence_interval(0.95)
    assert found.difference == pytest.approx(sum(a) / 5 - sum(b) / 4)
    assert (found.low, found.high) == pytest.approx((expected.low, expected.high))
    assert found.sizes == (5, 4)
    assert found.verdict == "tie"
    assert welch_interval([2.0, 2.1, 2.2], [1.0, 1.1, 1.0]).verdict == "ahead"
    assert welch_interval([1.0, 1.0], [1.0, 1.0]).to_dict()["low"] == 0.0  # no spread
    with pytest.raises(ValueError, match="at least 2 values"):
        welch_interval([1.0], [1.0, 2.0])


def test_bootstrap_interval_of_the_best_is_seeded_and_honest_about_few_samples() -> None:
    from nasmlcn.stats import bootstrap_interval

    a, b = [0.733, 0.699, 0.726, 0.687], [0.741, 0.746, 0.731, 0.710]
    found = bootstrap_interval(a, b, "max")
    assert found.difference == pytest.approx(0.733 - 0.746)
    assert found == bootstrap_interval(a, b, "max")  # seeded
    # a resampled max is one of the sample's values: the ends lie within their differences
    assert min(a) - max(b) <= found.low
    assert found.high <= max(a) - min(b)
    assert found.low < found.difference < found.high
    assert found.verdict == "tie"  # 4 models each cannot tell these bests apart
    far = bootstrap_interval([0.9, 0.91, 0.92], [0.5, 0.51, 0.52], "max")
    assert far.verdict == "ahead"
    assert far.method == "bootstrap"
    with pytest.raises(ValueError, match="statistic 'median'"):
        bootstrap_interval(a, b, "median")
