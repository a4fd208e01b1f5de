"""A search checked and built: its configuration and the objects made from it (made by
:func:`~nasmlcn.search.setup_search`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from nasmlcn.costs import CostModel
    from nasmlcn.data import DatasetInfo
    from nasmlcn.hardware import DeviceSpec
    from nasmlcn.planning import FlopsLimit
    from nasmlcn.search._config.config import SearchConfig
    from nasmlcn.search._types.objective import Objective
    from nasmlcn.search.spaces import SearchSpace, SpaceContext


@dataclass(frozen=True)
class SearchSetup:
    """A validated search: the config and the objects built from it."""

    config: SearchConfig
    devices: tuple[DeviceSpec, ...]
    flops: FlopsLimit
    space: SearchSpace
    cost_model: CostModel
    objectives: tuple[Objective, ...]
    dataset: DatasetInfo
    space_context: SpaceContext
    notices: tuple[str, ...] = ()  # what the user should know before the first trial

    @property
    def directions(self) -> list[str]:
        return [o.direction for o in self.objectives]

    @property
    def metric_names(self) -> list[str]:
        return [o.metric for o in self.objectives]

    @property
    def needs_training(self) -> bool:
        return any(o.needs_training for o in self.objectives)
