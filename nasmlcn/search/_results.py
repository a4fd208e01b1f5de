"""Reading results back from a study: the best trials or the Pareto front.

Used at the end of ``nasmlcn search`` and by ``nasmlcn best``; works on any study
written by nasmlcn, without the search's configuration.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import optuna
    from optuna.trial import FrozenTrial

CONSTRAINT_PREFIX = "constraints:"


def is_feasible(trial: FrozenTrial) -> bool:
    """All of the trial's constraints (``trial.set_constraint``) are <= 0."""
    values = [v for k, v in trial.system_attrs.items() if k.startswith(CONSTRAINT_PREFIX)]
    constraints = trial.system_attrs.get("constraints")
    if isinstance(constraints, (list, tuple)):
        values.extend(constraints)
    return all(v <= 0 for v in values)


@dataclass(frozen=True)
class TrialSummary:
    """One trial as reports show it."""

    number: int
    state: str
    values: dict[str, float] | None
    lanes: str | None
    lane_mix: str | None
    num_lanes: int | None
    placement: list[dict[str, Any]]
    predicted: dict[str, Any]
    accuracy_per_epoch: list[float]
    feasible: bool
    reason: str | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "number": self.number,
            "state": self.state,
            "values": self.values,
            "lanes": self.lanes,
            "lane_mix": self.lane_mix,
            "num_lanes": self.num_lanes,
            "placement": self.placement,
            "predicted": self.predicted,
            "val_accuracy_per_epoch": self.accuracy_per_epoch,
            "feasible": self.feasible,
            "reason": self.reason,
        }


def summarize(trial: FrozenTrial, metric_names: list[str] | None) -> TrialSummary:
    attrs = trial.user_attrs
    plan = attrs.get("plan") or {}
    values = None
    if trial.values is not None:
        names = metric_names or [f"objective{i}" for i in range(len(trial.values))]
        values = dict(zip(names, trial.values, strict=False))
    training = attrs.get("training") or {}
    return TrialSummary(
        number=trial.number,
        state=trial.state.name,
        values=values,
        lanes=attrs.get("lanes"),
        lane_mix=attrs.get("lane_mix"),
        num_lanes=attrs.get("num_lanes"),
        placement=plan.get("devices", []),
        predicted=attrs.get("predicted") or {},
        accuracy_per_epoch=list(training.get("val_accuracy_per_epoch", [])),
        feasible=is_feasible(trial),
        reason=attrs.get("fail_reason") or attrs.get("prune_reason"),
    )


def best_trials(study: optuna.Study, top: int = 5) -> list[FrozenTrial]:
    """Single objective: the ``top`` feasible completed trials, best first.
    Several objectives: the feasible Pareto front (Optuna's), best first objective first."""
    from optuna.trial import TrialState

    if len(study.directions) > 1:
        front = study.best_trials
        return sorted(front, key=lambda t: _sort_key(study, t))
    done = [
        t
        for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
        if is_feasible(t) and t.values is not None
    ]
    return sorted(done, key=lambda t: _sort_key(study, t))[:top]


def _sort_key(study: optuna.Study, trial: FrozenTrial) -> tuple[float, int]:
    from optuna.study import StudyDirection

    assert trial.values is not None
    value = trial.values[0]
    return (-value if study.directions[0] == StudyDirection.MAXIMIZE else value, trial.number)
