"""Early-epoch correlation (NASCaps Table 2) and correlation-gated pruning.

For every epoch ``n``, how well does the accuracy after ``n`` epochs rank trials
like the accuracy after the last epoch? :func:`epoch_correlations` measures it
over completed trials (Pearson and Spearman), :func:`final_correlations` against
any final accuracy (the test accuracy of the models ``nasmlcn retrain`` trained
again, NASCaps's "full training"); :class:`CorrelationPruner` stops a
trial at epoch ``n`` only when enough trials have finished, the measured rank
correlation at ``n`` reaches a threshold, and the trial is below a percentile of
its *rivals* at ``n``: the finished feasible trials that cost no more than it in
every cost objective.

Why rivals and not all finished trials: in an accuracy-vs-latency (or memory)
study the cheap models are on the Pareto front *because* they are cheap, so a
below-median accuracy is exactly where the front's cheap end lies; comparing
with every finished trial pruned 5 of the 8 front trials of an 80-trial study.
A trial belongs on the front only if it beats every rival, so one that is below
the median of at least ``min_trials`` rivals at an epoch that ranks trials like
the last one is expected to be dominated. Its costs are predictions made before
training, known at every epoch. The cheapest trials have no rivals and are never
pruned. With one objective (no costs) every finished trial is a rival: the
classic rule. :func:`replay_pruning` applies the rule to a study trained without
pruning, to show what it would have removed. The runner (not Optuna's pruners)
applies it, so it works the same for single- and multi-objective studies.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from nasmlcn.search.pruners._base import (
    EpochCorrelation,
    FinishedTrial,
    register_pruner,
    rivals_at,
)
from nasmlcn.stats import pearson, percentile, spearman

if TYPE_CHECKING:
    from nasmlcn.search._config import SearchConfig
    from nasmlcn.study import RetrainedModel


MIN_CORRELATION_TRIALS = 3
"""Fewer trials have no correlation: two points always lie on a line (Pearson and
Spearman are +-1 whatever the trials), so they are reported as undefined (NaN)."""


def _common_length(curves: Sequence[Sequence[float]]) -> list[int]:
    """Indices of the curves of the most common length (the longest on a tie)."""
    lengths = [len(c) for c in curves if c]
    if not lengths:
        return []
    length = max(set(lengths), key=lambda n: (lengths.count(n), n))
    return [i for i, c in enumerate(curves) if len(c) == length]


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

    Below :data:`MIN_CORRELATION_TRIALS` trials both coefficients are NaN.
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
    """Correlation-gated, dominance-aware pruning (see the module docstring).

    Attributes:
        threshold: Spearman rho the epoch must reach.
        percentile: Prune below this percentile (0-100) of the trial's rivals.
        min_trials: Finished trials needed before pruning starts, and rivals a
            trial needs before it can be pruned.
    """

    threshold: float = 0.9
    percentile: float = 50.0
    min_trials: int = 5

    #: The trials it compares with: finished ones only (a pruned trial's last epoch
    #: is no result).
    wants_pruned = False

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

    def decide(
        self,
        epoch: int,
        accuracy: float,
        finished: Sequence[FinishedTrial],
        costs: Mapping[str, float] | None = None,
    ) -> str | None:
        """The reason to prune a trial at ``epoch`` with ``accuracy``, or None.

        Args:
            epoch: The epoch just trained (the last epoch is never pruned: it is the
                result itself).
            accuracy: The trial's validation accuracy after it.
            finished: The finished trials.
            costs: The trial's own cost objectives (the names of
                :attr:`FinishedTrial.costs`); None or empty in an accuracy-only study.
        """
        costs = dict(costs or {})
        if len(finished) < self.min_trials:
            return None
        correlations = epoch_correlations([f.curve for f in finished])
        if not self.allows(epoch, correlations):
            return None
        rho = correlations[epoch - 1].spearman
        rivals = rivals_at(epoch, finished, costs)
        if len(rivals) < self.min_trials:  # the cheap end of the front: kept
            return None
        cut = percentile(rivals, self.percentile)
        if accuracy >= cut:
            return None
        whose = (
            f"{len(rivals)} finished trials that cost no more ({', '.join(costs)})"
            if costs
            else f"{len(rivals)} finished trials"
        )
        return (
            f"accuracy {accuracy:.4f} after epoch {epoch} is below the {self.percentile:g}th "
            f"percentile ({cut:.4f}) of {whose}, and epoch {epoch} ranks "
            f"trials like the last one (Spearman {rho:.3f} >= {self.threshold:g})"
        )


def replay_pruning(
    trials: Sequence[FinishedTrial], pruner: CorrelationPruner, *, ignore_costs: bool = False
) -> list[int | None]:
    """What ``pruner`` would have done to a study run without pruning.

    The trials are taken in order, one at a time (one worker), each compared with
    the earlier ones that the replay did not prune, as the search would have. For
    a deterministic evaluator (the proxy) this is exactly what a pruned search of
    the same architectures does.

    Args:
        trials: Every trial of the study, in trial order, fully trained (a repeat,
            ``repeat_of`` its original's position, is kept when its original is:
            the search takes the result of a completed model; it trains it again
            when the model's trial was pruned). Positions are trial numbers when the
            list holds every trial from 0.
        pruner: The rule.
        ignore_costs: Compare every trial with all finished ones (the rule before
            rivals, kept for comparison).

    Returns:
        Per trial, the epoch it would have been pruned after (None: kept).
    """
    kept: list[FinishedTrial] = []
    out: list[int | None] = []
    pruned: set[int] = set()  # positions the replay pruned
    for position, trial in enumerate(trials):
        if trial.repeat_of is not None and trial.repeat_of not in pruned:
            out.append(None)  # took its completed original's result: nothing to prune
            continue
        costs = {} if ignore_costs else trial.costs
        reference = [FinishedTrial(f.curve) for f in kept] if ignore_costs else kept
        stopped = None
        for epoch, accuracy in enumerate(trial.curve[:-1], start=1):
            if pruner.decide(epoch, accuracy, reference, costs) is not None:
                stopped = epoch
                break
        out.append(stopped)
        if stopped is None:
            kept.append(trial)
        else:
            pruned.add(position)
    return out


def retrained_correlations(
    curves: Mapping[int, Sequence[float]], models: Sequence[RetrainedModel]
) -> list[EpochCorrelation]:
    """NASCaps Table 2 against the retrained models: per search epoch ``n``, Pearson
    and Spearman over the retrained trials between the validation accuracy after
    ``n`` search epochs and the retrained test accuracy.

    Args:
        curves: Per trial number, its search-time validation accuracy per epoch.
        models: The retrained models (trials without a curve are left out).
    """
    kept = [m for m in models if curves.get(m.number)]
    return final_correlations(
        [list(curves[m.number]) for m in kept], [m.test_accuracy for m in kept]
    )


@register_pruner(
    "correlation",
    "stops a trial below the median of its rivals once an early epoch ranks trials "
    "like the last one (the default: only trials expected to be dominated)",
)
def correlation_pruner(config: SearchConfig) -> CorrelationPruner:
    """The search's correlation-gated pruner, from its ‹prune_*› settings."""
    return CorrelationPruner(
        config.prune_threshold, config.prune_percentile, config.prune_min_trials
    )
