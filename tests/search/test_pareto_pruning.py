"""Pruning in a multi-objective study keeps the Pareto front.

The same 80 architectures are searched twice (random sampler, one seed): without
pruning (the reference, whose front is the study's right answer) and with the
default pruner. Every trial on the reference front must finish in the pruned
study, while the pruner still stops dominated trials early. The rule before
(below the median of *every* finished trial) is replayed on the same trials to
show the test can fail: it removed most of the front's cheap end.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from nasmlcn.search import CorrelationPruner, FinishedTrial, SearchConfig, run_search
from nasmlcn.search._results.summary import finished_for_pruning
from nasmlcn.search.pruners import replay_pruning
from nasmlcn.study import load_existing_study

COST = "latency"


def _pair(tmp_path: Path, objectives: tuple[str, ...]) -> tuple[SearchConfig, SearchConfig]:
    base = SearchConfig(
        devices="8xK80",
        mem="12GB",
        sampler="random",
        evaluator="proxy",
        objectives=objectives,
        epochs=5,
        trials=80,
        seed=0,
        storage=f"sqlite:///{tmp_path / 'p.db'}",
    )
    reference = base.with_overrides(study="no-prune", prune=False)
    pruned = base.with_overrides(study="prune", prune=True)
    run_search(reference)
    run_search(pruned)
    return reference, pruned


@pytest.fixture(scope="module")
def latency_pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[SearchConfig, SearchConfig]:
    return _pair(tmp_path_factory.mktemp("pareto"), ("accuracy", "latency"))


def test_the_default_pruner_keeps_every_front_trial_and_still_prunes(
    latency_pair: tuple[SearchConfig, SearchConfig],
) -> None:
    reference, pruned = latency_pair
    ref = load_existing_study("no-prune", reference.storage)
    live = load_existing_study("prune", pruned.storage)
    # the same architectures in the same order
    assert [t.params for t in ref.trials] == [t.params for t in live.trials]
    front = {t.number for t in ref.best_trials}
    assert len(front) >= 5
    states = {t.number: t.state.name for t in live.trials}
    assert {n: states[n] for n in front} == {n: "COMPLETE" for n in front}
    assert {t.number for t in live.best_trials} == front
    # it still stops dominated trials early, and only those that end off the front
    pruned_numbers = {n for n, s in states.items() if s == "PRUNED"}
    assert len(pruned_numbers) >= 5
    assert not pruned_numbers & front


def test_the_front_spans_the_study_s_cost_range(
    latency_pair: tuple[SearchConfig, SearchConfig],
) -> None:
    """The check above means something only if the front reaches the cheap end,
    where accuracy is below the study's median."""
    reference, _ = latency_pair
    ref = load_existing_study("no-prune", reference.storage)
    done = [t for t in ref.trials if t.state.name == "COMPLETE"]
    latencies = [t.values[1] for t in done]
    front = ref.best_trials
    assert min(t.values[1] for t in front) == min(latencies)
    spread = max(latencies) - min(latencies)
    assert max(t.values[1] for t in front) - min(latencies) >= 0.5 * spread
    accuracies = sorted(t.values[0] for t in done)
    median = accuracies[len(accuracies) // 2]
    assert sum(t.values[0] < median for t in front) >= 2


def test_the_rule_before_would_have_removed_front_trials_and_the_replay_is_the_live_run(
    latency_pair: tuple[SearchConfig, SearchConfig],
) -> None:
    reference, pruned = latency_pair
    ref = load_existing_study("no-prune", reference.storage)
    live = load_existing_study("prune", pruned.storage)
    trials = finished_for_pruning(ref, [(COST, 1, False)], repeats=True)
    numbers = [t.number for t in ref.trials]
    assert len(trials) == len(numbers)
    pruner = CorrelationPruner(
        reference.prune_threshold, reference.prune_percentile, reference.prune_min_trials
    )
    front = {t.number for t in ref.best_trials}
    before = replay_pruning(trials, pruner, ignore_costs=True)
    removed_before = {n for n, e in zip(numbers, before, strict=True) if e is not None} & front
    assert len(removed_before) >= 3
    now = replay_pruning(trials, pruner)
    replayed = {n: e for n, e in zip(numbers, now, strict=True) if e is not None}
    live_pruned = {t.number for t in live.trials if t.state.name == "PRUNED"}
    assert set(replayed) == live_pruned
    assert not set(replayed) & front


def test_a_cheap_trial_is_compared_only_with_trials_that_cost_no_more() -> None:
    """Five finished trials, accuracy rising with cost (the shape of a front). A
    trial as cheap as the cheapest, below every finished trial's accuracy, is
    kept; one that costs more than all five and is below their median is pruned."""
    finished = [FinishedTrial((0.5 + 0.05 * i, 0.6 + 0.05 * i), {COST: 1.0 + i}) for i in range(6)]
    pruner = CorrelationPruner(threshold=0.9, percentile=50, min_trials=5)
    assert pruner.decide(1, 0.30, finished, {COST: 0.5}) is None  # no rivals: kept
    assert pruner.decide(1, 0.30, finished, {COST: 3.5}) is None  # 3 rivals < min_trials
    reason = pruner.decide(1, 0.30, finished, {COST: 10.0})
    assert reason is not None
    assert "6 finished trials that cost no more (latency)" in reason
    # the rule before: compared with every finished trial, the cheap one is pruned
    assert pruner.decide(1, 0.30, finished, None) is not None
    # an infeasible finished trial is no rival
    infeasible = [FinishedTrial(f.curve, f.costs, feasible=False) for f in finished]
    assert pruner.decide(1, 0.30, infeasible, {COST: 10.0}) is None


def test_every_cost_must_be_no_more() -> None:
    finished = [
        FinishedTrial((0.5 + 0.05 * i, 0.6 + 0.05 * i), {"latency": 1.0, "memory": 1.0 + i})
        for i in range(6)
    ]
    pruner = CorrelationPruner(threshold=0.9, percentile=50, min_trials=5)
    # cheaper in memory than all of them: no rivals, whatever its latency
    assert pruner.decide(1, 0.3, finished, {"latency": 5.0, "memory": 0.5}) is None
    assert pruner.decide(1, 0.3, finished, {"latency": 5.0, "memory": 9.0}) is not None
