"""``buckets``: heterogeneous lanes in per-device memory/load buckets (thesis ch. 6),
with the model's size searched: small/fast to large/slow models on the same devices.

Parameters (fixed for a study; the devices are part of its identity)::

    fill                     share of every bucket's load limit the model aims at
                             (studies that reward a cheaper model; accuracy-only
                             studies fill to ``accuracy_fill``, 1.0 by default)
    lane0, lane1, ...        the palette: ``kinds`` lane kinds, each one of the
                             space's lanes that fits every device's empty bucket
    lane0_share, ...         the share of the model's load each kind takes

Building a model (deterministic in the parameters):

1. *Compose and place.* Devices are filled in turn, the one that would finish
   first taking the next lane (thesis Algorithm 3's rule, with speeds, so the
   devices stay level as they fill), within its bucket's memory and load limit
   (Algorithm 4's ``fits``) and up to ``fill`` x its load limit. The lane is the
   palette kind furthest below its share of the model's load among the kinds
   after which the device can still reach its target in its remaining lane slots; every
   device gets at least one lane. Devices take different kinds at different
   turns, so they hold different lane groups, not copies of one.
2. *Balance with the palette.* Each device below the slowest one takes more
   palette lanes, largest first, while it stays no slower than it.
3. *Top off* (repair): only when the imbalance is still above ``balance``, the
   device that finishes first takes the lane of the space (outside the palette)
   that lowers the imbalance most, until balanced.
   Steps 1-2 leave one lane slot per device (per speed unit) for this, so a
   device full of small lanes can still be evened out.

Why these parameters, and what was weighed:

- ``fill`` is the trade-off dimension: filling every bucket to its limit (the
  thesis's Algorithm 5, and the previous version of this space) gives every model
  the same step time, so an accuracy/latency study has no front. With ``fill``
  the predicted step time spans about 10x and memory several times over, and the
  samplers learn where on that range the accuracy pays off. It is a parameter
  only when the study rewards a cheaper model (``SpaceContext.rewards_cost``); an
  accuracy-only study fills every bucket (``accuracy_fill``, 1.0: the thesis's
  setting). Searching it there too was measured (``benchmarks/search_quality.py``,
  real training): TPE spent trials on small models and its best after 30 trials
  stayed below the thesis's random search.
- Balance is limited by the smallest lane of the space: at ``--flops 0.25x`` and a
  low fill a device holds one or two lanes, and no lane is small enough to even
  them out to 5 % (``benchmarks/spaces.py``; tests hold 1x and above to 5 %).
- Lanes are categorical choices among those that fit every device's empty
  bucket, worked out once per study from its devices (:meth:`prepare`): no palette
  kind is ever shrunk to fit, so the trained model is the sampled one. Integer
  width and depth would keep their order for TPE, but at ``--flops 1x`` a fifth of
  the (type, width, depth) grid does not fit a K80 and at ``0.25x`` over half
  does, and each such draw would need a repair.
- A palette of a few kinds with shares, rather than parameters per lane or per
  device: the number of lanes depends on ``fill`` and the lane sizes, but the
  samplers need the same parameters in every trial; ``3 x kinds + 1`` parameters
  stay learnable. Per-device groups (a palette per device) were weighed: they
  multiply the parameters by the number of devices and still need a balancing
  step, since random groups have unequal loads; placing one mixed palette with
  Algorithm 3's rule gives heterogeneous devices and balance together. Composing
  the whole model first and then placing it was tried: with small kinds the lane
  caps bind before the loads level, and a third of the trials on 8xK80 ended over
  5 % imbalance (up to 350 %).
- Balance comes from the palette first, and only then from top-offs outside it,
  so few lanes come from outside the sampled parameters (``benchmarks/spaces.py``
  prints the share; every repair is recorded on the trial).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cached_property
from typing import TYPE_CHECKING, Any

from nasmlcn.costs import LaneCost
from nasmlcn.errors import SearchError
from nasmlcn.planning import Bucket
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
from nasmlcn.specs import LaneSpec, parse_lanes

if TYPE_CHECKING:
    from optuna.distributions import BaseDistribution

DEFAULT_FILL = (0.1, 1.0)
DEFAULT_BALANCE = 0.05
_FIXED_FILL_ATTEMPTS = 4
"""Builds of one model at a fixed fill, each at ``_FIXED_FILL_STEP`` x the last."""
_FIXED_FILL_STEP = 0.9


@SPACE_KINDS.register("buckets")
class BucketSpace(SearchSpace):
    """A palette of lane kinds, composed to a searched fill level, placed into
    per-device memory/load buckets and balanced."""

    kind = "buckets"
    keys = (
        *LANE_RANGE_KEYS,
        "kinds",
        "max_lanes_per_device",
        "fill",
        "accuracy_fill",
        "balance",
    )
    placement = "buckets"

    def __init__(self, name: str, data: Mapping[str, Any], source: str) -> None:
        super().__init__(name, data, source)
        origin = f"space {name!r}"
        self.lane_types, self.width, self.depth = lane_ranges(data, origin)
        self.kinds = positive_int(data, "kinds", origin, 3)
        self.max_lanes_per_device = positive_int(data, "max_lanes_per_device", origin, 8)
        if self.kinds > 16:
            raise SearchError(f"{origin}: kinds must be <= 16, got {self.kinds}")
        self.fill = _fill_range(data.get("fill", list(DEFAULT_FILL)), origin)
        self.accuracy_fill = _accuracy_fill(data.get("accuracy_fill", 1.0), origin)
        self._search_fill = True
        self.balance = _fraction(data.get("balance", DEFAULT_BALANCE), "balance", origin)
        self._choices: tuple[LaneSpec, ...] | None = None

    @cached_property
    def all_lanes(self) -> tuple[LaneSpec, ...]:
        """Every lane of the space's ranges."""
        return lanes_in_ranges(self.lane_types, self.width, self.depth)

    def prepare(self, ctx: SpaceContext) -> None:
        self._choices = self.palette_choices(ctx)
        self._search_fill = self.searches_fill(ctx)

    def searches_fill(self, ctx: SpaceContext) -> bool:
        """Whether ``fill`` is a parameter of studies in ``ctx``: when they reward a
        cheaper model, or when the space sets ``accuracy_fill = "searched"``."""
        return ctx.rewards_cost or self.accuracy_fill is None

    def palette_choices(self, ctx: SpaceContext) -> tuple[LaneSpec, ...]:
        """The lanes of the space that fit every device's empty bucket, cheapest first.

        Raises:
            SearchError: None fits (one line: raise ``--mem`` or ``--flops``).
        """
        buckets = space_buckets(ctx)
        costs = [ctx.cost_model.lane_cost(lane, ctx.cost_context) for lane in self.all_lanes]
        fitting = [c for c in costs if all(b.fits(c) for b in buckets)]
        if not fitting:
            from nasmlcn.hardware import format_bytes

            smallest = min(costs, key=lambda c: c.time)
            raise SearchError(
                f"no lane of space {self.name!r} fits every device (the smallest, "
                f"{smallest.lane}, needs {format_bytes(smallest.memory_bytes)} and load "
                f"{smallest.time:.3g}); raise ‹mem› or ‹flops›"
            )
        return tuple(c.lane for c in sorted(fitting, key=lambda c: (c.time, str(c.lane))))

    def model_distributions(self) -> dict[str, BaseDistribution]:
        from optuna.distributions import CategoricalDistribution, FloatDistribution

        choices = tuple(str(lane) for lane in (self._choices or self.all_lanes))
        out: dict[str, BaseDistribution] = {}
        if self._search_fill:
            out["fill"] = FloatDistribution(self.fill[0], self.fill[1], log=True)
        for k in range(self.kinds):
            out[f"lane{k}"] = CategoricalDistribution(choices)
            out[f"lane{k}_share"] = FloatDistribution(0.0, 1.0)
        return out

    def build_candidate(self, params: Mapping[str, Any], ctx: SpaceContext) -> Candidate:
        model, c = ctx.cost_model, ctx.cost_context
        buckets = space_buckets(ctx)
        repairs: list[str] = []
        palette: list[LaneCost] = []
        shares: list[float] = []
        for k in range(self.kinds):
            (lane,) = parse_lanes(str(params[f"lane{k}"]))
            cost = model.lane_cost(lane, c)
            if not all(b.fits(cost) for b in buckets):
                repairs.append(f"palette kind {k} ({lane}) fits not every device; dropped")
                continue
            palette.append(cost)
            shares.append(float(params[f"lane{k}_share"]))
        if not palette:
            raise SearchError(
                f"no palette lane of space {self.name!r} fits every device; raise ‹mem› or ‹flops›"
            )
        total = sum(shares)
        shares = [s / total for s in shares] if total > 0 else [1.0 / len(shares)] * len(shares)
        slowest = min(b.device.speed for b in buckets)
        caps = [
            max(1, round(self.max_lanes_per_device * b.device.speed / slowest)) for b in buckets
        ]

        # composing keeps a slot per device (per speed unit) for balancing
        reserve = [max(1, round(b.device.speed / slowest)) for b in buckets]
        compose_caps = [max(1, cap - r) for cap, r in zip(caps, reserve, strict=True)]
        searched = self.searches_fill(ctx)
        fill = float(params["fill"]) if searched else self.accuracy_fill
        assert fill is not None
        kinds = {p.lane for p in palette}
        best: tuple[float, list[tuple[LaneCost, int]], int, float] | None = None
        # A fixed fill (accuracy-only studies) can leave one device far ahead when
        # a large lane nearly fills it and the others reach their lane cap with
        # small ones; such a model is built again at a lower fill, deterministically
        # (a searched fill is the sampler's to choose, so it is built once).
        for attempt in range(1 if searched else _FIXED_FILL_ATTEMPTS):
            level = fill * _FIXED_FILL_STEP**attempt
            buckets = space_buckets(ctx)
            placed: list[tuple[LaneCost, int]] = []
            _compose(palette, shares, level, buckets, compose_caps, placed)
            _pad(buckets, compose_caps, placed, sorted(palette, key=lambda x: -x.time))
            topped = 0
            if _imbalance(buckets) > self.balance:
                everything = sorted(
                    (model.lane_cost(lane, c) for lane in self.all_lanes),
                    key=lambda x: (-x.time, str(x.lane)),
                )
                before = len(placed)
                _top_off(buckets, caps, placed, everything, self.balance)
                topped = sum(1 for cost, _ in placed[before:] if cost.lane not in kinds)
            imbalance = _imbalance(buckets)
            if best is None or imbalance < best[0]:
                best = (imbalance, placed, topped, level)
            if imbalance <= self.balance:
                break
        assert best is not None
        _, placed, topped, level = best
        if level != fill:
            repairs.append(
                f"built at fill {level:.3g} instead of {fill:.3g} to balance the devices"
            )
        if topped:
            repairs.append(
                f"{topped} lane(s) outside the palette topped devices off to balance them"
            )
        return Candidate(
            spec=self.make_spec([cost.lane for cost, _ in placed], ctx),
            assignment=tuple(j for _, j in placed),
            repairs=tuple(repairs),
            repaired_lanes=topped,
        )

    def describe(self) -> dict[str, Any]:
        info = super().describe()
        info["palette_choices"] = [str(lane) for lane in (self._choices or self.all_lanes)]
        return info


def _compose(
    palette: Sequence[LaneCost],
    shares: Sequence[float],
    fill: float,
    buckets: Sequence[Bucket],
    caps: Sequence[int],
    placed: list[tuple[LaneCost, int]],
) -> None:
    """Fills every bucket towards ``fill`` x its load limit, one lane at a time.

    The device that would finish first gets the next lane (thesis Algorithm 3's
    rule, so the devices stay level as they fill); the lane is the palette kind
    furthest below its share of the model's load among those that fit the
    device's bucket and what is left of its target, preferring kinds large enough
    to reach the target within the device's remaining lane slots. A device gets
    at least one lane even when every kind overshoots its target.
    """
    loads = [0.0] * len(palette)
    targets = [fill * b.load_limit for b in buckets]
    open_devices = set(range(len(buckets)))
    while open_devices:
        j = min(open_devices, key=lambda j: (buckets[j].time, j))
        b = buckets[j]
        need = targets[j] - b.load
        slots = caps[j] - len(b.lanes)
        fitting = [k for k in range(len(palette)) if b.fits(palette[k])]
        within = [k for k in fitting if palette[k].time <= need * (1 + 1e-9)]
        if slots <= 0 or not fitting or (not within and b.lanes):
            open_devices.discard(j)
            continue
        pool = within or fitting
        # kinds after which the largest one could still reach the target in the slots left
        # (with a margin: a device full of small lanes cannot be evened out later)
        biggest = max(palette[k].time for k in pool)
        large = [k for k in pool if palette[k].time + (slots - 1) * biggest >= 1.5 * need]
        pool = large or [max(pool, key=lambda k: palette[k].time)]
        k = min(
            pool,
            key=lambda k: (loads[k] / shares[k] if shares[k] > 0 else float("inf"), k),
        )
        b.add(len(placed), palette[k])
        placed.append((palette[k], j))
        loads[k] += palette[k].time


def _pad(
    buckets: Sequence[Bucket],
    caps: Sequence[int],
    placed: list[tuple[LaneCost, int]],
    candidates: Sequence[LaneCost],
) -> None:
    """Adds ``candidates`` (largest first) to the device that finishes first, each
    keeping it no slower than the slowest device, until no device can take one."""
    makespan = max(b.time for b in buckets)
    open_devices = set(range(len(buckets)))
    while open_devices:
        j = min(open_devices, key=lambda j: (buckets[j].time, j))
        b = buckets[j]
        room = makespan * b.device.speed - b.load
        cost = next(
            (
                c
                for c in candidates
                if c.time <= room * (1 + 1e-9) and len(b.lanes) < caps[j] and b.fits(c)
            ),
            None,
        )
        if cost is None:
            open_devices.discard(j)
            continue
        b.add(len(placed), cost)
        placed.append((cost, j))


def _top_off(
    buckets: Sequence[Bucket],
    caps: Sequence[int],
    placed: list[tuple[LaneCost, int]],
    candidates: Sequence[LaneCost],
    target: float,
) -> None:
    """Until the imbalance is at most ``target``: the device that finishes first
    takes the lane of ``candidates`` that lowers the imbalance most (it may end a
    hair slower than the slowest device: a gap smaller than every lane is closed
    by the lane that overshoots least)."""
    open_devices = set(range(len(buckets)))
    while open_devices and _imbalance(buckets) > target:
        j = min(open_devices, key=lambda j: (buckets[j].time, j))
        b = buckets[j]
        loads = [x.load for x in buckets]
        best: tuple[float, LaneCost] | None = None
        for c in candidates:
            if len(b.lanes) < caps[j] and b.fits(c):
                loads[j] = b.load + c.time
                after = _imbalance_of(loads, buckets)
                if best is None or after < best[0]:
                    best = (after, c)
        if best is None or best[0] >= _imbalance(buckets):
            open_devices.discard(j)
            continue
        b.add(len(placed), best[1])
        placed.append((best[1], j))


def _imbalance_of(loads: Sequence[float], buckets: Sequence[Bucket]) -> float:
    """``makespan / ideal - 1`` of per-device ``loads`` (as :class:`nasmlcn.planning.Plan`)."""
    ideal = sum(loads) / sum(b.device.speed for b in buckets)
    if ideal <= 0:
        return 0.0
    return max(
        max(x / b.device.speed for x, b in zip(loads, buckets, strict=True)) / ideal - 1, 0.0
    )


def _imbalance(buckets: Sequence[Bucket]) -> float:
    """The imbalance of the lanes placed so far."""
    return _imbalance_of([b.load for b in buckets], buckets)


def _fill_range(value: Any, origin: str) -> tuple[float, float]:
    if (
        not isinstance(value, list)
        or len(value) != 2
        or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value)
        or not 0 < value[0] <= value[1] <= 1
    ):
        raise SearchError(
            f"{origin}: fill must be [low, high] with 0 < low <= high <= 1, got {value!r}"
        )
    return float(value[0]), float(value[1])


def _accuracy_fill(value: Any, origin: str) -> float | None:
    """``accuracy_fill``: a level in (0, 1], or None for ``"searched"``."""
    if value == "searched":
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 1:
        raise SearchError(
            f'{origin}: accuracy_fill must be a number in (0, 1] or "searched", got {value!r}'
        )
    return float(value)


def _fraction(value: Any, key: str, origin: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < 1:
        raise SearchError(f"{origin}: {key} must be a number in [0, 1), got {value!r}")
    return float(value)
