"""Extraction: what the figures, notes and exports show, as plain data.

Everything here reads a study once and returns NamedTuples of numbers and
strings; nothing imports plotly, so the figures (:mod:`._figures`), the report,
the CSV/JSON export and optuna-dashboard's saved figures all share one tested
source of truth. numpy is used only for the Pareto front and the hypervolume.
"""

from __future__ import annotations

import logging
import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    import optuna
    from optuna.trial import FrozenTrial

    from nasmlcn.search import EpochCorrelation

logger = logging.getLogger(__name__)

HYPERVOLUME_MARGIN = 0.1
"""The hypervolume's reference point lies this fraction of each objective's range
beyond the worst feasible value (see :func:`hypervolume_history`)."""

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
    (:mod:`nasmlcn.search._learning`): infeasible, and drawn apart from trials
    over a budget."""

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
    def state_counts(self) -> dict[str, int]:
        return dict(Counter(r.state for r in self.rows))

    @property
    def accuracy_is_proxy(self) -> bool:
        return bool(self.info.get("accuracy_is_proxy"))

    @property
    def target_devices(self) -> str | None:
        """The target devices the predictions are for (``8xK80``); None for
        foreign studies."""
        devices = (self.info.get("config") or {}).get("devices")
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


class HypervolumeHistory(NamedTuple):
    """Hypervolume of the feasible front after each completed trial.

    Objectives are scaled to [0, 1] between the best (0) and worst (1) feasible
    value of the study, so that accuracy (about 1) and memory (hundreds of MiB)
    weigh the same; the reference point is ``1 + HYPERVOLUME_MARGIN`` in every
    scaled objective, listed here in objective units. The largest possible value
    is therefore ``(1 + margin) ** n_objectives``.
    """

    numbers: tuple[int, ...]
    values: tuple[float, ...]
    reference_point: tuple[float, ...]
    best: tuple[float, ...]
    worst: tuple[float, ...]


class ObjectiveHistory(NamedTuple):
    """One objective over the completed trials, with the best feasible so far."""

    name: str
    direction: str
    numbers: tuple[int, ...]
    values: tuple[float, ...]
    feasible: tuple[bool, ...]
    best_so_far: tuple[float | None, ...]
    learned: tuple[bool, ...] = ()
    """Per trial, whether it learned (empty: all did)."""


class Importances(NamedTuple):
    """Parameter importances per objective (Optuna's default evaluator), or why not."""

    objectives: tuple[str, ...]
    params: tuple[str, ...]
    """Parameters sorted by their largest importance over objectives, most first."""
    values: tuple[tuple[float, ...], ...]
    """``values[i][j]``: importance of ``params[j]`` for ``objectives[i]``."""
    skipped: str | None = None


class LaneGroup(NamedTuple):
    """The lanes of one kind (``mlcn1:1x2``) on one device."""

    kind: str
    n_lanes: int
    time: float
    """Their predicted time on the device (sum of lane costs / device speed)."""


class DevicePlacement(NamedTuple):
    name: str
    speed: float
    lanes: tuple[int, ...]
    groups: tuple[LaneGroup, ...]
    time: float
    memory_bytes: float
    memory_limit_bytes: float | None


class Placement(NamedTuple):
    """Where a trial's lanes run: one entry per target device."""

    number: int
    label: str
    strategy: str
    time_unit: str
    imbalance: float | None
    devices: tuple[DevicePlacement, ...]


class ReportData(NamedTuple):
    """Everything the report and the dashboard's figures show, extracted once."""

    study: StudyData
    best: tuple[TrialRow, ...]
    hypervolume: HypervolumeHistory | None
    histories: tuple[ObjectiveHistory, ...]
    importances: Importances
    placements: tuple[Placement, ...]
    correlations: tuple[EpochCorrelation, ...]


# -- trials -------------------------------------------------------------------


def extract_study(study: optuna.Study) -> StudyData:
    """Reads every trial of ``study`` once into :class:`TrialRow` s."""
    from nasmlcn.study import metric_names, study_info

    names = tuple(metric_names(study))
    directions = tuple(d.name.lower() for d in study.directions)
    trials = study.get_trials(deepcopy=False)
    rows = [_row(t) for t in trials]
    front = _front_numbers(rows, directions)
    rows = [r._replace(pareto=r.number in front) for r in rows]
    return StudyData(study.study_name, names, directions, study_info(study), tuple(rows))


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
    )


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and math.isfinite(value) else None


def _signs(directions: Sequence[str]) -> list[float]:
    """Multiplying by these turns every objective into one to minimise."""
    return [-1.0 if d == "maximize" else 1.0 for d in directions]


def pareto_mask(points: Sequence[Sequence[float]], directions: Sequence[str]) -> list[bool]:
    """Whether each point is on the Pareto front (no other point dominates it).

    A point dominates another when it is at least as good in every objective and
    better in one; equal points are therefore all on the front.

    Args:
        points: One row of objective values per point.
        directions: ``"maximize"`` or ``"minimize"`` per objective.
    """
    import numpy as np

    if len(points) == 0:
        return []
    loss = np.asarray(points, dtype=float) * np.asarray(_signs(directions))
    # (n, n): [i, j] is True when j dominates i; n is a study's trial count, so the
    # quadratic memory (500 trials: 250k booleans) is no concern.
    le = (loss[None, :, :] <= loss[:, None, :]).all(axis=2)
    lt = (loss[None, :, :] < loss[:, None, :]).any(axis=2)
    return [bool(v) for v in ~(le & lt).any(axis=1)]


def _front_numbers(rows: Sequence[TrialRow], directions: Sequence[str]) -> set[int]:
    candidates = [r for r in rows if r.complete and r.feasible]
    if not candidates:
        return set()
    points = [r.values for r in candidates if r.values is not None]
    if len(directions) == 1:
        # Single objective: the "front" is the best trial (ties included).
        sign = _signs(directions)[0]
        best = min(sign * p[0] for p in points)
        return {r.number for r, p in zip(candidates, points, strict=True) if sign * p[0] == best}
    mask = pareto_mask(points, directions)
    return {r.number for r, on in zip(candidates, mask, strict=True) if on}


def best_rows(data: StudyData, top: int = 5) -> list[TrialRow]:
    """The Pareto front, best first objective first (several objectives); else
    the ``top`` feasible completed trials, best first."""
    sign = _signs(data.directions)[0]
    done = [r for r in data.complete if r.feasible and r.values is not None]
    ordered = sorted(done, key=lambda r: (sign * r.values[0], r.number))  # type: ignore[index]
    if data.multi_objective:
        return [r for r in ordered if r.pareto]
    return ordered[:top]


# -- histories ----------------------------------------------------------------


def hypervolume_history(data: StudyData) -> HypervolumeHistory | None:
    """Hypervolume of the feasible Pareto front after each completed trial.

    Returns None for single-objective studies and studies without a feasible
    completed trial. Scaling and reference point: see :class:`HypervolumeHistory`.
    The front is updated trial by trial and its volume computed with Optuna's
    exact WFG implementation.
    """
    import numpy as np

    from nasmlcn._optuna_compat import compute_hypervolume

    if not data.multi_objective:
        return None
    done = data.complete
    feasible = [r for r in done if _counts(r)]
    if not feasible:
        return None
    signs = np.asarray(_signs(data.directions))
    loss_all = np.asarray([r.values for r in feasible], dtype=float) * signs
    low, high = loss_all.min(axis=0), loss_all.max(axis=0)
    span = np.where(high > low, high - low, 1.0)
    reference = np.full(len(signs), 1.0 + HYPERVOLUME_MARGIN)
    front = np.empty((0, len(signs)))
    volume = 0.0
    numbers, values = [], []
    for row in done:
        if _counts(row):
            point = (np.asarray(row.values, dtype=float) * signs - low) / span
            dominated = bool((front <= point).all(axis=1).any()) if len(front) else False
            if not dominated:
                keep = ~(point <= front).all(axis=1)
                front = np.vstack([front[keep], point])
                volume = float(compute_hypervolume(front, reference, assume_pareto=True))
        numbers.append(row.number)
        values.append(volume)
    to_units = (low + reference * span) * signs
    return HypervolumeHistory(
        tuple(numbers),
        tuple(values),
        tuple(float(v) for v in to_units),
        tuple(float(v) for v in low * signs),
        tuple(float(v) for v in high * signs),
    )


def _counts(row: TrialRow) -> bool:
    """Whether a completed trial counts for the hypervolume: feasible and finite."""
    return row.feasible and row.values is not None and all(math.isfinite(v) for v in row.values)


def optimization_histories(data: StudyData) -> list[ObjectiveHistory]:
    """Per objective: every completed trial's value and the best feasible so far."""
    done = data.complete
    out = []
    for i, (name, direction) in enumerate(zip(data.metric_names, data.directions, strict=False)):
        pick = max if direction == "maximize" else min
        best: float | None = None
        bests: list[float | None] = []
        for row in done:
            assert row.values is not None
            if row.feasible:
                value = row.values[i]
                best = value if best is None else pick(best, value)
            bests.append(best)
        out.append(
            ObjectiveHistory(
                name,
                direction,
                tuple(r.number for r in done),
                tuple(r.values[i] for r in done if r.values is not None),
                tuple(r.feasible for r in done),
                tuple(bests),
                tuple(r.learned for r in done),
            )
        )
    return out


def param_importances(study: optuna.Study, data: StudyData) -> Importances:
    """Optuna's parameter importances for every objective (its default evaluator,
    PED-ANOVA in Optuna 5). Never raises: when they cannot be computed (fewer than
    two completed trials, a single parameter value...), ``skipped`` says why."""
    import warnings

    from optuna.importance import get_param_importances

    done = data.complete
    if len(done) < 2:
        return Importances((), (), (), f"needs 2 completed trials, the study has {len(done)}")
    per_objective: list[dict[str, float]] = []
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for i in range(len(data.directions)):
                target = _objective_value(i, data.directions[i] == "maximize")
                per_objective.append(dict(get_param_importances(study, target=target)))
    except Exception as err:  # Optuna's evaluators raise on degenerate studies
        logger.info("parameter importances skipped: %s", err)
        return Importances((), (), (), f"could not be computed: {err}")
    params = sorted(
        {p for imp in per_objective for p in imp},
        key=lambda p: -max(imp.get(p, 0.0) for imp in per_objective),
    )
    if not params:
        return Importances((), (), (), "the study has no parameters")
    return Importances(
        data.metric_names,
        tuple(params),
        tuple(tuple(float(imp.get(p, 0.0)) for p in params) for imp in per_objective),
    )


def _objective_value(index: int, maximize: bool) -> Callable[[FrozenTrial], float]:
    """Objective ``index`` as a target to minimise: Optuna's default importance
    evaluator (PED-ANOVA) takes low ``target`` values as the good ones, so a
    maximised objective is negated. Without that, accuracy's panel showed what
    makes accuracy *low*: in an accuracy-vs-latency study the same small models
    that make latency low, so the panels of both objectives were alike."""
    sign = -1.0 if maximize else 1.0

    def value(trial: FrozenTrial) -> float:
        assert trial.values is not None
        return sign * trial.values[index]

    return value


# -- placement and training curves --------------------------------------------


def lane_kind(lane: Mapping[str, Any]) -> str:
    """``{"type": "mlcn1", "width": 1, "depth": 2}`` -> ``mlcn1:1x2`` (lane syntax)."""
    return f"{lane.get('type', '?')}:{lane.get('width', '?')}x{lane.get('depth', '?')}"


def group_lanes(kinds: Sequence[str]) -> str:
    """``["a", "b", "a"]`` -> ``2*a,b`` (most frequent first, like ``lane_mix``)."""
    counts = Counter(kinds)
    return ",".join(
        k if n == 1 else f"{n}*{k}" for k, n in sorted(counts.items(), key=lambda kv: -kv[1])
    )


def placement(row: TrialRow) -> Placement | None:
    """Where ``row``'s lanes run (None when it has no plan, e.g. a failed sample)."""
    plan = row.attrs.get("plan") or {}
    devices = plan.get("devices") or []
    if not devices:
        return None
    arch_lanes = (row.attrs.get("arch") or {}).get("lanes") or []
    kinds = [lane_kind(lane) for lane in arch_lanes]
    costs = list(plan.get("lane_costs") or [])
    out = []
    for device in devices:
        speed = float(device.get("speed") or 1.0)
        lanes = tuple(int(i) for i in device.get("lanes") or ())
        time: dict[str, float] = {}
        count: Counter[str] = Counter()
        for i in lanes:
            kind = kinds[i] if i < len(kinds) else f"lane {i}"
            count[kind] += 1
            time[kind] = time.get(kind, 0.0) + (costs[i] / speed if i < len(costs) else 0.0)
        groups = tuple(
            LaneGroup(k, n, time[k]) for k, n in sorted(count.items(), key=lambda kv: -time[kv[0]])
        )
        limit = device.get("memory_limit_bytes")
        out.append(
            DevicePlacement(
                str(device.get("name", "?")),
                speed,
                lanes,
                groups,
                float(device.get("time") or sum(g.time for g in groups)),
                float(device.get("memory_bytes") or 0.0),
                float(limit) if isinstance(limit, (int, float)) else None,
            )
        )
    return Placement(
        row.number, row.label, str(plan.get("strategy", "?")), row.time_unit, row.imbalance,
        tuple(out),
    )  # fmt: skip


def epoch_curves(data: StudyData) -> list[tuple[int, tuple[float, ...]]]:
    """``(number, accuracy after each epoch)`` of every completed trial with a curve."""
    return [(r.number, r.accuracy_per_epoch) for r in data.complete if r.accuracy_per_epoch]


def correlations(data: StudyData) -> list[EpochCorrelation]:
    """Early-epoch correlation (NASCaps Table 2), as ``nasmlcn correlate`` computes it."""
    from nasmlcn.search import epoch_correlations

    return epoch_correlations([curve for _, curve in epoch_curves(data)])


def extract_report(
    study: optuna.Study, *, importances: bool = True, placements: int = 4
) -> ReportData:
    """Extracts everything the report shows.

    Args:
        study: The study.
        importances: Compute parameter importances (the only slow part; the
            dashboard has its own importance view and skips them).
        placements: Show the placement of this many of the best trials.
    """
    data = extract_study(study)
    best = best_rows(data)
    shown = [p for p in (placement(r) for r in best[:placements]) if p is not None]
    return ReportData(
        data,
        tuple(best),
        hypervolume_history(data),
        tuple(optimization_histories(data)),
        param_importances(study, data) if importances else Importances((), (), (), "not computed"),
        tuple(shown),
        tuple(correlations(data)),
    )


# -- exports ------------------------------------------------------------------

_PREDICTED = (
    "latency", "step_time", "inference_latency_s", "inference_batch_size", "imbalance",
    "peak_memory_bytes", "params", "train_flops",
)  # fmt: skip
_TRAINING = (
    "accuracy", "seconds", "step_seconds", "images_per_second", "peak_memory_bytes",
    "measured_inference_latency_s", "measured_inference_batch_size", "measured_inference_device",
    "measured_inference_p25_s", "measured_inference_p75_s",
)  # fmt: skip


def trial_table(data: StudyData) -> tuple[list[str], list[dict[str, Any]]]:
    """All trials as flat rows of scalars (the CSV export): columns, rows.

    Columns: number, state, feasibility and front, one per objective (by metric
    name), one per constraint and parameter, the lane syntax, the predicted and
    measured costs, the accuracy after every epoch, and the timestamps.
    """
    constraint_names = sorted({k for r in data.rows for k in r.constraints})
    param_names = sorted({k for r in data.rows for k in r.params})
    epochs = max((len(r.accuracy_per_epoch) for r in data.rows), default=0)
    columns = [
        "number", "state", "feasible", "pareto", *data.metric_names,
        *(f"constraint:{c}" for c in constraint_names),
        *(f"param:{p}" for p in param_names),
        "num_lanes", "lane_mix", "lanes",
        *(f"predicted:{k}" for k in _PREDICTED), "predicted:time_unit", "predicted:devices",
        *(f"training:{k}" for k in _TRAINING),
        *(f"accuracy_epoch_{e + 1}" for e in range(epochs)),
        "generation", "reason", "datetime_start", "datetime_complete", "duration_s",
    ]  # fmt: skip
    rows = []
    for r in data.rows:
        predicted = r.attrs.get("predicted") or {}
        training = r.attrs.get("training") or {}
        row: dict[str, Any] = {
            "number": r.number,
            "state": r.state,
            "feasible": r.feasible,
            "pareto": r.pareto,
            "num_lanes": r.num_lanes,
            "lane_mix": r.lane_mix,
            "lanes": r.lanes,
            "predicted:time_unit": predicted.get("time_unit"),
            # the predictions are for the study's target devices, the training:
            # figures for where it trained (training:measured_inference_device)
            "predicted:devices": data.target_devices,
            "generation": r.generation,
            "reason": r.reason,
            "datetime_start": r.datetime_start,
            "datetime_complete": r.datetime_complete,
            "duration_s": r.duration_s,
        }
        for i, name in enumerate(data.metric_names):
            row[name] = r.values[i] if r.values is not None and i < len(r.values) else None
        row.update({f"constraint:{c}": r.constraints.get(c) for c in constraint_names})
        row.update({f"param:{p}": r.params.get(p) for p in param_names})
        row.update({f"predicted:{k}": predicted.get(k) for k in _PREDICTED})
        row.update({f"training:{k}": training.get(k) for k in _TRAINING})
        for e in range(epochs):
            row[f"accuracy_epoch_{e + 1}"] = (
                r.accuracy_per_epoch[e] if e < len(r.accuracy_per_epoch) else None
            )
        rows.append(row)
    return columns, rows


def trial_records(data: StudyData) -> dict[str, Any]:
    """The whole study as one JSON-ready object (the JSON export): the study's
    nasmlcn attributes and every trial with all of its user attributes."""
    return {
        "study": data.name,
        "metric_names": list(data.metric_names),
        "directions": list(data.directions),
        "states": data.state_counts,
        "nasmlcn": dict(data.info),
        "trials": [
            {
                "number": r.number,
                "state": r.state,
                "values": (
                    dict(zip(data.metric_names, r.values, strict=False))
                    if r.values is not None
                    else None
                ),
                "feasible": r.feasible,
                "pareto": r.pareto,
                "constraints": r.constraints,
                "params": r.params,
                "generation": r.generation,
                "datetime_start": r.datetime_start,
                "datetime_complete": r.datetime_complete,
                "duration_s": r.duration_s,
                "user_attrs": dict(r.attrs),
            }
            for r in data.rows
        ],
    }
