"""What the trial asks of a pruner after every epoch but the last (the rules:
:mod:`nasmlcn.search._pruners`; by name: ``PRUNERS``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from nasmlcn.search._pruners.correlation import EpochCorrelation, FinishedTrial


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
