"""A pruner: the rule that stops a trial after an epoch (``--pruner``), what the
trial asks of it (:class:`EpochPruner`), what it compares a trial with
(:class:`FinishedTrial`, :class:`EpochCorrelation`), and the rules by name
(``PRUNERS``), each added with :func:`register_pruner` where it is defined.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from nasmlcn.registry import Registry

if TYPE_CHECKING:
    from nasmlcn.search._config import SearchConfig


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


@dataclass(frozen=True)
class FinishedTrial:
    """A finished trial as the pruner compares with it.

    Attributes:
        curve: Validation accuracy after every epoch.
        costs: Cost objective -> value, every one minimised (predicted before
            training: latency, memory, ...); empty in an accuracy-only study.
        feasible: Whether it meets every constraint (an infeasible trial can be on
            no front, so it is nobody's rival; its curve still counts for the
            correlation gate).
        repeat_of: The trial whose result it took (a repeat, search/_run/repeats.py):
            what a replay needs to know; the live pruner never sees repeats.
    """

    curve: tuple[float, ...]
    costs: Mapping[str, float] = field(default_factory=dict)
    feasible: bool = True
    repeat_of: int | None = None

    def costs_no_more_than(self, costs: Mapping[str, float]) -> bool:
        """Whether this trial costs no more than ``costs`` in every cost objective."""
        return all(self.costs.get(name, math.inf) <= value for name, value in costs.items())


def rivals_at(
    epoch: int, finished: Sequence[FinishedTrial], costs: Mapping[str, float]
) -> list[float]:
    """The accuracies after ``epoch`` of a trial's *rivals*: the feasible ``finished``
    trials that reached it and cost no more than ``costs`` in every cost objective
    (every one of them with no costs). Both pruners compare a trial with these."""
    return [
        f.curve[epoch - 1]
        for f in finished
        if f.feasible and len(f.curve) >= epoch and f.costs_no_more_than(costs)
    ]


class EpochPruner(Protocol):
    """What the trial asks of a pruner after every epoch but the last.

    Attributes:
        wants_pruned: Whether the trials it compares a trial with include pruned ones
            (successive halving: they reached the rungs before the one they stopped
            at), or finished ones only (the correlation rule).
    """

    wants_pruned: bool

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


PrunerFactory = Callable[["SearchConfig"], EpochPruner]
"""Makes a search's pruner from its configuration."""


@dataclass(frozen=True)
class PrunerEntry:
    """``make(config)`` builds the pruner of a search."""

    name: str
    make: PrunerFactory
    description: str


PRUNERS: Registry[PrunerEntry] = Registry("pruner")


def register_pruner(name: str, description: str) -> Callable[[PrunerFactory], PrunerFactory]:
    """Registers the decorated factory in ``PRUNERS`` as ``name`` (``--pruner``), with
    its one-line ``description``; returns the factory unchanged."""

    def add(make: PrunerFactory) -> PrunerFactory:
        PRUNERS.register(name, PrunerEntry(name, make, description))
        return make

    return add
