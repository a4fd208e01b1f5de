"""Conformance of every registered objective (``nasmlcn.search.OBJECTIVES``).

The contract (``nasmlcn/search/_objectives.py``): an objective has a direction
(``maximize``/``minimize``, which its one-line description states as ``(max)`` or
``(min)``) and a metric name; ``value(plan, evaluation)`` is a finite number, and
needs no evaluation unless ``needs_training``. A study made with it has its
direction and metric name. An objective to minimise is a cost: the search spaces
take it to reward a cheaper model (``SpaceContext.rewards_cost``), so it grows
when the model grows.
"""

from __future__ import annotations

import math
from pathlib import Path

import optuna
import pytest
from optuna.study import StudyDirection
from optuna.trial import TrialState

from nasmlcn.hardware import parse_devices
from nasmlcn.planning import plan_model
from nasmlcn.search import (
    OBJECTIVES,
    EvalJob,
    Objective,
    ProxyEvaluator,
    SearchConfig,
    run_search,
)
from nasmlcn.search._study_access import load_existing_study
from nasmlcn.specs import MLCNSpec

NAMES = list(OBJECTIVES)


@pytest.fixture(scope="module")
def study_of_all(tmp_path_factory: pytest.TempPathFactory) -> optuna.Study:
    """One proxy study with every objective at once."""
    folder: Path = tmp_path_factory.mktemp("objectives")
    config = SearchConfig(
        evaluator="proxy",
        objectives=tuple(NAMES),
        sampler="random",
        trials=4,
        epochs=2,
        devices="2xK80",
        mem="12GB",
        prune=False,
        storage=f"sqlite:///{folder / 's.db'}",
    )
    result = run_search(config)
    return load_existing_study(result.study, config.storage)


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
    name: str, study_of_all: optuna.Study
) -> None:
    study = study_of_all
    objective = OBJECTIVES.get(name)
    i = NAMES.index(name)
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
    plan = plan_model(spec, parse_devices("1xK80", mem="12GB"))
    evaluation = None
    if objective.needs_training:
        job = EvalJob(spec=spec, trial=0, seed=0, epochs=2)
        evaluation = ProxyEvaluator().evaluate(job, lambda _: None)
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
