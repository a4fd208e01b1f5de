"""A study's trials as rows: what every figure, note and export reads.

:func:`extract_study` reads every trial once into a :class:`TrialRow`; the Pareto
front is marked on the rows and :func:`best_rows` picks the trials the report shows
first, both by the study's one answer (:func:`nasmlcn.study.best_of`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from nasmlcn.study import best_of
from nasmlcn.study import number as _number

if TYPE_CHECKING:
    import optuna
    from optuna.trial import FrozenTrial

    from nasmlcn.study import StudyRecord

MIB = 1024**2


class TrialRow(NamedTuple):
    """One trial as every figure and export sees it.

    ``values`` are in the study's objective order (``StudyData.metric_names``);
    ``pareto`` marks the feasible Pareto front (or the best trial of a
    single-objective study). ``attrs`` is the trial's user attributes, unchanged.
    """

    number: int
    state: str
    values: tuple[float, ...] | None
    feasible: bool
    pareto: bool
    constraints: dict[str, float]
    params: dict[str, Any]
    lanes: str | None
    lane_mix: str | None
    num_lanes: int | None
    latency: float | None
    time_unit: str
    peak_memory_bytes: float | None
    model_params: int | None
    imbalance: float | None
    accuracy_per_epoch: tuple[float, ...]
    generation: int | None
    reason: str | None
    datetime_start: str | None
    datetime_complete: str | None
    duration_s: float | None
    attrs: Mapping[str, Any]
    learned: bool = True
    """False when the trained model did not beat chance by a clear margin
    (:mod:`nasmlcn.search.objectives`): infeasible, and drawn apart from trials
    over a budget."""
    repeat_of: int | None = None
    """A repeat (:mod:`nasmlcn.search._run.repeats`): it took this trial's result, the
    same model trained once; the answers show the original only."""
    proposed: int = 1
    """Trials that proposed this trial's model: it and its repeats."""

    @property
    def complete(self) -> bool:
        return self.state == "COMPLETE" and self.values is not None

    @property
    def label(self) -> str:
        """``#12 8*mlcn2:2x3,...``: what hover texts and legends show."""
        return f"#{self.number} {self.lane_mix or self.lanes or ''}".rstrip()


class StudyData(NamedTuple):
    """A study's trials and what nasmlcn recorded about it."""

    name: str
    metric_names: tuple[str, ...]
    directions: tuple[str, ...]
    """``"maximize"`` or ``"minimize"`` per objective."""
    info: Mapping[str, Any]
    """The study's ``nasmlcn`` user attribute (empty for foreign studies)."""
    rows: tuple[TrialRow, ...]

    @property
    def multi_objective(self) -> bool:
        return len(self.directions) > 1

    @property
    def complete(self) -> list[TrialRow]:
        return [r for r in self.rows if r.complete]

    @property
    def models(self) -> list[TrialRow]:
        """The completed trials, each model once: a repeat (it took an earlier
        trial's result) is its original's model and point."""
        return [r for r in self.complete if r.repeat_of is None]

    @property
    def state_counts(self) -> dict[str, int]:
        return dict(Counter(r.state for r in self.rows))

    @property
    def record(self) -> StudyRecord:
        """:attr:`info` read as the study's typed record."""
        from nasmlcn.study import StudyRecord

        return StudyRecord.read(self.info)

    @property
    def accuracy_is_proxy(self) -> bool:
        return self.record.accuracy_is_proxy

    @property
    def target_devices(self) -> str | None:
        """The target devices the predictions are for (``8xK80``); None for
        foreign studies."""
        devices = self.record.config.get("devices")
        return str(devices) if devices else None

    @property
    def learning_threshold(self) -> float | None:
        """The accuracy a trial had to reach to count as learning (0.19 for 10
        classes), read back from a trial's ``learning`` constraint (threshold minus
        its accuracy); None when no trial carries one (older or untrained studies)."""
        from nasmlcn.study import LEARNING_CONSTRAINT

        for r in self.rows:
            margin = r.constraints.get(LEARNING_CONSTRAINT)
            accuracy = (r.attrs.get("training") or {}).get("accuracy")
            if margin is not None and isinstance(accuracy, (int, float)):
                return round(float(accuracy) + margin, 6)
        return None


def extract_study(study: optuna.Study) -> StudyData:
    """Reads every trial of ``study`` once into :class:`TrialRow` s."""
    from nasmlcn.study import StudyRecord, metric_names

    names = tuple(metric_names(study))
    directions = tuple(d.name.lower() for d in study.directions)
    trials = study.get_trials(deepcopy=False)
    rows = [_row(t) for t in trials]
    proposed = Counter(r.repeat_of for r in rows if r.repeat_of is not None)
    front = _front_numbers(rows, directions)
    rows = [r._replace(pareto=r.number in front, proposed=1 + proposed[r.number]) for r in rows]
    return StudyData(study.study_name, names, directions, StudyRecord.read(study).info, tuple(rows))


def _row(trial: FrozenTrial) -> TrialRow:
    from nasmlcn.study import TrialRecord

    record = TrialRecord.of(trial)
    predicted = record.predicted
    system = trial.system_attrs
    generation = next((v for k, v in system.items() if k.endswith(":generation")), None)
    duration = trial.duration.total_seconds() if trial.duration is not None else None
    return TrialRow(
        number=trial.number,
        state=trial.state.name,
        values=record.values,
        feasible=record.feasible,
        pareto=False,
        constraints=record.constraints,
        params=record.params,
        lanes=record.lanes,
        lane_mix=record.lane_mix,
        num_lanes=record.num_lanes,
        latency=_number(predicted.get("latency")),
        time_unit=str(predicted.get("time_unit") or "s"),
        peak_memory_bytes=_number(predicted.get("peak_memory_bytes")),
        model_params=predicted.get("params"),
        imbalance=_number(predicted.get("imbalance")),
        accuracy_per_epoch=tuple(record.accuracy_per_epoch),
        generation=int(generation) if isinstance(generation, (int, float)) else None,
        reason=record.reason,
        datetime_start=trial.datetime_start.isoformat() if trial.datetime_start else None,
        datetime_complete=trial.datetime_complete.isoformat() if trial.datetime_complete else None,
        duration_s=duration,
        attrs=record.attrs,
        learned=record.learned,
        repeat_of=record.repeat_of,
    )


def _answering(rows: Sequence[TrialRow]) -> list[TrialRow]:
    """The rows that may answer (:func:`nasmlcn.study.candidates`' rule, on rows):
    completed, feasible, with values, no repeat (its original's model and result)."""
    return [
        r
        for r in rows
        if r.complete and r.feasible and r.values is not None and r.repeat_of is None
    ]


def _front_numbers(rows: Sequence[TrialRow], directions: Sequence[str]) -> set[int]:
    """The front's trials; of a single objective, the best trial (ties included)."""
    ranked = best_of(_answering(rows), directions, top=None)
    if len(directions) > 1 or not ranked:
        return {r.number for r in ranked}
    best = ranked[0].values[0]  # type: ignore[index]
    return {r.number for r in ranked if r.values is not None and r.values[0] == best}


def best_rows(data: StudyData, top: int = 5) -> list[TrialRow]:
    """The study's answer (:func:`nasmlcn.study.best_of`) as rows: the Pareto front,
    best first objective first (several objectives), else the ``top`` best. Each
    model once: a repeat's original stands for it (``proposed`` says how many trials
    proposed it)."""
    return best_of(_answering(data.rows), data.directions, top)
