"""Figure details that need no study: how the Pareto plot colours its points."""

from __future__ import annotations

from nasmlcn.dashboard._figures import dominated_shade
from tests.dashboard.test_extract import _row


def test_dominated_trials_are_coloured_by_generation_only_when_there_are_several() -> None:
    several = [_row(n, (0.5, 1.0), generation=n // 2) for n in range(4)]
    assert dominated_shade(several) == ([0, 0, 1, 1], "generation")
    # one generation (a study shorter than NSGA-II's population): a colour bar of one
    # value says nothing, so the trial numbers colour the points
    one = [_row(n, (0.5, 1.0), generation=0) for n in range(3, 6)]
    assert dominated_shade(one) == ([3, 4, 5], "trial")
    assert dominated_shade([_row(7, (0.5, 1.0))]) == ([7], "trial")  # not NSGA-II
    assert dominated_shade([]) == ([], "trial")
