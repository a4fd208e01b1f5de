"""``buckets``: the thesis's chapter 6 space — heterogeneous lanes filled into every
device bucket until it is full (Algorithms 4 and 5), so every model fits and is
balanced by construction.

Parameters (fixed in every trial, whatever the devices): a *palette* of ``kinds``
lane kinds, each with a type, width, depth and share::

    lane0_type, lane0_width, lane0_depth, lane0_share, lane1_type, ...

Filling. Each device's bucket has a memory limit and a load limit (``--flops``,
scaled by the device's speed). Buckets are filled one after the other: the next
lane is the palette kind furthest below its share of the bucket's load that still
fits; when no palette kind fits, the largest lane of the space's ranges that fits
tops the bucket off; the bucket is full when no lane of the space fits at all
(Algorithm 4's ``is_full``). A palette kind too large for an empty bucket is first
shrunk (depth, then width) until it fits.

Why repair rather than constraints: every sampled parameter vector yields a model
that fits every bucket's memory, so no trial spends training time on a model the
devices cannot hold, and the samplers see a value for every trial. The repairs are
recorded on the trial; the memory constraint is still set (always satisfied here)
so the dashboard shows feasibility uniformly across spaces.

Why a palette rather than one parameter set per lane: the number of lanes depends
on the devices and on the lanes' sizes, but Optuna's samplers need the same
parameters in every trial. A palette keeps them fixed (``4 * kinds``) and small,
which is also what lets TPE and NSGA-II learn which lane kinds pay off.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from functools import cached_property
from typing import TYPE_CHECKING, Any

from nasmlcn.costs import LaneCost
from nasmlcn.errors import SearchError
from nasmlcn.planning import Bucket, make_buckets
from nasmlcn.search.spaces._base import (
    SPACE_KINDS,
    Candidate,
    SearchSpace,
    SpaceContext,
    lane_ranges,
    positive_int,
)
from nasmlcn.specs import LaneSpec

if TYPE_CHECKING:
    from optuna.distributions import BaseDistribution


@SPACE_KINDS.register("buckets")
class BucketSpace(SearchSpace):
    """Palette lanes filled into per-device memory/load buckets."""

    kind = "buckets"

    def __init__(self, name: str, data: Mapping[str, Any], source: str) -> None:
        super().__init__(name, data, source)
        origin = f"space {name!r}"
        self.lane_types, self.width, self.depth = lane_ranges(data, origin)
        self.kinds = positive_int(data, "kinds", origin, 3)
        self.max_lanes_per_device = positive_int(data, "max_lanes_per_device", origin, 8)
        if self.kinds > 16:
            raise SearchError(f"{origin}: kinds must be <= 16, got {self.kinds}")

    def model_distributions(self) -> dict[str, BaseDistribution]:
        from optuna.distributions import (
            CategoricalDistribution,
            FloatDistribution,
            IntDistribution,
        )

        out: dict[str, BaseDistribution] = {}
        for k in range(self.kinds):
            out[f"lane{k}_type"] = CategoricalDistribution(self.lane_types)
            out[f"lane{k}_width"] = IntDistribution(*self.width)
            out[f"lane{k}_depth"] = IntDistribution(*self.depth)
            out[f"lane{k}_share"] = FloatDistribution(0.0, 1.0)
        return out

    @cached_property
    def all_lanes(self) -> tuple[LaneSpec, ...]:
        """Every lane of the space's ranges."""
        return tuple(
            LaneSpec(t, w, d)
            for t, w, d in itertools.product(
                self.lane_types,
                range(self.width[0], self.width[1] + 1),
                range(self.depth[0], self.depth[1] + 1),
            )
        )

    def build(self, params: Mapping[str, Any], ctx: SpaceContext) -> Candidate:
        model, c = ctx.cost_model, ctx.cost_context
        buckets = make_buckets(
            ctx.devices, ctx.flops, model, c, reserved_memory=ctx.reserved_memory
        )
        # Every lane of the space, largest load first: the top-off candidates.
        everything = sorted(
            (model.lane_cost(lane, c) for lane in self.all_lanes),
            key=lambda x: (-x.time, str(x.lane)),
        )
        largest_bucket = max(buckets, key=lambda b: (b.load_limit, b.memory_limit))
        repairs: list[str] = []
        palette: list[LaneCost] = []
        shares: list[float] = []
        for k in range(self.kinds):
            wanted = LaneSpec(
                params[f"lane{k}_type"], params[f"lane{k}_width"], params[f"lane{k}_depth"]
            )
            fitted = self._shrink(wanted, largest_bucket, ctx)
            if fitted is None:
                repairs.append(f"palette kind {k} ({wanted}) fits no device; dropped")
                continue
            if fitted.lane != wanted:
                repairs.append(
                    f"palette kind {k}: {wanted} shrunk to {fitted.lane} to fit a device"
                )
            palette.append(fitted)
            shares.append(float(params[f"lane{k}_share"]))
        total = sum(shares)
        shares = (
            [s / total for s in shares] if total > 0 else [1.0 / max(len(shares), 1)] * len(shares)
        )

        lanes, assignment = self._fill(buckets, palette, shares, everything, len(ctx.devices))
        if not lanes:
            raise SearchError(
                f"no lane of space {self.name!r} fits any device (smallest needs "
                f"{everything[-1].memory_bytes} bytes and load {everything[-1].time:.3g}); "
                "raise --mem or --flops"
            )
        topped = sum(1 for lane in lanes if all(lane != p.lane for p in palette))
        if topped:
            repairs.append(f"{topped} lane(s) outside the palette topped buckets off")
        return Candidate(
            spec=self.make_spec(lanes, ctx),
            assignment=tuple(assignment),
            training=self.training_values(params),
            repairs=tuple(repairs),
        )

    def _shrink(self, lane: LaneSpec, bucket: Bucket, ctx: SpaceContext) -> LaneCost | None:
        """``lane``, or a shallower then narrower one, that fits an empty ``bucket``."""
        width, depth = lane.width, lane.depth
        while True:
            cost = ctx.cost_model.lane_cost(LaneSpec(lane.type, width, depth), ctx.cost_context)
            if bucket.fits(cost):
                return cost
            if depth > self.depth[0]:
                depth -= 1
            elif width > self.width[0]:
                width -= 1
            else:
                return None

    def _fill(
        self,
        buckets: list[Bucket],
        palette: list[LaneCost],
        shares: list[float],
        everything: list[LaneCost],
        num_devices: int,
    ) -> tuple[list[LaneSpec], list[int]]:
        """Algorithm 5, one bucket after the other, with the palette's shares
        instead of chance.

        The next lane of a bucket is the palette kind furthest below its share of
        the bucket's load that fits, else the largest lane of the space that fits
        (top-off); the bucket is full when no lane of the space fits. A bucket may
        also hold at most ``max_lanes_per_device`` lanes times its device's speed
        over the slowest one (the cap grows like the load limit), and its last
        slots (one per speed unit) are always top-offs, so buckets that the cap
        ends are filled to the same share of their load limits and the devices
        stay balanced.
        """
        lanes: list[LaneSpec] = []
        assignment: list[int] = []
        slowest = min(b.device.speed for b in buckets)
        for j, bucket in enumerate(buckets):
            ratio = bucket.device.speed / slowest
            cap = max(1, round(self.max_lanes_per_device * ratio))
            palette_slots = cap - max(1, round(ratio))
            loads = [0.0] * len(palette)
            while len(bucket.lanes) < cap:
                chosen: LaneCost | None = None
                if len(bucket.lanes) < palette_slots:
                    order = sorted(
                        range(len(palette)),
                        key=lambda k: (loads[k] / shares[k] if shares[k] > 0 else float("inf"), k),
                    )
                    k = next((k for k in order if bucket.fits(palette[k])), None)
                    if k is not None:
                        chosen = palette[k]
                        loads[k] += chosen.time
                if chosen is None:
                    chosen = next((c for c in everything if bucket.fits(c)), None)
                if chosen is None:
                    break  # full: no lane of the space fits
                bucket.add(len(lanes), chosen)
                lanes.append(chosen.lane)
                assignment.append(j)
        return lanes, assignment
