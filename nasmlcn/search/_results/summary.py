"""Reading results back from a study: the best trials or the Pareto front, and
the early-epoch correlation with what pruning saved.

Used at the end of ``nasmlcn search`` and by ``nasmlcn best`` and ``nasmlcn
correlate``; works on any study written by nasmlcn, without the search's
configuration.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from nasmlcn._text import counted, percent
from nasmlcn.errors import SearchError
from nasmlcn.search.pruners._base import EpochCorrelation, FinishedTrial
from nasmlcn.search.pruners._correlation import epoch_correlations
from nasmlcn.study import TrialRecord
from nasmlcn.study import best_trials as answer

if TYPE_CHECKING:
    import optuna
    from optuna.trial import FrozenTrial

    from nasmlcn.study import RetrainedModel, StudyRecord

MEASURED_KEYS = (
    "measured_inference_latency_s",
    "measured_inference_device",
    "measured_inference_batch_size",
    "measured_inference_p25_s",
    "measured_inference_p75_s",
)
"""What ``TrialSummary.measured`` takes from the trial's ``training`` attribute."""


def is_feasible(trial: FrozenTrial) -> bool:
    """All of the trial's constraints (``trial.set_constraint``) are <= 0."""
    return TrialRecord.of(trial).feasible


@dataclass(frozen=True)
class TrialSummary:
    """One trial as reports show it.

    ``predicted`` holds the plan's predictions for the target devices (the
    trial's ``predicted`` attribute); ``measured`` what the evaluator measured on
    the device that trained it (``MEASURED_KEYS``; empty for the proxy, which
    measures nothing).
    """

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
    measured: dict[str, Any]
    retrained: dict[str, Any] | None = None
    """The trial's ``nasmlcn retrain`` result on the search's dataset (None: never
    retrained); :class:`~nasmlcn.search._results.retrain.RetrainedModel` as a dict."""
    proposed: int = 1
    """Trials that proposed this model: it and its repeats (:func:`proposals`)."""

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
            "imbalance_percent": percent(self.predicted.get("imbalance")),  # as tables show it
            "measured": self.measured,
            "val_accuracy_per_epoch": self.accuracy_per_epoch,
            "feasible": self.feasible,
            "reason": self.reason,
            "retrained": self.retrained,
            "proposed": self.proposed,
        }


def _measured(training: dict[str, Any]) -> dict[str, Any]:
    """The measured figures of a trial's ``training`` record (:data:`MEASURED_KEYS`),
    with what other processes held while they were measured (``machine_load``,
    where the record has it: reports mark figures measured on a crowded machine)."""
    measured = {k: training[k] for k in MEASURED_KEYS if training.get(k) is not None}
    extra = training.get("extra")
    load = extra.get("machine_load") if isinstance(extra, dict) else None
    if measured and load is not None:
        measured["machine_load"] = load
    return measured


def summarize(
    trial: FrozenTrial,
    metric_names: list[str] | None,
    retrained: RetrainedModel | None = None,
    proposed: int = 1,
) -> TrialSummary:
    """``trial`` as reports show it, with its retrained result if given
    (:func:`~nasmlcn.search._results.retrain.retrained_by_trial`) and how many trials
    proposed its model (:func:`proposals`)."""
    record = TrialRecord.of(trial)
    values = None
    if record.values is not None:
        names = metric_names or [f"objective{i}" for i in range(len(record.values))]
        values = dict(zip(names, record.values, strict=False))
    training = record.training
    return TrialSummary(
        number=record.number,
        state=record.state,
        values=values,
        lanes=record.lanes,
        lane_mix=record.lane_mix,
        num_lanes=record.num_lanes,
        placement=record.plan.get("devices", []),
        predicted=record.predicted,
        accuracy_per_epoch=record.accuracy_per_epoch,
        feasible=record.feasible,
        reason=record.reason,
        measured=_measured(training),
        retrained=retrained.to_dict() if retrained is not None else None,
        proposed=proposed,
    )


def proposals(study: optuna.Study) -> dict[int, int]:
    """Per trial that trained a model others repeated (search/_run/repeats.py): how many
    trials proposed that model, itself included; a trial not listed: 1."""
    from optuna.trial import TrialState

    counts: dict[int, int] = {}
    for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)):
        original = TrialRecord.of(t).repeat_of
        if original is not None:
            counts[original] = counts.get(original, 1) + 1
    return counts


def best_trials(study: optuna.Study, top: int = 5) -> list[FrozenTrial]:
    """The study's answer (:func:`nasmlcn.study.best_trials`): single objective, the
    ``top`` feasible completed trials, best first; several objectives, the feasible
    Pareto front, best first objective first. A repeat is left out: its original, the
    same model with the same result, is in.

    Raises:
        SearchError: ``top`` is not an integer >= 1 (``-1`` would drop the last).
    """
    if isinstance(top, bool) or not isinstance(top, int) or top < 1:
        raise SearchError(f"top must be an integer >= 1, got {top!r}")
    return answer(study.get_trials(deepcopy=False), study.directions, top)


def noise_summary(
    info: StudyRecord | Mapping[str, Any],
    best: Sequence[dict[str, Any]],
    metric_names: Sequence[str],
) -> dict[str, Any] | None:
    """The noise of one training run (:func:`nasmlcn.study.noise_estimate` of a
    study's :class:`~nasmlcn.study.StudyRecord`, or its ``nasmlcn`` attribute
    ``info``) and how the listed ``best`` models
    (:meth:`TrialSummary.to_dict`) stand in it; None where the study has no replicate.

    Besides ``sd``, ``pairs``, ``margin`` and the ``replicates``: ``best`` (the most
    accurate listed model), ``within`` (the listed models within noise of it, itself
    first, then by accuracy), and among those the ``cheapest`` by predicted training
    step time (``predicted["step_time"]``: the whole step, lanes and head, on the
    target devices) with ``cheapest_step_ratio``, its step time over the best's. Each
    is None (``within`` empty) where no model lists an accuracy or step times are
    missing.
    """
    from nasmlcn.study import noise_estimate, number, replicates

    noise = noise_estimate(info)
    if noise is None:
        return None
    data: dict[str, Any] = {
        **noise.to_dict(),
        "replicates": [r.to_dict() for r in replicates(info)],
        "listed": len(best),
        "best": None,
        "within": [],
        "cheapest": None,
        "cheapest_step_ratio": None,
    }
    name = "accuracy"
    rows = [
        b for b in best if name in metric_names and (b.get("values") or {}).get(name) is not None
    ]
    if not rows:
        return data
    ranked = sorted(rows, key=lambda b: (-b["values"][name], b["number"]))
    top = ranked[0]
    within = [b for b in ranked if noise.within(top["values"][name], b["values"][name])]
    data["best"], data["within"] = top["number"], [b["number"] for b in within]
    steps = {b["number"]: number((b.get("predicted") or {}).get("step_time")) for b in within}
    known = {n: s for n, s in steps.items() if s is not None and s > 0}
    if len(known) == len(steps):  # every one predicted: a cheapest among them all
        cheapest = min(known, key=lambda n: (known[n], n))
        data["cheapest"] = cheapest
        data["cheapest_step_ratio"] = known[cheapest] / known[top["number"]]
    return data


def rank_key(study: optuna.Study, trial: FrozenTrial) -> tuple[float, int]:
    """How trials rank by the first objective, best first (then by number)."""
    from nasmlcn.study import objective_signs

    assert trial.values is not None
    return (objective_signs(study.directions)[0] * trial.values[0], trial.number)


def completed_curves(study: optuna.Study) -> list[list[float]]:
    """Per completed trial, its validation accuracy after every epoch (what the
    correlation is measured on: pruned trials never reached the last epoch)."""
    from optuna.trial import TrialState

    curves = []
    for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)):
        record = TrialRecord.of(t)
        if record.accuracy_per_epoch and record.repeat_of is None:  # each model once
            curves.append(record.accuracy_per_epoch)
    return curves


def finished_for_pruning(
    study: optuna.Study,
    cost_objectives: Sequence[tuple[str, int, bool]],
    *,
    with_pruned: bool = False,
    repeats: bool = False,
) -> list[FinishedTrial]:
    """The completed trials as the pruner compares with them, in trial order.

    Args:
        study: The study.
        cost_objectives: Per cost objective (one predicted before training), its
            name, its index in the trial's values, and whether it is maximised
            (then its value is negated, so that every cost is minimised).
        with_pruned: Also the pruned trials, with the epochs they ran and the costs
            they were pruned with (``pruning_costs``; successive halving compares
            at a rung with every trial that reached it).
        repeats: Also the repeats (search/_run/repeats.py), marked: a replay of the
            pruner needs them; the live pruner does not compare with a model twice.
    """
    from optuna.trial import TrialState

    states = (TrialState.COMPLETE, TrialState.PRUNED) if with_pruned else (TrialState.COMPLETE,)
    out = []
    for t in study.get_trials(deepcopy=False, states=states):
        record = TrialRecord.of(t)
        curve = record.accuracy_per_epoch
        if not curve or (record.repeat_of is not None and not repeats):
            continue  # a repeat is its original's model: no rival of its own
        if record.values is not None:
            costs = {
                name: -record.values[i] if maximize else record.values[i]
                for name, i, maximize in cost_objectives
            }
        else:  # pruned: no values; the costs it was pruned with
            stored = record.pruning_costs or {}
            if any(name not in stored for name, _, _ in cost_objectives):
                continue  # its costs were never stored (an older study): not comparable
            costs = {name: float(stored[name]) for name, _, _ in cost_objectives}
        out.append(FinishedTrial(tuple(curve), costs, record.feasible, record.repeat_of))
    return out


def trial_counts(study: optuna.Study) -> dict[str, int]:
    """The study's trials by how they ended, as the summaries show them.

    ``results`` are the complete and pruned trials (not those a warm start added
    as data), ``repeats`` the ones among them that proposed a model an earlier
    trial trained, and ``models`` the rest: what ``--trials`` counts (``results``
    with ``count_repeats``). A ``failed`` trial never counts, whether it was ``retried`` (queued
    again as a WAITING copy: Ctrl-C, a dead worker, the search's ``--timeout``) or
    not (an error in training: a new trial takes its place). ``waiting`` are the
    queued copies no run has taken yet, ``running`` the trials running now (or
    left by a worker that died, until one fails them).
    """
    from optuna.trial import TrialState

    trials = study.get_trials(deepcopy=False)
    queued = {n for t in trials for n in TrialRecord.of(t).retry_history}
    by_state = {
        state: [t for t in trials if t.state == state]
        for state in (
            TrialState.COMPLETE,
            TrialState.PRUNED,
            TrialState.FAIL,
            TrialState.WAITING,
            TrialState.RUNNING,
        )
    }
    complete, pruned = len(by_state[TrialState.COMPLETE]), len(by_state[TrialState.PRUNED])
    # added by a warm start as data (nasmlcn.search._prepare.warm): not toward --trials
    complete_records = [TrialRecord.of(t) for t in by_state[TrialState.COMPLETE]]
    transferred = sum(r.transferred_from is not None for r in complete_records)
    # took an earlier trial's result or curve (search/_run/repeats.py): trained nothing
    repeats = sum(r.repeat_of is not None for r in complete_records)
    pruned_repeats = sum(
        TrialRecord.of(t).repeat_of is not None for t in by_state[TrialState.PRUNED]
    )
    return {
        "results": complete + pruned - transferred,
        "models": complete + pruned - transferred - repeats - pruned_repeats,
        "transferred": transferred,
        "repeats": repeats + pruned_repeats,
        "pruned_repeats": pruned_repeats,
        "complete": complete,
        "pruned": pruned,
        "failed": len(by_state[TrialState.FAIL]),
        "retried": sum(t.number in queued for t in by_state[TrialState.FAIL]),
        "waiting": len(by_state[TrialState.WAITING]),
        "running": len(by_state[TrialState.RUNNING]),
    }


def pruned_records(study: optuna.Study) -> list[dict[str, Any]]:
    """Every pruned trial of the study (not only a run's): its number, why it was
    pruned, the training time that saved and whether its model fits the devices (one
    that does not is PRUNED untrained), as ``search --json`` lists them."""
    from optuna.trial import TrialState

    from nasmlcn.study import TrialRecord

    records = []
    for trial in study.get_trials(deepcopy=False, states=(TrialState.PRUNED,)):
        record = TrialRecord.of(trial)
        records.append(
            {
                "number": trial.number,
                "reason": record.prune_reason,
                "seconds_saved": record.seconds_saved or 0.0,
                # a repeat: its model's stored curve, replayed to the pruner, or a model
                # an earlier trial found not to fit (search/_run/repeats.py)
                "repeat_of": record.repeat_of,
                "fits": record.fits,
            }
        )
    return records


def describe_counts(counts: dict[str, int], count_repeats: bool = False) -> str:
    """``20 models: 18 complete, 2 pruned; 2 failed and queued again (not
    counted)``: what a summary's title says of :func:`trial_counts`;
    ``count_repeats``: whether the repeats counted toward ``--trials`` (then the
    title counts results, repeats among them)."""
    repeats, pruned_repeats = counts.get("repeats", 0), counts.get("pruned_repeats", 0)
    complete = counts.get("complete", 0) - counts.get("transferred", 0)
    pruned = counts.get("pruned", 0)
    if count_repeats:
        text = f"{counts.get('results', 0)} results: {complete} complete, {pruned} pruned"
    else:  # each model once: the repeats are proposals, said apart
        complete, pruned = complete - (repeats - pruned_repeats), pruned - pruned_repeats
        text = f"{complete + pruned} models: {complete} complete, {pruned} pruned"
    failed, retried = counts.get("failed", 0), counts.get("retried", 0)
    if failed:
        again = (
            " and queued again"
            if retried == failed
            else f", {retried} of them queued again"
            if retried
            else ""
        )
        text += f"; {failed} failed{again} (not counted)"
    if counts.get("waiting"):
        text += f"; {counts['waiting']} queued to run"
    if counts.get("transferred"):
        text += f"; {counts['transferred']} more complete added by the warm start as data"
    if repeats:
        if count_repeats:
            text += (
                f"; {counted(repeats, 'result')} "
                f"{'was a repeat of a model' if repeats == 1 else 'were repeats of models'}"
                " already trained or pruned (nothing trained; counted: --count-repeats)"
            )
        else:
            text += (
                f"; {counted(repeats, 'more proposal')} "
                f"{'was a repeat of a model' if repeats == 1 else 'were repeats of models'}"
                " already trained or pruned (their results taken, nothing trained, not "
                "counted)"
            )
    return text


def not_learning(study: optuna.Study) -> list[dict[str, Any]]:
    """The completed trials that did not learn (:mod:`nasmlcn.search.objectives`):
    per trial its number and final validation accuracy, in trial order."""
    from optuna.trial import TrialState

    out = []
    for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)):
        record = TrialRecord.of(t)
        if not record.learned:
            curve = record.accuracy_per_epoch
            out.append({"number": t.number, "accuracy": curve[-1] if curve else None})
    return out


@dataclass(frozen=True)
class CorrelationReport:
    """A study's early-epoch correlation (NASCaps Table 2) and what pruning saved.

    Attributes:
        correlations: Per epoch, Pearson and Spearman vs the last epoch, over the
            completed trials.
        pruned_trials: Trials stopped early by the pruner (not those that did not
            fit the devices).
        seconds_saved: Training time those trials saved (estimated from their epochs).
        retrained: Per epoch, Pearson and Spearman of the search's validation
            accuracy vs the test accuracy of the trials ``nasmlcn retrain`` trained
            again on the search's dataset (empty: none retrained).
    """

    correlations: tuple[EpochCorrelation, ...]
    pruned_trials: int
    seconds_saved: float
    retrained: tuple[EpochCorrelation, ...] = ()

    @property
    def trials(self) -> int:
        """Completed trials the correlation is measured on."""
        return self.correlations[0].trials if self.correlations else 0


def correlation_report(study: optuna.Study) -> CorrelationReport:
    """The early-epoch correlation of ``study`` and what its pruned trials saved."""
    from optuna.trial import TrialState

    saved = [
        r.seconds_saved
        for r in map(TrialRecord.of, study.get_trials(deepcopy=False, states=(TrialState.PRUNED,)))
        if r.seconds_saved is not None
    ]
    return CorrelationReport(
        tuple(epoch_correlations(completed_curves(study))),
        len(saved),
        float(sum(saved)),
        tuple(_retrained_correlations(study)),
    )


def _retrained_correlations(study: optuna.Study) -> list[EpochCorrelation]:
    """NASCaps Table 2 against the retrained test accuracy (see :class:`CorrelationReport`)."""
    from optuna.trial import TrialState

    from nasmlcn.search.pruners._correlation import retrained_correlations
    from nasmlcn.study import StudyRecord, retrained_by_trial

    models = retrained_by_trial(StudyRecord.read(study))
    if not models:
        return []
    curves = {
        t.number: TrialRecord.of(t).accuracy_per_epoch
        for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
        if t.number in models
    }
    return retrained_correlations(curves, list(models.values()))
