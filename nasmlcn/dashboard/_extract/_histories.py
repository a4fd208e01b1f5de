"""Histories: the hypervolume and every objective over the trials, and the
accuracy over the epochs with its early-epoch correlation (NASCaps Table 2)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, NamedTuple

from nasmlcn.dashboard._extract._trials import StudyData, TrialRow
from nasmlcn.study import objective_signs

if TYPE_CHECKING:
    from nasmlcn.search import EpochCorrelation

HYPERVOLUME_MARGIN = 0.1
"""The hypervolume's reference point lies this fraction of each objective's range
beyond the worst feasible value (see :func:`hypervolume_history`)."""


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
    signs = np.asarray(objective_signs(data.directions))
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


def epoch_curves(data: StudyData) -> list[tuple[int, tuple[float, ...]]]:
    """``(number, accuracy after each epoch)`` of every completed trial with a curve."""
    return [(r.number, r.accuracy_per_epoch) for r in data.complete if r.accuracy_per_epoch]


def correlations(data: StudyData) -> list[EpochCorrelation]:
    """Early-epoch correlation (NASCaps Table 2), as ``nasmlcn correlate`` computes it."""
    from nasmlcn.search import epoch_correlations

    return epoch_correlations([curve for _, curve in epoch_curves(data)])
