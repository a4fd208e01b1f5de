"""Pruners by name: the rule that stops a trial after an epoch (``--pruner``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from nasmlcn.registry import Registry
from nasmlcn.search._pruners.correlation import CorrelationPruner
from nasmlcn.search._pruners.halving import HalvingPruner

if TYPE_CHECKING:
    from nasmlcn.search._config.config import SearchConfig
    from nasmlcn.search._types.pruner import EpochPruner


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
