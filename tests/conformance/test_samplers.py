"""Conformance of every registered sampler (``nasmlcn.search.SAMPLERS``).

Each runs a short proxy search, single- and multi-objective (accuracy, latency):
the study reaches its trial count, every trial's parameters lie in the space's
distributions, one ``--seed`` reproduces the same parameters (the runner seeds each
trial's sampler from it, ``nasmlcn/study/_claim.py``) and another seed does not.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import optuna
import pytest
from optuna.distributions import (
    BaseDistribution,
    CategoricalDistribution,
    FloatDistribution,
    IntDistribution,
)
from optuna.trial import FrozenTrial, TrialState

from nasmlcn.search import SAMPLERS, SearchConfig, run_search, setup_search
from nasmlcn.study import load_existing_study

NAMES = list(SAMPLERS)
OBJECTIVES = [("accuracy",), ("accuracy", "latency")]
TRIALS = 6


def _config(folder: Path, sampler: str, objectives: tuple[str, ...], seed: int) -> SearchConfig:
    return SearchConfig(
        evaluator="proxy",
        sampler=sampler,
        objectives=objectives,
        trials=TRIALS,
        epochs=2,
        devices="4xK80",
        mem="12GB",
        seed=seed,
        storage=f"sqlite:///{folder / 's.db'}",
    )


class _Searches:
    """Runs each (sampler, objectives, seed, run) search once for the module."""

    def __init__(self, factory: pytest.TempPathFactory) -> None:
        self.factory = factory
        self.done: dict[tuple[Any, ...], tuple[SearchConfig, list[FrozenTrial]]] = {}

    def get(
        self, sampler: str, objectives: tuple[str, ...], seed: int, run: int = 0
    ) -> tuple[SearchConfig, list[FrozenTrial]]:
        key = (sampler, objectives, seed, run)
        if key not in self.done:
            config = _config(self.factory.mktemp(sampler), sampler, objectives, seed)
            result = run_search(config)
            study = load_existing_study(result.study, config.storage)
            self.done[key] = (config, study.get_trials(deepcopy=False))
        return self.done[key]


@pytest.fixture(scope="module")
def searches(tmp_path_factory: pytest.TempPathFactory) -> _Searches:
    return _Searches(tmp_path_factory)


def _contains(dist: BaseDistribution, value: Any) -> bool:
    if isinstance(dist, CategoricalDistribution):
        return value in dist.choices
    if isinstance(dist, IntDistribution):
        return (
            isinstance(value, int)
            and dist.low <= value <= dist.high
            and (value - dist.low) % dist.step == 0
        )
    if isinstance(dist, FloatDistribution):
        return isinstance(value, float) and dist.low <= value <= dist.high
    raise AssertionError(f"a space uses an unexpected distribution {dist!r}")


@pytest.mark.parametrize("name", NAMES)
def test_entry_builds_a_seeded_optuna_sampler(name: str) -> None:
    entry = SAMPLERS.get(name)
    assert entry.name == name
    assert entry.description
    sampler = entry.make(3, TRIALS)
    assert isinstance(sampler, optuna.samplers.BaseSampler)


@pytest.mark.parametrize("objectives", OBJECTIVES, ids="-".join)
@pytest.mark.parametrize("name", NAMES)
def test_search_reaches_the_trial_count_within_the_space(
    name: str, objectives: tuple[str, ...], searches: _Searches
) -> None:
    config, trials = searches.get(name, objectives, seed=0)
    states = [t.state for t in trials]
    assert TrialState.FAIL not in states, [t.user_attrs.get("fail_reason") for t in trials]
    finished = [t for t in trials if t.state in (TrialState.COMPLETE, TrialState.PRUNED)]
    assert len(finished) == len(trials)
    assert sum("repeat_of" not in t.user_attrs for t in trials) == TRIALS  # models
    assert sum(t.state == TrialState.COMPLETE for t in trials) >= TRIALS // 2
    space = setup_search(config).space.distributions()
    for trial in trials:
        assert set(trial.params) == set(space), trial.number
        for param, value in trial.params.items():
            assert trial.distributions[param] == space[param], (trial.number, param)
            assert _contains(space[param], value), (trial.number, param, value)
        if trial.state == TrialState.COMPLETE:
            assert trial.values is not None
            assert len(trial.values) == len(objectives)


@pytest.mark.parametrize("objectives", OBJECTIVES, ids="-".join)
@pytest.mark.parametrize("name", NAMES)
def test_the_seed_reproduces_the_parameters_and_another_seed_differs(
    name: str, objectives: tuple[str, ...], searches: _Searches
) -> None:
    def params(seed: int, run: int) -> list[dict[str, Any]]:
        return [t.params for t in searches.get(name, objectives, seed, run)[1]]

    first = params(0, 0)
    assert params(0, 1) == first
    other = params(1, 0)
    assert other != first
    assert other[0] != first[0]  # even the first proposal is seeded


@pytest.mark.parametrize("objectives", OBJECTIVES, ids="-".join)
@pytest.mark.parametrize("name", NAMES)
def test_multi_fidelity_search_reaches_the_trial_count(
    name: str, objectives: tuple[str, ...], tmp_path: Path
) -> None:
    """Every sampler works under successive halving (``--pruner halving``): pruned
    trials are results, and the sampler keeps proposing after them."""
    config = _config(tmp_path, name, objectives, seed=0).with_overrides(
        trials=10, epochs=3, pruner="halving", prune_min_trials=2
    )
    run_search(config)
    trials = load_existing_study(config.study_name(), config.storage).get_trials(deepcopy=False)
    assert [t.state for t in trials].count(TrialState.FAIL) == 0
    assert sum("repeat_of" not in t.user_attrs for t in trials) == 10  # models
    pruned = [t for t in trials if t.state == TrialState.PRUNED]
    assert pruned, "successive halving stopped no trial"
    for t in pruned:
        assert len(t.user_attrs["training"]["val_accuracy_per_epoch"]) == 1  # the rung
        assert t.user_attrs["prune_reason"].startswith("successive halving")
    assert len({tuple(sorted(t.params.items())) for t in trials}) >= 8  # still exploring
