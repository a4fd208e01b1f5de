"""Successive halving over epochs (``--pruner halving``): the rule and a real search."""

from __future__ import annotations

from pathlib import Path

import pytest
from optuna.trial import TrialState

from nasmlcn.errors import SearchError
from nasmlcn.search import PRUNERS, FinishedTrial, HalvingPruner, SearchConfig, run_search
from nasmlcn.study import load_existing_study


@pytest.mark.parametrize(
    ("epochs", "rate", "rungs"),
    [(1, 3, []), (3, 3, [1]), (4, 3, [1, 3]), (10, 3, [1, 3, 9]), (9, 2, [1, 2, 4, 8])],
)
def test_rungs_are_powers_of_the_rate_below_the_last_epoch(
    epochs: int, rate: int, rungs: list[int]
) -> None:
    assert HalvingPruner(epochs, rate).rungs == rungs


def _finished(*accuracies: float, latency: float = 1.0) -> list[FinishedTrial]:
    return [FinishedTrial((a, a + 0.1, a + 0.2), {"latency": latency}) for a in accuracies]


def test_a_rung_keeps_the_best_third_of_the_trials_that_reached_it() -> None:
    pruner = HalvingPruner(epochs=3, rate=3, min_trials=5)
    rivals = _finished(0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8)  # 9 with the trial: keep 3
    assert pruner.decide(1, 0.75, rivals) is None  # 2nd
    assert pruner.decide(1, 0.65, rivals) is None  # 3rd
    reason = pruner.decide(1, 0.55, rivals)  # 4th
    assert reason is not None
    assert "best 3 of 9" in reason
    assert "0.5500" in reason
    assert pruner.decide(2, 0.0, rivals) is None  # not a rung
    assert pruner.decide(3, 0.0, rivals) is None  # the last epoch is the result


def test_too_few_trials_at_a_rung_promote_everyone() -> None:
    pruner = HalvingPruner(epochs=3, rate=3, min_trials=5)
    assert pruner.decide(1, 0.0, _finished(0.5, 0.6, 0.7, 0.8)) is None
    assert pruner.decide(1, 0.0, _finished(0.5, 0.6, 0.7, 0.8, 0.9)) is not None


def test_only_rivals_that_cost_no_more_count() -> None:
    pruner = HalvingPruner(epochs=3, rate=3, min_trials=2)
    dear = _finished(0.8, 0.9, 0.95, latency=5.0)
    cheap = _finished(0.1, 0.2, latency=1.0)
    # a cheap trial is compared with the cheap ones only: best of 3
    assert pruner.decide(1, 0.3, [*dear, *cheap], {"latency": 1.0}) is None
    # a dear one with everyone: 4 better of 6 -> stopped
    assert pruner.decide(1, 0.3, [*dear, *cheap], {"latency": 5.0}) is not None
    infeasible = [FinishedTrial((0.9, 0.9, 0.9), {"latency": 1.0}, feasible=False)] * 5
    assert pruner.decide(1, 0.3, [*infeasible, *cheap], {"latency": 1.0}) is None


def test_the_registry_builds_it_from_the_config() -> None:
    config = SearchConfig(epochs=10, pruner="halving", halving_rate=2, prune_min_trials=4)
    pruner = PRUNERS.get("halving").make(config)
    assert pruner == HalvingPruner(10, 2, 4)
    with pytest.raises(SearchError, match="halving_rate must be an integer >= 2, got 1"):
        SearchConfig(halving_rate=1)


def _search(tmp_path: Path, objectives: tuple[str, ...], pruner: str) -> list:
    config = SearchConfig(
        evaluator="proxy",
        sampler="random",
        objectives=objectives,
        trials=14,
        epochs=3,
        devices="4xK80",
        mem="12GB",
        pruner=pruner,
        prune_min_trials=3,
        storage=f"sqlite:///{tmp_path / f'{pruner}.db'}",
    )
    result = run_search(config)
    return load_existing_study(result.study, config.storage).get_trials(deepcopy=False)


@pytest.mark.parametrize("objectives", [("accuracy",), ("accuracy", "latency")], ids="-".join)
def test_a_halving_search_stops_most_trials_at_the_first_rung(
    tmp_path: Path, objectives: tuple[str, ...]
) -> None:
    trials = _search(tmp_path, objectives, "halving")
    pruned = [t for t in trials if t.state == TrialState.PRUNED]
    complete = [t for t in trials if t.state == TrialState.COMPLETE]
    assert len(pruned) + len(complete) == 14
    assert pruned, "successive halving stopped no trial"
    for t in pruned:
        assert len(t.user_attrs["training"]["val_accuracy_per_epoch"]) == 1
        assert "successive halving" in t.user_attrs["prune_reason"]
        if len(objectives) > 1:  # later trials' rivals need a pruned trial's costs
            assert set(t.user_attrs["pruning_costs"]) == {"latency"}
    # the first trials at the rung are promoted: they cannot be compared yet
    assert all(t.state == TrialState.COMPLETE for t in trials[:3])
    # every promotion was earned: a pruned trial was not among the best third of
    # the trials that reached epoch 1 before it (single objective: all are rivals)
    if len(objectives) == 1:
        for t in pruned:
            before = [
                u.user_attrs["training"]["val_accuracy_per_epoch"][0]
                for u in trials[: t.number]
                if u.state in (TrialState.COMPLETE, TrialState.PRUNED)
            ]
            mine = t.user_attrs["training"]["val_accuracy_per_epoch"][0]
            assert sum(b > mine for b in before) >= -(-(len(before) + 1) // 3)


def test_the_correlation_pruner_is_the_default_and_never_halves(tmp_path: Path) -> None:
    assert SearchConfig().pruner == "correlation"
    trials = _search(tmp_path, ("accuracy",), "correlation")
    assert not any("successive halving" in (t.user_attrs.get("prune_reason") or "") for t in trials)
