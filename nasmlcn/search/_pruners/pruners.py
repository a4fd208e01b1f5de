"""Pruners by name: the rule that stops a trial after an epoch (``--pruner``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from nasmlcn.registry import Registry
from nasmlcn.search._pruners.correlation import CorrelationPruner
from nasmlcn.search._pruners.halving import HalvingPruner

if TYPE_CHECKING:
    from nasmlcn.planning import Plan
    from nasmlcn.search._config.config import SearchConfig
    from nasmlcn.search._evaluators.evaluator import EpochReport
    from nasmlcn.search._prepare.setup import SearchSetup
    from nasmlcn.search._pruners.correlation import EpochCorrelation, FinishedTrial
    from nasmlcn.search._trial.run import RunContext


class EpochPruner(Protocol):
    """What the runner asks of a pruner after every epoch but the last."""

    def allows(self, epoch: int, correlations: Sequence[EpochCorrelation]) -> bool:
        """Whether a trial may be stopped after ``epoch`` at all (the summary's
        ``prunes`` column)."""
        ...

    def decide(
        self,
        epoch: int,
        accuracy: float,
        finished: Sequence[FinishedTrial],
        costs: Mapping[str, float] | None = None,
    ) -> str | None:
        """Why to stop a trial after ``epoch`` with ``accuracy`` (None: go on)."""
        ...


@dataclass(frozen=True)
class PrunerEntry:
    """``make(config)`` builds the pruner of a search."""

    name: str
    make: Callable[[SearchConfig], EpochPruner]
    description: str


PRUNERS: Registry[PrunerEntry] = Registry("pruner")

PRUNERS.register(
    "correlation",
    PrunerEntry(
        "correlation",
        lambda c: CorrelationPruner(c.prune_threshold, c.prune_percentile, c.prune_min_trials),
        "stops a trial below the median of its rivals once an early epoch ranks trials "
        "like the last one (the default: only trials expected to be dominated)",
    ),
)
PRUNERS.register(
    "halving",
    PrunerEntry(
        "halving",
        lambda c: HalvingPruner(c.epochs, c.halving_rate, c.prune_min_trials),
        "successive halving over epochs (multi-fidelity): at epochs 1, rate, rate^2, ... "
        "only the best 1/rate of a trial's rivals go on",
    ),
)


@dataclass(frozen=True)
class Pruning:
    """The pruner's view of one trial: the finished trials it is compared with and
    its own costs (predictions, known before it trains)."""

    pruner: EpochPruner | None
    finished: list[FinishedTrial]
    costs: dict[str, float]

    @classmethod
    def of(cls, run: RunContext, plan: Plan) -> Pruning:
        from nasmlcn.search._results.results import finished_for_pruning

        config, setup = run.config, run.setup
        # one epoch leaves nothing to prune (the last epoch is the result)
        if run.pruner is None or config.epochs <= 1:
            return cls(None, [], {})
        objectives = cost_objectives(setup)
        costs = {
            name: (-1.0 if maximize else 1.0) * float(setup.objectives[i].value(plan, None))
            for name, i, maximize in objectives
        }
        finished = finished_for_pruning(
            run.study, objectives, with_pruned=getattr(run.pruner, "wants_pruned", False)
        )
        return cls(run.pruner, finished, costs)

    def decide(self, report: EpochReport) -> str | None:
        """Why to prune the trial after ``report`` (None: go on)."""
        if self.pruner is None:
            return None
        return self.pruner.decide(report.epoch, report.val_accuracy, self.finished, self.costs)


def cost_objectives(setup: SearchSetup) -> list[tuple[str, int, bool]]:
    """Per objective known before training (latency, memory, ...): its name, its
    index in a trial's values, and whether it is maximised."""
    return [
        (o.name, i, o.direction == "maximize")
        for i, o in enumerate(setup.objectives)
        if not o.needs_training
    ]
