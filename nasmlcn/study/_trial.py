"""What nasmlcn stores on a trial, as one typed record.

The runner writes a trial's attributes (Optuna user attributes, plus the
constraints Optuna keeps as system attributes); everything that reads trials back
(results, ``nasmlcn best``, the dashboard's notes, figures and exports, the
benchmarks) reads them through :meth:`TrialRecord.of`, never by re-parsing the raw
dictionaries. Every trial carries ``record_version``; trials written before it
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
- ``repairs``, ``repaired_lanes``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from optuna.trial import FrozenTrial

RECORD_VERSION = 1
RECORD_VERSION_ATTR = "record_version"
CONSTRAINT_PREFIX = "constraints:"
"""Optuna 5 keeps each ``trial.set_constraint(key, value)`` as this system attribute."""
ARTIFACT_PREFIX = "artifacts:"
"""Optuna keeps each uploaded artifact's metadata as this system attribute."""


def _dict(value: Any) -> dict[str, Any]:
    return dict(value) if isinstance(value, Mapping) else {}


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


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
            if k.startswith(CONSTRAINT_PREFIX) and _number(v) is not None
        }
        legacy = system.get("constraints")  # Optuna < 5 kept one list
        if not constraints and isinstance(legacy, (list, tuple)):
            constraints = {f"c{i}": float(v) for i, v in enumerate(legacy)}
        weights = _dict(attrs.get("weights")) or None
        kept = weights is not None and f"{ARTIFACT_PREFIX}{weights.get('artifact_id')}" in system
        checkpoint = attrs.get("checkpoint")
        seed = attrs.get("sampler_seed")
        resumed = attrs.get("resumed_from_epoch")
        retry_of = system.get("failed_trial")
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
            seconds_saved=_number(attrs.get("seconds_saved")),
            worker=attrs.get("worker"),
            sampler_seed=int(seed) if isinstance(seed, int) else None,
            checkpoint=dict(checkpoint) if isinstance(checkpoint, Mapping) else None,
            weights=weights,
            weights_kept=kept,
            resumed_from_epoch=int(resumed) if isinstance(resumed, int) else None,
            repairs=[str(r) for r in attrs.get("repairs") or ()],
            repaired_lanes=int(attrs.get("repaired_lanes") or 0),
            retry_of=int(retry_of) if isinstance(retry_of, int) else None,
            version=int(attrs.get(RECORD_VERSION_ATTR, 0)),
            attrs=attrs,
        )

    @property
    def feasible(self) -> bool:
        """All constraints <= 0 (a trial without constraints is feasible)."""
        return all(v <= 0 for v in self.constraints.values())

    @property
    def learned(self) -> bool:
        """Whether the trial's accuracy beat chance by a clear margin (True when it
        was not trained, or trained before nasmlcn checked; see
        :mod:`nasmlcn.search._learning`)."""
        return self.constraints.get("learning", 0.0) <= 0

    @property
    def reason(self) -> str | None:
        """Why it failed or was pruned."""
        return self.fail_reason or self.prune_reason

    @property
    def accuracy_per_epoch(self) -> list[float]:
        return [float(a) for a in self.training.get("val_accuracy_per_epoch") or ()]

    @property
    def crashed(self) -> bool:
        """Failed by a dead worker, Ctrl-C or SIGTERM (retried; never counted)."""
        return self.failure in ("crash", "interrupted")
