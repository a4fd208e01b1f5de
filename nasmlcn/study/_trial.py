"""What nasmlcn stores on a trial: the writers, and the reader as one typed record.

A trial's attributes (Optuna user attributes, plus the constraints Optuna keeps as
system attributes) are written only by the ``write_*`` functions here (the runner,
the claim of a trial and its files call them) and read back only through
:meth:`TrialRecord.of` (results, ``nasmlcn best``, the dashboard's notes, figures and
exports, the benchmarks), never by re-parsing the raw dictionaries. Every trial carries ``record_version``; trials written before it
existed read as version 0 (the same keys, minus the newer ones).

User attributes (version 1):

- ``lanes``, ``lane_mix``, ``num_lanes``, ``arch``: the model;
- ``plan``: strategy, assignment, per-device placement;
- ``predicted``: latency, inference latency, memory, params, FLOPs, imbalance;
- ``training``: what the evaluator measured (per-epoch accuracy, step time,...);
- ``fail_reason`` and ``failure`` (``crash``, ``interrupted``; absent when the
  candidate itself failed), ``traceback``; ``prune_reason``, ``seconds_saved``;
- ``worker`` (``host:pid``), ``sampler_seed``;
- ``checkpoint`` (artifact id and epoch of the last per-epoch checkpoint),
  ``weights`` (artifact id of the final weights), ``resumed_from_epoch``;
- ``repairs``, ``repaired_lanes``;
- ``model_key`` (the model and its training settings, hashed: trials with one key
  train the same model identically) and ``repeat_of`` (a trial that took an earlier
  trial's result instead of training its model again);
- ``pruning_costs`` (a trial's cost objectives, known before training, for the
  pruner's rivals), ``transferred_from`` (a trial a warm start added as data:
  ``{"study": name, "trial": number}``).

Optuna's own marks are read here too: the constraints, and the retry mark of a
queued copy of a failed trial (``failed_trial``, ``retry_history``:
:attr:`TrialRecord.retry_of`, :attr:`TrialRecord.last_failed`), so that no other
module parses them.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from nasmlcn.study._values import number

if TYPE_CHECKING:
    import optuna
    from optuna.trial import FrozenTrial

    from nasmlcn.planning import Plan
    from nasmlcn.specs import MLCNSpec

RECORD_VERSION = 1
RECORD_VERSION_ATTR = "record_version"
CONSTRAINT_PREFIX = "constraints:"
"""Optuna 5 keeps each ``trial.set_constraint(key, value)`` as this system attribute."""
ARTIFACT_PREFIX = "artifacts:"
"""Optuna keeps each uploaded artifact's metadata as this system attribute."""
LEARNING_CONSTRAINT = "learning"
MEMORY_CONSTRAINT = "memory"
"""The constraint of the trial's planned memory against the devices' (:func:`write_plan`)."""
"""The constraint of a trained trial's accuracy against chance (:mod:`nasmlcn.search.objectives`)."""
FAILURE_ATTRS = ("fail_reason", "failure", "traceback", "prune_reason")
"""The attributes of how a trial ended (a retry's copy starts without them)."""


def _dict(value: Any) -> dict[str, Any]:
    return dict(value) if isinstance(value, Mapping) else {}


def _constraint(value: Any) -> float | None:
    """A stored constraint's value; a NaN or an infinity stays (it is no figure, but a
    verdict: ``<= 0`` is then False, so the trial counts as infeasible)."""
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


@dataclass(frozen=True)
class TrialRecord:
    """One trial as nasmlcn wrote it (see the module docstring for the keys)."""

    number: int
    state: str
    values: tuple[float, ...] | None
    params: dict[str, Any]
    lanes: str | None = None
    lane_mix: str | None = None
    num_lanes: int | None = None
    arch: dict[str, Any] = field(default_factory=dict)
    plan: dict[str, Any] = field(default_factory=dict)
    predicted: dict[str, Any] = field(default_factory=dict)
    training: dict[str, Any] = field(default_factory=dict)
    constraints: dict[str, float] = field(default_factory=dict)
    fail_reason: str | None = None
    failure: str | None = None
    prune_reason: str | None = None
    seconds_saved: float | None = None
    worker: str | None = None
    sampler_seed: int | None = None
    checkpoint: dict[str, Any] | None = None
    weights: dict[str, Any] | None = None
    weights_kept: bool = False
    resumed_from_epoch: int | None = None
    repairs: list[str] = field(default_factory=list)
    repaired_lanes: int = 0
    retry_of: int | None = None
    retry_history: tuple[int, ...] = ()
    model_key: str | None = None
    repeat_of: int | None = None
    transferred_from: dict[str, Any] | None = None
    pruning_costs: dict[str, float] | None = None
    version: int = 0
    attrs: Mapping[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def of(cls, trial: FrozenTrial) -> TrialRecord:
        """The record of ``trial`` (any trial; keys nasmlcn did not write are left empty)."""
        attrs = trial.user_attrs
        system = trial.system_attrs
        constraints = {
            k[len(CONSTRAINT_PREFIX) :]: float(v)
            for k, v in system.items()
            if k.startswith(CONSTRAINT_PREFIX) and _constraint(v) is not None
        }
        weights = _dict(attrs.get("weights")) or None
        kept = weights is not None and f"{ARTIFACT_PREFIX}{weights.get('artifact_id')}" in system
        checkpoint = attrs.get("checkpoint")
        seed = attrs.get("sampler_seed")
        resumed = attrs.get("resumed_from_epoch")
        retry_of = system.get("failed_trial")  # Optuna's retry mark: the first failed
        history = system.get("retry_history")  # ... and every failed copy since
        transferred = attrs.get("transferred_from")
        costs = attrs.get("pruning_costs")
        return cls(
            number=trial.number,
            state=trial.state.name,
            values=tuple(float(v) for v in trial.values) if trial.values is not None else None,
            params=dict(trial.params),
            lanes=attrs.get("lanes"),
            lane_mix=attrs.get("lane_mix"),
            num_lanes=attrs.get("num_lanes"),
            arch=_dict(attrs.get("arch")),
            plan=_dict(attrs.get("plan")),
            predicted=_dict(attrs.get("predicted")),
            training=_dict(attrs.get("training")),
            constraints=constraints,
            fail_reason=attrs.get("fail_reason"),
            failure=attrs.get("failure"),
            prune_reason=attrs.get("prune_reason"),
            seconds_saved=number(attrs.get("seconds_saved")),
            worker=attrs.get("worker"),
            sampler_seed=int(seed) if isinstance(seed, int) else None,
            checkpoint=dict(checkpoint) if isinstance(checkpoint, Mapping) else None,
            weights=weights,
            weights_kept=kept,
            resumed_from_epoch=int(resumed) if isinstance(resumed, int) else None,
            repairs=[str(r) for r in attrs.get("repairs") or ()],
            repaired_lanes=int(attrs.get("repaired_lanes") or 0),
            model_key=attrs.get("model_key"),
            repeat_of=attrs.get("repeat_of"),
            retry_of=int(retry_of) if isinstance(retry_of, int) else None,
            retry_history=tuple(int(n) for n in history or () if isinstance(n, int)),
            transferred_from=dict(transferred) if isinstance(transferred, Mapping) else None,
            pruning_costs=dict(costs) if isinstance(costs, Mapping) else None,
            version=int(attrs.get(RECORD_VERSION_ATTR, 0)),
            attrs=attrs,
        )

    @property
    def feasible(self) -> bool:
        """All constraints <= 0 (a trial without constraints is feasible)."""
        return all(v <= 0 for v in self.constraints.values())

    @property
    def fits(self) -> bool:
        """Whether the trial's model fits the devices' memory (one that does not is
        PRUNED untrained; True for a trial planned before nasmlcn recorded it)."""
        return self.constraints.get(MEMORY_CONSTRAINT, 0.0) <= 0

    @property
    def learned(self) -> bool:
        """Whether the trial's accuracy beat chance by a clear margin (True when it
        was not trained, or trained before nasmlcn checked; see
        :mod:`nasmlcn.search.objectives`)."""
        return self.constraints.get(LEARNING_CONSTRAINT, 0.0) <= 0

    @property
    def reason(self) -> str | None:
        """Why it failed or was pruned."""
        return self.fail_reason or self.prune_reason

    @property
    def accuracy_per_epoch(self) -> list[float]:
        return [float(a) for a in self.training.get("val_accuracy_per_epoch") or ()]

    @property
    def last_failed(self) -> int | None:
        """The failed trial this queued copy runs again (the last of its retry
        history; the first, :attr:`retry_of`, without one); None for a new trial."""
        return self.retry_history[-1] if self.retry_history else self.retry_of

    @property
    def crashed(self) -> bool:
        """Failed by a dead worker, Ctrl-C or SIGTERM (retried; never counted)."""
        return self.failure in ("crash", "interrupted")


# -- the writers -------------------------------------------------------------------


def write_claimed(trial: optuna.Trial, worker: str, sampler_seed: int | None) -> None:
    """Who runs the trial, the sampler seed of a new one, and the record version."""
    if sampler_seed is not None:
        trial.set_user_attr("sampler_seed", sampler_seed)
    trial.set_user_attr("worker", worker)
    trial.set_user_attr(RECORD_VERSION_ATTR, RECORD_VERSION)


def write_model(
    trial: optuna.Trial, spec: MLCNSpec, repairs: Sequence[str] = (), repaired_lanes: int = 0
) -> None:
    """The architecture (``lanes``, ``lane_mix``, ``num_lanes``, ``arch``) and the
    repairs the search space made to build it."""
    from nasmlcn.specs import format_lane_mix

    trial.set_user_attr("lanes", spec.describe())
    trial.set_user_attr("lane_mix", format_lane_mix(spec.lanes))
    trial.set_user_attr("num_lanes", spec.num_lanes)
    trial.set_user_attr("arch", spec.to_dict())
    if repairs:
        trial.set_user_attr("repairs", list(repairs))
        trial.set_user_attr("repaired_lanes", repaired_lanes)


def write_plan(
    trial: optuna.Trial,
    plan: Plan,
    *,
    fits: bool,
    latency_budget: float | None,
    inference_batch_size: int,
) -> None:
    """The placement and predictions (``plan``, ``predicted``) and the constraints
    they set: ``memory`` (feasible when <= 0: the fullest device's memory over its
    limit, relative; positive when the model does not ``fit``) and ``latency``
    (against ``latency_budget``, when one is given)."""
    trial.set_user_attr(
        "plan",
        {
            "strategy": plan.placement.strategy,
            "assignment": list(plan.placement.assignment),
            "lane_costs": [c.time for c in plan.costs.lanes],
            "devices": [
                {
                    "name": d.device.name,
                    "speed": d.device.speed,
                    "lanes": list(d.lanes),
                    "load": d.load,
                    "time": d.time,
                    "memory_bytes": d.memory_bytes,
                    "memory_limit_bytes": d.memory_limit,
                    "inference_time": d.inference_time,
                }
                for d in plan.per_device
            ],
        },
    )
    trial.set_user_attr(
        "predicted",
        {
            "latency": plan.makespan,
            "step_time": plan.step_time,
            "inference_latency_s": plan.inference_latency,
            "inference_batch_size": inference_batch_size,
            "time_unit": plan.time_unit,
            "imbalance": plan.imbalance,
            "peak_memory_bytes": plan.peak_memory_bytes,
            "params": plan.costs.params,
            "train_flops": plan.costs.train_flops,
            "cost_model": plan.cost_model,
        },
    )
    memory = max((d.memory_bytes - d.memory_limit) / d.memory_limit for d in plan.per_device)
    if not fits:
        memory = max(memory, 1e-9)
    set_constraint(trial, MEMORY_CONSTRAINT, memory)
    if latency_budget is not None:
        set_constraint(trial, "latency", plan.makespan - latency_budget)


def write_training(trial: optuna.Trial, training: Mapping[str, Any], learning: float) -> None:
    """What the evaluator measured (``training``) and the ``learning`` constraint (a
    model that learned nothing stays in the study but off the front)."""
    trial.set_user_attr("training", dict(training))
    set_constraint(trial, LEARNING_CONSTRAINT, learning)


def write_model_key(trial: optuna.Trial, key: str) -> None:
    """The trial's model and training settings, hashed (:mod:`nasmlcn.search._run.repeats`)."""
    trial.set_user_attr("model_key", key)


def write_repeat(trial: optuna.Trial, original: FrozenTrial) -> None:
    """The trial takes ``original``'s result: the same model, trained alike, already
    measured; its training record is the original's, marked as a repeat."""
    training = dict(original.user_attrs.get("training") or {})
    trial.set_user_attr("training", {**training, "repeat_of": original.number})
    trial.set_user_attr("repeat_of", original.number)
    for key, value in original.system_attrs.items():
        if key.startswith(CONSTRAINT_PREFIX):
            set_constraint(trial, key[len(CONSTRAINT_PREFIX) :], value)


def write_proposed_by(trial: optuna.Trial, how: str) -> None:
    """Who proposed the trial's parameters when not the study's sampler (``random,
    after 2 repeats``: search/_run/repeats.py)."""
    trial.set_user_attr("proposed_by", how)


def write_pruning_costs(trial: optuna.Trial, costs: Mapping[str, float]) -> None:
    """The trial's cost objectives, known before training: a pruned trial has no
    values, and later trials' pruner still counts it as a rival by these."""
    trial.set_user_attr("pruning_costs", dict(costs))


def write_transferred(trial: optuna.Trial, study: str, number: int) -> None:
    """A trial a warm start added as data: trial ``number`` of study ``study``."""
    trial.set_user_attr("transferred_from", {"study": study, "trial": number})


def write_resumed(trial: optuna.Trial, epoch: int) -> None:
    """The epoch a retried trial resumes from (its last checkpoint)."""
    trial.set_user_attr("resumed_from_epoch", epoch)


def write_checkpoint(trial: optuna.Trial, artifact_id: str, epoch: int) -> None:
    """The artifact of the trial's last per-epoch checkpoint."""
    trial.set_user_attr("checkpoint", {"artifact_id": artifact_id, "epoch": epoch})


def write_weights(trial: optuna.Trial, artifact_id: str, file: str) -> None:
    """The artifact of the trial's final weights."""
    trial.set_user_attr("weights", {"artifact_id": artifact_id, "file": file})


def write_failed(trial: optuna.Trial, reason: str, *, failure: str | None = None) -> None:
    """Why the trial failed; ``failure`` names a crash or interruption (the trial is
    retried and never counted), absent when the candidate itself failed (its
    traceback: :func:`write_traceback`)."""
    trial.set_user_attr("fail_reason", reason)
    if failure is not None:
        trial.set_user_attr("failure", failure)


def write_traceback(trial: optuna.Trial, text: str) -> None:
    """The end of the traceback of an evaluation that raised."""
    trial.set_user_attr("traceback", text)


def write_ended_early(
    trial: optuna.Trial,
    *,
    pruned: bool,
    reason: str,
    training: Mapping[str, Any] | None,
    seconds_saved: float | None,
) -> None:
    """A trial that ended before its last epoch: the epochs it reported
    (``training``), why (``prune_reason`` or ``fail_reason``) and, when pruned
    after training, the training time it saved."""
    if training is not None:
        trial.set_user_attr("training", dict(training))
    trial.set_user_attr("prune_reason" if pruned else "fail_reason", reason)
    if seconds_saved is not None:
        trial.set_user_attr("seconds_saved", seconds_saved)


def set_constraint(trial: optuna.Trial, key: str, value: float) -> None:
    """``trial.set_constraint``; feasible when <= 0."""
    with warnings.catch_warnings():
        # a retried trial has its constraints already (the same values): Optuna warns
        warnings.filterwarnings("ignore", message="The constraint value is ignored")
        trial.set_constraint(key, float(value))
