"""The pruner's view of one trial: the finished trials it is compared with and its
own predicted costs, made once per trial; the trial asks the pruner after every epoch
with them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import optuna

    from nasmlcn.planning import Plan
    from nasmlcn.search._prepare.setup import SearchSetup
    from nasmlcn.search.pruners._base import EpochPruner, FinishedTrial


@dataclass(frozen=True)
class Pruning:
    """The pruner's view of one trial: the finished trials it is compared with and
    its own costs (predictions, known before it trains)."""

    pruner: EpochPruner | None
    finished: list[FinishedTrial]
    costs: dict[str, float]

    @classmethod
    def of(
        cls, setup: SearchSetup, pruner: EpochPruner | None, study: optuna.Study, plan: Plan
    ) -> Pruning:
        """The view of a trial of ``study`` planned as ``plan``, for ``pruner``."""
        from nasmlcn.search._results.summary import finished_for_pruning

        # one epoch leaves nothing to prune (the last epoch is the result)
        if pruner is None or setup.config.epochs <= 1:
            return cls(None, [], {})
        objectives = cost_objectives(setup)
        costs = {
            name: (-1.0 if maximize else 1.0) * float(setup.objectives[i].value(plan, None))
            for name, i, maximize in objectives
        }
        finished = finished_for_pruning(study, objectives, with_pruned=pruner.wants_pruned)
        return cls(pruner, finished, costs)


def cost_objectives(setup: SearchSetup) -> list[tuple[str, int, bool]]:
    """Per objective known before training (latency, memory, ...): its name, its
    index in a trial's values, and whether it is maximised."""
    return [
        (o.name, i, o.direction == "maximize")
        for i, o in enumerate(setup.objectives)
        if not o.needs_training
    ]
