"""``homogeneous``: n lanes of one configuration (type, width, depth, count).

Placement is greedy (thesis Algorithm 3). Repair: when the n lanes do not fit the
devices' memory, the count is lowered until they do (recorded on the trial), so
every trial trains a model the devices can hold; a configuration of which not even
one lane fits is reported infeasible and not trained.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from nasmlcn.search.spaces._base import SPACE_KINDS, Candidate, SearchSpace, SpaceContext, placed
from nasmlcn.search.spaces._values import LANE_RANGE_KEYS, int_range, lane_ranges
from nasmlcn.specs import MAX_REPEAT, LaneSpec

if TYPE_CHECKING:
    from optuna.distributions import BaseDistribution


@SPACE_KINDS.register("homogeneous")
class HomogeneousSpace(SearchSpace):
    """``lanes`` copies of one lane."""

    kind = "homogeneous"
    keys = (*LANE_RANGE_KEYS, "lanes")

    def __init__(self, name: str, data: Mapping[str, Any], source: str) -> None:
        super().__init__(name, data, source)
        origin = f"space {name!r}"
        self.lane_types, self.width, self.depth = lane_ranges(data, origin)
        self.lanes = int_range(data, "lanes", origin, (1, 32), MAX_REPEAT)

    def model_distributions(self) -> dict[str, BaseDistribution]:
        from optuna.distributions import CategoricalDistribution, IntDistribution

        return {
            "type": CategoricalDistribution(self.lane_types),
            "width": IntDistribution(*self.width),
            "depth": IntDistribution(*self.depth),
            "lanes": IntDistribution(*self.lanes),
        }

    def build_candidate(self, params: Mapping[str, Any], ctx: SpaceContext) -> Candidate:
        lane = LaneSpec(params["type"], params["width"], params["depth"])
        wanted = int(params["lanes"])
        candidate = placed(self.make_spec([lane] * wanted, ctx), ctx)
        if candidate.feasible:
            return candidate
        # the most copies that fit: fewer copies of one lane never fit worse, so
        # halving finds it in log2(wanted) placements, not wanted
        low, high, best = 1, wanted - 1, None
        while low <= high:
            n = (low + high) // 2
            trial = placed(self.make_spec([lane] * n, ctx), ctx)
            if trial.feasible:
                low, best = (
                    n + 1,
                    replace(trial, repairs=(f"{wanted} lanes do not fit; lowered to {n}",)),
                )
            else:
                high = n - 1
        if best is None:  # not even one lane fits: infeasible, with the reason
            return placed(self.make_spec([lane], ctx), ctx)
        return best
