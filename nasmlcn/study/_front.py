"""A study's answer, written once: its best trials or its Pareto front.

``nasmlcn best``, the search's summary, the retraining's selection, the report, the
dashboard and the reproductions all ask :func:`best_trials` (through
:func:`nasmlcn.search.best_trials` where they hold a study). The answer is made of
the trials that completed, are feasible (every constraint <= 0) and are no repeat (a
repeat took its original's result: the original stands for the model); of those, the
``top`` best by the first objective, or with several objectives the Pareto front,
best first objective first. Objective values are compared after
:func:`objective_signs`: every objective becomes one to minimise.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from nasmlcn.study._trial import TrialRecord
from nasmlcn.study._values import objective_signs

if TYPE_CHECKING:
    from optuna.trial import FrozenTrial


def pareto_mask(points: Sequence[Sequence[float]], directions: Sequence[Any]) -> list[bool]:
    """Whether each point is on the Pareto front (no other point dominates it).

    A point dominates another when it is at least as good in every objective and
    better in one; equal points are therefore all on the front.

    Args:
        points: One row of objective values per point.
        directions: The study's, one per objective.
    """
    import numpy as np

    if len(points) == 0:
        return []
    loss = np.asarray(points, dtype=float) * np.asarray(objective_signs(directions))
    # (n, n): [i, j] is True when j dominates i; n is a study's trial count, so the
    # quadratic memory (500 trials: 250k booleans) is no concern.
    le = (loss[None, :, :] <= loss[:, None, :]).all(axis=2)
    lt = (loss[None, :, :] < loss[:, None, :]).any(axis=2)
    return [bool(v) for v in ~(le & lt).any(axis=1)]


def candidates(trials: Sequence[FrozenTrial]) -> list[FrozenTrial]:
    """The trials an answer is made of: completed, feasible, no repeat, with values."""
    out = []
    for trial in trials:
        record = TrialRecord.of(trial)
        answers = record.state == "COMPLETE" and record.values is not None
        if answers and record.feasible and record.repeat_of is None:
            out.append(trial)
    return out


class Ranked(Protocol):
    """What :func:`best_of` ranks: a trial's number and its objective values (a
    ``FrozenTrial``, or a row the report made of one)."""

    @property
    def number(self) -> int: ...

    @property
    def values(self) -> Sequence[float] | None: ...


R = TypeVar("R", bound=Ranked)


def best_of(chosen: Sequence[R], directions: Sequence[Any], top: int | None = 5) -> list[R]:
    """The answer among ``chosen`` (trials that may answer, with values): single
    objective, the ``top`` best (None: all), best first, ties by trial number;
    several objectives, their Pareto front, best first objective first (``top`` does
    not cut a front)."""
    sign = objective_signs(directions)[0]
    ordered = sorted(chosen, key=lambda t: (sign * _values(t)[0], t.number))
    if len(directions) > 1:
        mask = pareto_mask([_values(t) for t in ordered], directions)
        return [t for t, on in zip(ordered, mask, strict=True) if on]
    return ordered if top is None else ordered[:top]


def _values(trial: Ranked) -> Sequence[float]:
    assert trial.values is not None, "only trials with values answer"
    return trial.values


def best_trials(
    trials: Sequence[FrozenTrial], directions: Sequence[Any], top: int | None = 5
) -> list[FrozenTrial]:
    """:func:`best_of` the :func:`candidates` among ``trials``."""
    return best_of(candidates(trials), directions, top)
