"""``thesis``: the thesis's own random MLCN generator (Algorithms 4 and 5), kept exactly;
with ``--sampler random`` the search is its random NAS (Algorithm 6), the baseline
that TPE and NSGA-II must beat.

What the thesis does (seed ``000``, sec. 6.2). "Line n" is the pseudo-code's own
numbering, "seed n" the line of the seed text (``000_*.txt``):

- Algorithm 4 (seed 1031-1056): one ``Device`` per device with ``free_memory`` and
  ``free_flops`` (lines 1-3); ``add_lane`` subtracts a lane's memory and FLOPS
  (lines 9-11, seed 1052-1056). Here: :class:`~nasmlcn.planning.Bucket` (memory
  less the head's reserve on the head device, load limit from ``--flops`` scaled by
  the device's speed).
- Algorithm 5 (seed 1058-1075): ``while len(devices) != 0`` (line 6, seed 1065),
  ``dev = get a device from devices`` (line 7, seed 1066), ``lane =
  rand_lane(dev.free_memory, dev.free_flops)``, a random lane that uses "less or
  equal" memory and FLOPS than the device has left (lines 8-11, seed 1067-1070),
  add it to the device and to the model (lines 12-13, seed 1071-1072), remove the
  device once it ``is_full`` (lines 14-15, seed 1073-1074).
- Algorithm 6 (seed 1078-1104): generate N such models, train and test each, keep
  the most accurate: here Optuna's ``RandomSampler`` drawing :data:`SEED_PARAM`.

How the open points of the pseudo-code are read:

- *Which device* (line 7; the prose, seed 1021: "we select a device that is not
  yet full and randomly generate a lane that can fit such a device"): one of the
  devices not yet full, uniformly at random. Each bucket is filled from its own
  free memory and load only, so picking in order would give every device the same
  distribution of lanes; the pick only decides the order of the lanes in the model.
- *Which lane* (line 11, ``rand_lane``): type, width and depth each uniform over
  the file's ranges, drawn again until the lane fits. That is the same
  distribution as drawing uniformly among the lanes of the space that fit, which
  is what is done (one draw, and it always ends).
- *Full* (Algorithm 4 lines 4-8, seed 1041-1049, test ``free_flops = 0 or
  free_memory = 0``, which lanes of discrete sizes almost never reach exactly; in
  between, ``rand_lane`` would have no lane to return): a bucket is full when no
  lane of the space fits what it has left (``Bucket.is_full``, as the design brief reads
  it). A device of which no lane fits even when empty gets no lanes (line 5's list
  leaves it out); if that is every device, :class:`SearchError`.
- *Not in the thesis*: a bucket is also full at ``max_lanes_per_device`` lanes
  (default 32) times its device's speed over the slowest device's, the same
  scaling as its load limit. Why a cap: lanes per bucket grow with its load, and
  the end of every fill is a run of the smallest lanes (160 ``mlcn2:1x1`` fit one
  1x K80 bucket). Measured without a cap (analytic cost model, batch 100, 100
  seeds), a K80 bucket takes 9 lanes on average at ``--flops 1x`` and 31 (up to
  55) at 8x, the V100 of the 1xK80,1xM40,1xP100,1xV100 mix 157 (up to 189) at 8x:
  models of hundreds of lanes that train for hours. 32 leaves the thesis's fill
  untouched at 1x and nearly so at 4x (24 of 1,600 K80 buckets reach it; 8xK80,
  200 seeds). Why scaled: a capped fast device is then cut at the same share of
  its load as a capped slow one; a flat 32 gave the mix above at 4x a mean
  imbalance of 0.70 (0.0001 with the scaled cap).

Parameters: one, ``seed`` (an integer in [0, 2**31 - 1]); the lanes are drawn
with ``random.Random(seed)``, so Optuna records the randomness and the model is a
deterministic function of the trial's parameters and the devices. A sampler other
than ``random`` cannot learn anything from it: neighbouring seeds give unrelated
models, which is the point of this baseline (use ``buckets`` for TPE/NSGA-II).
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from functools import cached_property
from typing import TYPE_CHECKING, Any

from nasmlcn.errors import SearchError
from nasmlcn.search.spaces._base import (
    SPACE_KINDS,
    Candidate,
    SearchSpace,
    SpaceContext,
    space_buckets,
)
from nasmlcn.search.spaces._values import (
    LANE_RANGE_KEYS,
    lane_ranges,
    lanes_in_ranges,
    positive_int,
)
from nasmlcn.specs import LaneSpec

if TYPE_CHECKING:
    from optuna.distributions import BaseDistribution

    from nasmlcn.costs import LaneCost
    from nasmlcn.planning import Bucket

SEED_PARAM = "seed"
SEED_MAX = 2**31 - 1


@SPACE_KINDS.register("thesis")
class ThesisSpace(SearchSpace):
    """Random lanes drawn into devices that are not yet full (Algorithms 4-5)."""

    kind = "thesis"
    keys = (*LANE_RANGE_KEYS, "max_lanes_per_device")
    placement = "buckets"

    def __init__(self, name: str, data: Mapping[str, Any], source: str) -> None:
        super().__init__(name, data, source)
        origin = f"space {name!r}"
        self.lane_types, self.width, self.depth = lane_ranges(data, origin)
        self.max_lanes_per_device = positive_int(data, "max_lanes_per_device", origin, 32)

    def model_distributions(self) -> dict[str, BaseDistribution]:
        from optuna.distributions import IntDistribution

        return {SEED_PARAM: IntDistribution(0, SEED_MAX)}

    @cached_property
    def all_lanes(self) -> tuple[LaneSpec, ...]:
        """Every lane of the space's ranges, in a fixed order."""
        return lanes_in_ranges(self.lane_types, self.width, self.depth)

    def prepare(self, ctx: SpaceContext) -> None:
        self._open_devices(ctx)  # devices no lane fits are refused before any trial

    def _open_devices(self, ctx: SpaceContext) -> tuple[list[LaneCost], list[Bucket], list[int]]:
        """The lanes' costs, the devices' buckets and the devices to fill (Algorithm 5,
        line 5: one that fits nothing is full already).

        Raises:
            SearchError: No lane fits any device (one line: raise ``--mem`` or ``--flops``).
        """
        costs = [ctx.cost_model.lane_cost(lane, ctx.cost_context) for lane in self.all_lanes]
        buckets = space_buckets(ctx)
        open_devices = [j for j, b in enumerate(buckets) if not b.is_full(costs)]
        if not open_devices:
            from nasmlcn.hardware import format_bytes

            smallest = min(costs, key=lambda x: (x.time, x.memory_bytes))
            raise SearchError(
                f"no lane of space {self.name!r} fits any device (the smallest, "
                f"{smallest.lane}, needs {format_bytes(smallest.memory_bytes)} and load "
                f"{smallest.time:.3g}); raise ‹mem› or ‹flops›"
            )
        return costs, buckets, open_devices

    def build_candidate(self, params: Mapping[str, Any], ctx: SpaceContext) -> Candidate:
        rng = random.Random(int(params[SEED_PARAM]))
        costs, buckets, open_devices = self._open_devices(ctx)
        slowest = min(b.device.speed for b in buckets)
        caps = [
            max(1, round(self.max_lanes_per_device * b.device.speed / slowest)) for b in buckets
        ]
        lanes: list[LaneSpec] = []
        assignment: list[int] = []
        while open_devices:  # line 6
            j = rng.choice(open_devices)  # line 7
            bucket = buckets[j]
            fitting = [x for x in costs if bucket.fits(x)]
            drawn = rng.choice(fitting)  # lines 8-11: rand_lane(free_memory, free_flops)
            bucket.add(len(lanes), drawn)  # line 12
            lanes.append(drawn.lane)  # line 13
            assignment.append(j)
            if len(bucket.lanes) >= caps[j] or bucket.is_full(costs):
                open_devices.remove(j)  # lines 14-15
        return Candidate(
            spec=self.make_spec(lanes, ctx),
            assignment=tuple(assignment),
        )
