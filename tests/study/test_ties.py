"""Which retrained models are tied with the best (``standings``): the paired 95 % t
interval of each model's difference to the best, within the margin; checked against a
recomputation with ``scipy.stats``, the quickstart's case among the rows."""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
import pytest
from scipy import stats

from nasmlcn.study import (
    TIE_MARGIN,
    RetrainedModel,
    SeedFigures,
    Standing,
    cheapest,
    seed_figures,
    seeded_answer,
    standings,
)

SEEDS = (11, 12, 13)

# The quickstart's 4 models retrained with seeds 11, 12, 13 (1 epoch, 5,000 images):
# #3 and #2 within a thousandth, #1 1.5 points lower, and #0 22 points lower on
# average, whose paired difference to the best, [-0.460, +0.011], holds 0: "the
# interval holds 0" alone would call it tied.
QUICKSTART = {
    3: (0.7410, 0.7489, 0.7568),
    2: (0.7404, 0.7488, 0.7563),
    1: (0.7290, 0.7337, 0.7384),
    0: (0.7410 - 0.3198, 0.7489 - 0.2250, 0.7568 - 0.1302),
}


def _figures(
    table: Mapping[int, tuple[float, ...]], seeds: tuple[int, ...] = SEEDS
) -> list[SeedFigures]:
    return [SeedFigures(n, dict(zip(seeds, values, strict=True))) for n, values in table.items()]


def _scipy_marks(table: Mapping[int, tuple[float, ...]], margin: float) -> dict[int, str]:
    """The standings recomputed from scipy's paired t interval and the margin."""
    best = max(table, key=lambda n: (np.mean(table[n]), -n))
    marks = {best: "best"}
    for n, values in table.items():
        if n == best:
            continue
        diffs = np.asarray(values) - np.asarray(table[best])
        low, high = stats.t.interval(0.95, len(diffs) - 1, loc=diffs.mean(), scale=stats.sem(diffs))
        marks[n] = (
            "tied" if -margin <= low and high <= margin else "behind" if high < 0 else "undecided"
        )
    return marks


def test_the_quickstart_case_matches_scipy_and_is_not_called_tied() -> None:
    result = standings(_figures(QUICKSTART), TIE_MARGIN)
    marks = {s.number: s.mark for s in result}
    assert marks == _scipy_marks(QUICKSTART, TIE_MARGIN)
    assert marks == {3: "best", 2: "tied", 1: "behind", 0: "undecided"}
    zero = next(s for s in result if s.number == 0)
    assert zero.difference is not None
    assert zero.difference.mean == pytest.approx(-0.225, abs=1e-9)
    assert (zero.difference.low, zero.difference.high) == pytest.approx((-0.4605, 0.0105), abs=1e-4)
    low, high = zero.figures.interval() or (0, 0)
    ref = stats.t.interval(0.95, 2, loc=np.mean(QUICKSTART[0]), scale=stats.sem(QUICKSTART[0]))
    assert (low, high) == pytest.approx(ref)


@pytest.mark.parametrize("seed", range(40))
def test_random_cases_match_scipy(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n_seeds = int(rng.integers(2, 7))
    seeds = tuple(range(n_seeds))
    shared = rng.normal(0, 0.01, n_seeds)  # what a seed does to every model alike
    table = {
        n: tuple(float(v) for v in 0.8 + rng.normal(0, 0.004) + shared + rng.normal(0, s, n_seeds))
        for n, s in enumerate(rng.uniform(0.0005, 0.02, 5))
    }
    margin = float(rng.choice([0.002, 0.005, 0.01]))
    marks = {s.number: s.mark for s in standings(_figures(table, seeds), margin)}
    assert marks == _scipy_marks(table, margin)


def test_one_seed_in_common_is_one_run_and_never_picked() -> None:
    figures = [
        SeedFigures(0, {1: 0.80, 2: 0.81}),
        SeedFigures(1, {3: 0.79}),  # no seed in common with the best
        SeedFigures(2, {1: 0.80, 2: 0.81}),
    ]
    result = standings(figures)
    assert [(s.number, s.mark) for s in result] == [(0, "best"), (2, "tied"), (1, "one run")]
    assert result[2].figures.interval() is None
    # the cheapest of the best and its ties: never the one run, however cheap
    cost = {0: 3.0, 1: 0.1, 2: 2.0}
    picked = cheapest(result, cost.get)
    assert picked is not None
    assert picked.number == 2
    assert cheapest(result, {1: 0.1}.get) is None  # none pickable has the figure


def test_bad_figures_and_margins_are_refused() -> None:
    with pytest.raises(ValueError, match="no retrained models"):
        standings([])
    with pytest.raises(ValueError, match="margin must be > 0"):
        standings(_figures(QUICKSTART), 0.0)


def _model(
    number: int, seed: int, accuracy: float, *, given: bool = True, epochs: int = 1
) -> RetrainedModel:
    return RetrainedModel(
        number=number, dataset="synthetic", lanes="mlcn1:1x1", test_accuracy=accuracy,
        test_loss=0.1, test_images=100, params=1, epochs=epochs, batch_size=10, lr=1e-3,
        train_images=100, train_images_per_second=1.0, inference_images_per_second=1.0,
        inference_batch_size=1, device="cpu", seconds=1.0, search_accuracy=None,
        search_epochs=None, seed=seed, seed_given=given,
    )  # fmt: skip


def test_figures_pair_given_seeds_under_one_protocol_and_the_answer_takes_the_widest() -> None:
    models = [
        *(_model(n, s, 0.8 + 0.001 * n) for n in (0, 1) for s in (1, 2, 3)),
        _model(0, 0, 0.9, given=False),  # the search's own seeds: pairs with nothing
        *(_model(n, s, 0.7, epochs=2) for n in (0,) for s in (1, 2)),  # another protocol
    ]
    groups = seed_figures(models)
    assert sorted(len(g) for g in groups.values()) == [1, 2]
    one_epoch = next(g for k, g in groups.items() if k[1] == 1)
    assert [f.values for f in one_epoch] == [
        {1: 0.8, 2: 0.8, 3: 0.8},
        {1: 0.801, 2: 0.801, 3: 0.801},
    ]
    info = {
        "config": {"dataset": "synthetic"},
        "retrained": {"models": [m.to_dict() for m in models]},
    }
    answer = seeded_answer(info)
    assert answer is not None
    assert answer.recipe.startswith("1 ep x 100 images")  # two models with 2+ seeds
    assert [s.number for s in answer.standings] == [1, 0]
    assert isinstance(answer.of(0), Standing)
    assert math.isclose(answer.standings[0].figures.mean, 0.801)
