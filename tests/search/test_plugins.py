"""A plug-in added from outside the package: a sampler, an evaluator, a pruner and an
objective, each one definition with one registration (its family's decorator). Each is
listed in its registry, accepted by the configuration and by ``nasmlcn search``, and
used by a real search; the fixture takes them back afterwards (the registries are the
package's own)."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import optuna
import pytest
from optuna.trial import TrialState

from nasmlcn.data import DatasetInfo
from nasmlcn.planning import Plan
from nasmlcn.search import (
    EVALUATORS,
    OBJECTIVES,
    PRUNERS,
    SAMPLERS,
    EpochCallback,
    EpochCorrelation,
    EpochReport,
    EvalRequest,
    Evaluation,
    FinishedTrial,
    SearchConfig,
    setup_search,
)
from nasmlcn.search.evaluators import register_evaluator
from nasmlcn.search.objectives import register_objective
from nasmlcn.search.pruners import register_pruner
from nasmlcn.search.samplers import register_sampler
from nasmlcn.study import TrialRecord
from tests._cli import run_cli

SAMPLER, EVALUATOR, PRUNER, OBJECTIVE = "test-random", "test-steady", "test-first", "test-lanes"
PRUNED = "a test pruner: a trial has finished"


@pytest.fixture
def added() -> Iterator[list[str]]:
    """Adds the four plug-ins; yields what was made with them, in order (``sampler``,
    ``evaluator``, ``pruner``); takes them back."""
    made: list[str] = []

    @register_sampler(SAMPLER, "Optuna's random sampler, added by a test")
    def test_random(seed: int, trials: int) -> optuna.samplers.BaseSampler:
        made.append("sampler")
        return optuna.samplers.RandomSampler(seed=seed)

    @register_evaluator(EVALUATOR)
    class SteadyEvaluator:
        """0.6 after the first epoch, 0.1 more after each other."""

        name = EVALUATOR
        measured = False
        checkpoints = False

        def __init__(self, *, config: SearchConfig, dataset: DatasetInfo) -> None:
            made.append("evaluator")

        def evaluate(self, request: EvalRequest, on_epoch: EpochCallback) -> Evaluation:
            curve: list[float] = []
            for epoch in range(1, request.epochs + 1):
                curve.append(0.5 + 0.1 * epoch)
                if not on_epoch(EpochReport(epoch, curve[-1], 0.0)).goes_on:
                    break
            return Evaluation(curve[-1], tuple(curve), 0.0)

    @register_pruner(PRUNER, "stops every trial after its first epoch once one has finished")
    class FirstPruner:
        wants_pruned = False

        def __init__(self, config: SearchConfig) -> None:
            made.append("pruner")

        def allows(self, epoch: int, correlations: Sequence[EpochCorrelation]) -> bool:
            return True

        def decide(
            self,
            epoch: int,
            accuracy: float,
            finished: Sequence[FinishedTrial],
            costs: Mapping[str, float] | None = None,
        ) -> str | None:
            return PRUNED if finished else None

    @register_objective(OBJECTIVE, "minimize", "lanes", "the model's lanes, added by a test (min)")
    def lanes(plan: Plan, evaluation: Evaluation | None) -> float:
        return float(plan.spec.num_lanes)

    try:
        yield made
    finally:
        for registry, name in (
            (SAMPLERS, SAMPLER),
            (EVALUATORS, EVALUATOR),
            (PRUNERS, PRUNER),
            (OBJECTIVES, OBJECTIVE),
        ):
            registry.unregister(name)


def _options(db: Path) -> list[str]:
    return [
        *("--devices", "2xK80", "--mem", "12GB", "--epochs", "2", "--trials", "3"),
        *("--sampler", SAMPLER, "--evaluator", EVALUATOR, "--pruner", PRUNER),
        *("--objectives", f"accuracy,{OBJECTIVE}", "--storage", f"sqlite:///{db}"),
        *("--study", "plugged", "--seed", "1", "--json", "-q"),
    ]


def test_unknown_plug_ins_are_refused_before_they_are_added(tmp_path: Path) -> None:
    """The oracle for the next test: without the fixture each name is refused."""
    for registry, name in (
        (SAMPLERS, SAMPLER),
        (EVALUATORS, EVALUATOR),
        (PRUNERS, PRUNER),
        (OBJECTIVES, OBJECTIVE),
    ):
        assert name not in registry
    refused = run_cli("search", *_options(tmp_path / "s.db"))
    assert refused.returncode != 0
    assert "unknown" in refused.stderr
    assert not (tmp_path / "s.db").exists()


def test_added_plug_ins_are_listed_accepted_and_used_by_a_search(
    added: list[str], tmp_path: Path
) -> None:
    assert SAMPLER in SAMPLERS.names("test-*")
    assert EVALUATOR in EVALUATORS.names("test-*")
    assert PRUNER in PRUNERS.names("test-*")
    assert OBJECTIVE in OBJECTIVES.names("test-*")

    config = SearchConfig(
        devices="2xK80",
        mem="12GB",
        sampler=SAMPLER,
        evaluator=EVALUATOR,
        pruner=PRUNER,
        objectives=("accuracy", OBJECTIVE),
    )
    assert [o.name for o in setup_search(config).objectives] == ["accuracy", OBJECTIVE]

    db = tmp_path / "s.db"
    ran = run_cli("search", *_options(db))
    assert ran.returncode == 0, ran.stderr
    result = json.loads(ran.stdout)
    assert result["config"]["sampler"] == SAMPLER
    assert result["metric_names"] == ["accuracy", "lanes"]
    assert result["completed"] >= 1
    # the first trial finished on the evaluator's curve; the pruner stopped the others
    assert {trial["reason"] for trial in result["pruned"]} == {PRUNED}
    assert result["completed"] + len(result["pruned"]) == 3
    assert set(added) == {"sampler", "evaluator", "pruner"}
    study = optuna.load_study(study_name="plugged", storage=f"sqlite:///{db}")
    done = [TrialRecord.of(t) for t in study.trials if t.state == TrialState.COMPLETE]
    assert done
    for record in done:  # the evaluator's last accuracy, and the model's lanes
        assert record.num_lanes is not None
        assert record.values == (pytest.approx(0.7), float(record.num_lanes))
