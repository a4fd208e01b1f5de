"""Conformance of every registered objective (``nasmlcn.search.OBJECTIVES``).

The contract (``nasmlcn/search/objectives/_base.py``): an objective has a direction
(``maximize``/``minimize``, which its one-line description states as ``(max)`` or
``(min)``) and a metric name; ``value(plan, evaluation)`` is a finite number, and
needs no evaluation unless ``needs_training``. A study made with it has its
direction and metric name. An objective to minimise is a cost: the search spaces
take it to reward a cheaper model (``SpaceContext.rewards_cost``), so it grows
when the model grows. An objective defined for some cost models only
(``Objective.cost_models``, e.g. ``energy``: ``capsacc``) is tested on a catalog
device kind that uses one of them (``--devices capsacc``).
"""

from __future__ import annotations

import math
from pathlib import Path

import optuna
import pytest
from optuna.study import StudyDirection
from optuna.trial import TrialState

from nasmlcn.costs import devices_cost_model
from nasmlcn.hardware import load_catalog, parse_devices
from nasmlcn.planning import plan_model
from nasmlcn.search import (
    OBJECTIVES,
    EpochDecision,
    EvalRequest,
    Objective,
    ProxyEvaluator,
    SearchConfig,
    run_search,
)
from nasmlcn.specs import MLCNSpec
from nasmlcn.study import load_existing_study

NAMES = list(OBJECTIVES)


def _device_kind(objective: Objective) -> str:
    """A catalog kind whose cost model ``objective`` is defined for (K80: any)."""
    if not objective.cost_models:
        return "K80"
    catalog = load_catalog()
    return next(k for k in catalog if catalog[k].cost_model in objective.cost_models)


def _study_names(kind: str) -> list[str]:
    """The objectives a study on ``kind`` devices can have."""
    model = devices_cost_model(kind, "analytic")
    return [
        n
        for n in NAMES
        if not OBJECTIVES.get(n).cost_models or model in OBJECTIVES.get(n).cost_models
    ]


@pytest.fixture(scope="module")
def study_of_all(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[optuna.Study, int]]:
    """Proxy studies with every objective at once (one per device kind the objectives
    need): per objective, its study and its index there."""
    folder: Path = tmp_path_factory.mktemp("objectives")
    out: dict[str, tuple[optuna.Study, int]] = {}
    for kind in dict.fromkeys(_device_kind(OBJECTIVES.get(n)) for n in NAMES):
        names = _study_names(kind)
        config = SearchConfig(
            evaluator="proxy",
            objectives=tuple(names),
            sampler="random",
            trials=4,
            epochs=2,
            devices=f"2x{kind}",
            mem="12GB" if kind == "K80" else None,
            prune=False,
            storage=f"sqlite:///{folder / f'{kind}.db'}",
        )
        result = run_search(config)
        study = load_existing_study(result.study, config.storage)
        for i, name in enumerate(names):
            out.setdefault(name, (study, i))
    return out


@pytest.mark.parametrize("name", NAMES)
def test_entry_states_its_direction(name: str) -> None:
    objective = OBJECTIVES.get(name)
    assert isinstance(objective, Objective)
    assert objective.name == name
    assert objective.direction in ("maximize", "minimize")
    suffix = "(max)" if objective.direction == "maximize" else "(min)"
    assert objective.description.endswith(suffix), objective.description
    assert objective.metric
    assert len({OBJECTIVES.get(n).metric for n in NAMES}) == len(NAMES)  # one column each


@pytest.mark.parametrize("name", NAMES)
def test_a_study_has_its_direction_metric_and_finite_values(
    name: str, study_of_all: dict[str, tuple[optuna.Study, int]]
) -> None:
    study, i = study_of_all[name]
    objective = OBJECTIVES.get(name)
    expected = (
        StudyDirection.MAXIMIZE if objective.direction == "maximize" else StudyDirection.MINIMIZE
    )
    assert study.directions[i] == expected
    assert study.metric_names is not None
    assert study.metric_names[i] == objective.metric
    complete = study.get_trials(states=(TrialState.COMPLETE,))
    assert complete
    for trial in complete:
        assert math.isfinite(trial.values[i]), (trial.number, trial.values)


def _value(objective: Objective, lanes: str) -> float:
    spec = MLCNSpec.from_lanes(lanes)
    kind = _device_kind(objective)
    model = devices_cost_model(kind, "analytic")
    plan = plan_model(spec, parse_devices(f"1x{kind}", mem="12GB"), cost_model=model)
    evaluation = None
    if objective.needs_training:
        job = EvalRequest(spec=spec, trial=0, seed=0, epochs=2)
        evaluation = ProxyEvaluator().evaluate(job, lambda _: EpochDecision())
    return float(objective.value(plan, evaluation))


@pytest.mark.parametrize("name", NAMES)
def test_value_of_a_proxy_trial_is_finite_and_costs_grow_with_the_model(name: str) -> None:
    objective = OBJECTIVES.get(name)
    small = _value(objective, "mlcn2:2x1")
    large = _value(objective, "2*mlcn2:2x1,mlcn1:3x2")
    assert math.isfinite(small)
    assert math.isfinite(large)
    if objective.direction == "minimize":
        assert 0 < small < large, (small, large)
