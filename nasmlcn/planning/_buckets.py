"""Device buckets (thesis Algorithm 4): how much memory and load each device has left.

A bucket has a memory limit (the device's memory, less the head's share on the head
device) and a load limit (in the cost model's time unit, i.e. time on a speed-1.0
device). Load limits scale with device speed relative to the slowest device in the
pool, so every bucket, when full, takes about the same *time*: a model that fills
its buckets is balanced by construction.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from nasmlcn.costs import CostContext, CostModel, LaneCost
from nasmlcn.hardware import DeviceSpec
from nasmlcn.planning._flops import BASELINE_LANES, FlopsLimit
from nasmlcn.specs import parse_lanes

LOAD_TOLERANCE = 1e-9
"""Relative slack on load limits, so a lane exactly at the limit fits despite
floating-point rounding."""


@dataclass
class Bucket:
    """One device's remaining memory and load (Algorithm 4's ``Device``).

    Attributes:
        device: The device.
        memory_limit: Bytes available to lanes.
        load_limit: Load available to lanes (time on a speed-1.0 device).
        free_memory: Bytes left.
        free_load: Load left.
        lanes: Indices of the lanes added, in order.
    """

    device: DeviceSpec
    memory_limit: int
    load_limit: float
    free_memory: int = field(init=False)
    free_load: float = field(init=False)
    lanes: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.free_memory = self.memory_limit
        self.free_load = self.load_limit

    def fits(self, cost: LaneCost) -> bool:
        """Whether a lane of ``cost`` fits in what is left."""
        return (
            cost.memory_bytes <= self.free_memory
            and cost.time <= self.free_load + LOAD_TOLERANCE * self.load_limit
        )

    def add(self, index: int, cost: LaneCost) -> None:
        """Adds lane ``index`` (Algorithm 4's ``add_lane``)."""
        if not self.fits(cost):
            raise ValueError(f"lane {cost.lane} does not fit {self.device.name}")
        self.free_memory -= cost.memory_bytes
        self.free_load -= cost.time
        self.lanes.append(index)

    def is_full(self, candidates: Iterable[LaneCost]) -> bool:
        """Full when none of ``candidates`` (the lanes a space can make) fits."""
        return not any(self.fits(c) for c in candidates)

    @property
    def load(self) -> float:
        return self.load_limit - self.free_load

    @property
    def time(self) -> float:
        """Time of the lanes added so far on this device."""
        return self.load / self.device.speed

    def to_dict(self) -> dict[str, Any]:
        return {
            "device": self.device.name,
            "memory_limit": self.memory_limit,
            "load_limit": self.load_limit,
            "free_memory": self.free_memory,
            "free_load": self.free_load,
            "lanes": list(self.lanes),
        }


def baseline_load(cost_model: CostModel, ctx: CostContext) -> tuple[float, int]:
    """Load (time on a speed-1.0 device) and training FLOPs per image of the thesis baseline."""
    costs = [cost_model.lane_cost(lane, ctx) for lane in parse_lanes(BASELINE_LANES)]
    return sum(c.time for c in costs), sum(c.train_flops for c in costs) // ctx.batch_size


def load_limits(
    devices: Sequence[DeviceSpec], flops: FlopsLimit, cost_model: CostModel, ctx: CostContext
) -> list[float]:
    """Per device, its load limit: ``flops`` per device scaled by speed / slowest speed.

    An absolute FLOPs figure is turned into a multiple of the baseline by the
    baseline's training FLOPs per image, so both forms mean the same with every
    cost model.
    """
    load, flops_per_image = baseline_load(cost_model, ctx)
    multiple = flops.multiple if flops.multiple is not None else flops.flops / flops_per_image  # type: ignore[operator]
    slowest = min(d.speed for d in devices)
    return [multiple * load * d.speed / slowest for d in devices]


def make_buckets(
    devices: Sequence[DeviceSpec],
    flops: FlopsLimit,
    cost_model: CostModel,
    ctx: CostContext,
    *,
    reserved_memory: Sequence[int] = (),
) -> list[Bucket]:
    """One bucket per device.

    Args:
        devices: The target devices.
        flops: The per-device load limit (``4x`` or an absolute figure).
        cost_model: Predicts lane loads and memory.
        ctx: Batch size, input shape, routing.
        reserved_memory: Per device, bytes kept back (the head on the head device).
    """
    limits = load_limits(devices, flops, cost_model, ctx)
    reserved = list(reserved_memory) + [0] * (len(devices) - len(reserved_memory))
    return [
        Bucket(d, max(d.memory_bytes - r, 0), limit)
        for d, limit, r in zip(devices, limits, reserved, strict=True)
    ]
