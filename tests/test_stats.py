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
