"""A study's answer, written once (``nasmlcn.study.best_trials``): checked against
Optuna's own ``best_trials`` and used alike by the search, the report and the
dashboard; and the one convention for figures and directions."""

from __future__ import annotations

import math
from collections.abc import Sequence

import optuna
import pytest
from optuna.study import StudyDirection

from nasmlcn.study import (
    CONSTRAINT_PREFIX,
    TrialRecord,
    best_trials,
    number,
    objective_signs,
)


@pytest.mark.parametrize(
    ("value", "expected"),
    [(3, 3.0), (2.5, 2.5), (True, None), (False, None), (math.nan, None), (math.inf, None),
     ("3", None), (None, None)],
)  # fmt: skip
def test_a_figure_is_a_finite_number_and_not_a_bool(value: object, expected: float | None) -> None:
    assert number(value) == expected


def test_the_signs_turn_every_objective_into_one_to_minimise() -> None:
    assert objective_signs(["maximize", "minimize"]) == [-1.0, 1.0]
    assert objective_signs([StudyDirection.MAXIMIZE, StudyDirection.MINIMIZE]) == [-1.0, 1.0]


def _study(directions: Sequence[str], points: Sequence[Sequence[float]]) -> optuna.Study:
    """A study of ``points``; every third trial infeasible, the fifth a repeat of the
    first (its values too)."""
    study = optuna.create_study(directions=[StudyDirection[d.upper()] for d in directions])
    for i, values in enumerate(points):
        trial = study.ask()
        infeasible = i % 3 == 2
        study._storage.set_trial_system_attr(  # what set_constraint writes, both ways
            trial._trial_id, "constraints", [1.0 if infeasible else -1.0]
        )
        study._storage.set_trial_system_attr(
            trial._trial_id, f"{CONSTRAINT_PREFIX}memory", 1.0 if infeasible else -1.0
        )
        if i == 4:
            trial.set_user_attr("repeat_of", 0)
            values = points[0]
        study.tell(trial, list(values))
    return study


POINTS = [(0.9, 3.0), (0.8, 1.0), (0.95, 0.5), (0.7, 0.5), (0.1, 9.0), (0.85, 2.0), (0.6, 0.2)]


def test_the_front_is_optuna_s_feasible_front_each_model_once() -> None:
    study = _study(["maximize", "minimize"], POINTS)
    ours = best_trials(study.get_trials(), study.directions)
    optunas = [t for t in study.best_trials if TrialRecord.of(t).repeat_of is None]
    assert sorted(t.number for t in ours) == sorted(t.number for t in optunas)
    assert [t.number for t in ours] == [0, 1, 3, 6]  # best first objective first
    assert all(TrialRecord.of(t).feasible for t in ours)


def test_a_single_objective_answer_is_the_top_feasible_trials_best_first() -> None:
    study = _study(["minimize"], [(p[1],) for p in POINTS])
    assert [t.number for t in best_trials(study.get_trials(), study.directions, top=3)] == [6, 3, 1]
    everything = best_trials(study.get_trials(), study.directions, top=None)
    assert [t.number for t in everything] == [6, 3, 1, 0]


def test_a_constraint_that_is_no_number_makes_a_trial_infeasible() -> None:
    study = optuna.create_study()
    trial = study.ask()
    study._storage.set_trial_system_attr(trial._trial_id, f"{CONSTRAINT_PREFIX}memory", math.nan)
    study.tell(trial, 1.0)
    assert not TrialRecord.of(study.trials[0]).feasible
    assert best_trials(study.get_trials(), study.directions) == []


def test_the_search_the_report_and_the_dashboard_give_one_answer() -> None:
    from nasmlcn.dashboard import best_rows, extract_study
    from nasmlcn.search import best_trials as search_best

    for directions, points in (
        (["maximize", "minimize"], POINTS),
        (["minimize"], [(p[1],) for p in POINTS]),
    ):
        study = _study(directions, points)
        answer = [t.number for t in best_trials(study.get_trials(), study.directions)]
        assert [t.number for t in search_best(study)] == answer
        assert [r.number for r in best_rows(extract_study(study))] == answer
        front = {r.number for r in extract_study(study).rows if r.pareto}
        assert front == (set(answer) if len(directions) > 1 else {answer[0]})
