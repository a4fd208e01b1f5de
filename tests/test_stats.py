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
