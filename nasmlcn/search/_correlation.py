"""Early-epoch correlation (NASCaps Table 2) and correlation-gated pruning.

For every epoch ``n``, how well does the accuracy after ``n`` epochs rank trials
like the accuracy after the last epoch? :func:`epoch_correlations` measures it
over completed trials (Pearson and Spearman), :func:`final_correlations` against
any final accuracy (the test accuracy of the models ``nasmlcn retrain`` trained
again, NASCaps's "full training"); :class:`CorrelationPruner` stops a
trial at epoch ``n`` only when enough trials have finished, the measured rank
correlation at ``n`` reaches a threshold, and the trial is below a percentile of
the finished trials at ``n``. It works the same for single- and multi-objective
studies, because the runner (not Optuna's pruners) applies it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from nasmlcn.stats import pearson, percentile, spearman


@dataclass(frozen=True)
class EpochCorrelation:
    """Correlation between accuracy after ``epoch`` and after the last epoch."""

    epoch: int
    trials: int
    pearson: float
    spearman: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "epoch": self.epoch,
            "trials": self.trials,
            "pearson": _finite_or_none(self.pearson),
            "spearman": _finite_or_none(self.spearman),
        }


def _finite_or_none(value: float) -> float | None:
    return value if math.isfinite(value) else None


def _common_length(curves: Sequence[Sequence[float]]) -> list[int]:
    """Indices of the curves of the most common length (the longest on a tie)."""
    lengths = [len(c) for c in curves if c]
    if not lengths:
        return []
    length = max(set(lengths), key=lambda n: (lengths.count(n), n))
    return [i for i, c in enumerate(curves) if len(c) == length]


MIN_CORRELATION_TRIALS = 3
"""Fewer trials have no correlation: two points always lie on a line (Pearson and
Spearman are +-1 whatever the trials), so they are reported as undefined (NaN)."""


def epoch_correlations(curves: Sequence[Sequence[float]]) -> list[EpochCorrelation]:
    """Per epoch, Pearson and Spearman of accuracy at that epoch vs at the last.

    Args:
        curves: Per completed trial, its validation accuracy after every epoch;
            only curves of the most common length are used (a study's epochs are
            fixed, so this drops nothing in practice).
    """
    full = [curves[i] for i in _common_length(curves)]
    return final_correlations(full, [c[-1] for c in full])


def final_correlations(
    curves: Sequence[Sequence[float]], finals: Sequence[float]
) -> list[EpochCorrelation]:
    """Per epoch ``n``, Pearson and Spearman over trials between the accuracy after
    ``n`` epochs and the trial's final accuracy (NASCaps Table 2: the accuracy
    "after a full training"; :func:`epoch_correlations` takes the search's own
    last epoch, ``nasmlcn retrain`` the retrained model's test accuracy).

    Args:
        curves: Per trial, its validation accuracy after every epoch; only curves
            of the most common length are used.
        finals: Per trial (same order), its final accuracy.
    """
    if len(curves) != len(finals):
        raise ValueError(f"{len(curves)} curves but {len(finals)} final accuracies")
    keep = _common_length(curves)
    full = [list(curves[i]) for i in keep]
    last = [float(finals[i]) for i in keep]
    if not full:
        return []
    out = []
    for n in range(1, len(full[0]) + 1):
        at_n = [c[n - 1] for c in full]
        if len(full) < MIN_CORRELATION_TRIALS:
            out.append(EpochCorrelation(n, len(full), math.nan, math.nan))

    Below :data:`MIN_CORRELATION_TRIALS` trials both coefficients are NaN.
            continue
        out.append(EpochCorrelation(n, len(full), pearson(at_n, last), spearman(at_n, last)))
    return out


def first_epoch_reaching(correlations: Sequence[EpochCorrelation], threshold: float) -> int | None:
    """The first epoch whose Spearman rho reaches ``threshold`` (None: none does)."""
    for c in correlations:
        if math.isfinite(c.spearman) and c.spearman >= threshold:
            return c.epoch
    return None


@dataclass(frozen=True)
class CorrelationPruner:
    """Correlation-gated pruning (see the module docstring).

    Attributes:
        threshold: Spearman rho the epoch must reach.
        percentile: Prune below this percentile (0-100) of finished trials.
        min_trials: Finished trials needed before pruning starts.
    """

    threshold: float = 0.9
    percentile: float = 50.0
    min_trials: int = 5

    def allows(self, epoch: int, correlations: Sequence[EpochCorrelation]) -> bool:
        """Whether the gate is open at ``epoch``: it is not the last epoch, enough
        trials have finished, and their Spearman rho at ``epoch`` reaches the threshold.

        ``correlations`` are :func:`epoch_correlations` of the finished trials; a
        trial is pruned only where this holds and it is below the percentile.
        """
        if not 1 <= epoch < len(correlations):  # the last epoch is the result itself
            return False
        c = correlations[epoch - 1]
        return (
            c.trials >= self.min_trials
            and math.isfinite(c.spearman)
            and c.spearman >= self.threshold
        )

    def decide(self, epoch: int, accuracy: float, curves: Sequence[Sequence[float]]) -> str | None:
        """The reason to prune a trial at ``epoch`` with ``accuracy``, or None.

        ``curves`` are the finished trials' per-epoch accuracies (the last epoch
        is never pruned: it is the result itself).
        """
        if len(curves) < self.min_trials:
            return None
        correlations = epoch_correlations(curves)
        if not self.allows(epoch, correlations):
            return None
        rho = correlations[epoch - 1].spearman
        others = [c[epoch - 1] for c in curves if len(c) >= epoch]
        cut = percentile(others, self.percentile)
        if accuracy >= cut:
            return None
        return (
            f"accuracy {accuracy:.4f} after epoch {epoch} is below the {self.percentile:g}th "
            f"percentile ({cut:.4f}) of {len(others)} finished trials, and epoch {epoch} ranks "
            f"trials like the last one (Spearman {rho:.3f} >= {self.threshold:g})"
        )
