"""Successive halving over epochs: multi-fidelity search (``--pruner halving``).

Asynchronous successive halving (ASHA, Li et al. 2020), the rule under Optuna's
``SuccessiveHalvingPruner`` and Hyperband: every trial starts at the lowest fidelity
and is promoted rung by rung. The rungs are epochs ``1, rate, rate**2, ...`` below
the study's last epoch; at a rung a trial goes on only if its validation accuracy
there is among the best ``1 / rate`` of the trials that reached that rung before it
(itself counted). So with ``--epochs 3 --halving-rate 3`` about two trials in three
stop after one epoch, and the same compute tries about twice the candidates.

Two choices differ from Optuna's pruner, for the same reasons as the correlation
pruner's (:mod:`nasmlcn.search.pruners._correlation`):

- **Rivals, not every trial.** In an accuracy-vs-cost study a trial competes at a
  rung only with the *rivals* that cost no more than it in every cost objective
  (predictions known before training): the cheap end of the Pareto front is never
  halved away for being cheap. With one objective every trial is a rival.
- **The runner applies it** (Optuna's pruners are single-objective), and the first
  ``min_trials`` trials at a rung are always promoted: below that the top third of
  a handful is noise.

Halving changes what a trial's accuracy means (a pruned trial's is a low-fidelity
figure), so it is never on by default: the default pruner only stops trials
expected to be dominated at the full length.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from nasmlcn.search.pruners._base import register_pruner, rivals_at

if TYPE_CHECKING:
    from nasmlcn.search._config import SearchConfig
    from nasmlcn.search.pruners._base import EpochCorrelation, FinishedTrial


def halving_rungs(epochs: int, rate: int) -> list[int]:
    """The epochs a trial may be stopped after: ``1, rate, rate**2, ...`` below ``epochs``."""
    rungs, rung = [], 1
    while rung < epochs:
        rungs.append(rung)
        rung *= rate
    return rungs


@dataclass(frozen=True)
class HalvingPruner:
    """Successive halving over epochs (see the module docstring).

    Attributes:
        epochs: The study's epochs per trial (the last is the result: never a rung).
        rate: Keep the best ``1 / rate`` at each rung (``reduction_factor``, eta).
        min_trials: Rivals a rung needs before it halves.
    """

    epochs: int
    rate: int = 3
    min_trials: int = 5

    #: The trials it compares with: finished and pruned alike (a pruned trial reached
    #: the rungs before the one it stopped at).
    wants_pruned = True

    def __post_init__(self) -> None:
        if isinstance(self.rate, bool) or not isinstance(self.rate, int) or self.rate < 2:
            raise ValueError(f"halving rate must be an integer >= 2, got {self.rate!r}")

    @property
    def rungs(self) -> list[int]:
        return halving_rungs(self.epochs, self.rate)

    def allows(self, epoch: int, correlations: Sequence[EpochCorrelation] = ()) -> bool:
        """Whether ``epoch`` is a rung (a trial may be stopped after it)."""
        return epoch in self.rungs

    def decide(
        self,
        epoch: int,
        accuracy: float,
        finished: Sequence[FinishedTrial],
        costs: Mapping[str, float] | None = None,
    ) -> str | None:
        """The reason to stop a trial at ``epoch`` with ``accuracy``, or None.

        Args:
            epoch: The epoch just trained.
            accuracy: The trial's validation accuracy after it.
            finished: The trials that ended (complete and pruned), with their curves.
            costs: The trial's own cost objectives; None or empty with one objective.
        """
        if not self.allows(epoch):
            return None
        costs = dict(costs or {})
        rivals = rivals_at(epoch, finished, costs)
        if len(rivals) < self.min_trials:
            return None
        better = sum(1 for r in rivals if r > accuracy)
        promoted = math.ceil((len(rivals) + 1) / self.rate)
        if better < promoted:
            return None
        whose = (
            f"{len(rivals)} trials that cost no more ({', '.join(costs)})"
            if costs
            else f"{len(rivals)} trials"
        )
        return (
            f"successive halving: accuracy {accuracy:.4f} after epoch {epoch} is not among "
            f"the best {promoted} of {len(rivals) + 1} at this rung ({better} of {whose} "
            f"did better); rungs at epochs {', '.join(map(str, self.rungs))}, rate {self.rate}"
        )


@register_pruner(
    "halving",
    "successive halving over epochs (multi-fidelity): at epochs 1, rate, rate^2, ... "
    "only the best 1/rate of a trial's rivals go on",
)
def halving_pruner(config: SearchConfig) -> HalvingPruner:
    """The search's successive-halving pruner, from its ‹epochs› and ‹halving_rate›."""
    return HalvingPruner(config.epochs, config.halving_rate, config.prune_min_trials)
