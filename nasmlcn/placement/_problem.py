"""The lane placement problem and its solutions (pure Python).

Placing lanes on devices is multi-way number partitioning on uniform machines
(thesis sec. 5.2): lane ``i`` costs ``cost[i]`` (its step time on a speed-1.0
device) and needs ``memory[i]`` bytes; device ``j`` has speed ``speed[j]`` and
``capacity[j]`` bytes for lanes. The makespan of an assignment is
``max_j sum(cost[i] for i on j) / speed[j]`` — the predicted step time when
every device runs its lanes at once.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from nasmlcn.errors import PlacementError, option
from nasmlcn.hardware import format_bytes


@dataclass(frozen=True)
class PlacementProblem:
    """Lanes to place and devices to place them on.

    Attributes:
        costs: Per lane, its time on a speed-1.0 device (> 0).
        memory: Per lane, bytes it needs on its device (>= 0).
        speeds: Per device, relative speed (> 0).
        capacities: Per device, bytes available to lanes.
        lane_names: Per lane, a label for messages (``mlcn1:4x2``).
        device_names: Per device, a label for messages (``K80:0``).
    """

    costs: tuple[float, ...]
    memory: tuple[int, ...]
    speeds: tuple[float, ...]
    capacities: tuple[int, ...]
    lane_names: tuple[str, ...] = field(default=(), compare=False)
    device_names: tuple[str, ...] = field(default=(), compare=False)

    def __post_init__(self) -> None:
        for name in ("costs", "memory", "speeds", "capacities", "lane_names", "device_names"):
            object.__setattr__(self, name, tuple(getattr(self, name)))
        if len(self.costs) != len(self.memory):
            raise ValueError(f"{len(self.costs)} lane costs but {len(self.memory)} lane memories")
        if len(self.speeds) != len(self.capacities) or not self.speeds:
            raise ValueError("need at least one device, with as many speeds as capacities")
        if any(not (math.isfinite(c) and c >= 0) for c in self.costs):
            raise ValueError(f"lane costs must be finite and >= 0, got {self.costs}")
        if any(not (math.isfinite(s) and s > 0) for s in self.speeds):
            raise ValueError(f"device speeds must be finite and > 0, got {self.speeds}")
        if not self.lane_names:
            object.__setattr__(
                self, "lane_names", tuple(f"lane {i}" for i in range(len(self.costs)))
            )
        if not self.device_names:
            object.__setattr__(
                self, "device_names", tuple(f"device {j}" for j in range(len(self.speeds)))
            )

    @property
    def num_lanes(self) -> int:
        return len(self.costs)

    @property
    def num_devices(self) -> int:
        return len(self.speeds)

    def makespan(self, assignment: Sequence[int]) -> float:
        """``max_j load_j / speed_j`` of ``assignment`` (lane -> device index)."""
        loads = self.loads(assignment)
        return max(load / s for load, s in zip(loads, self.speeds, strict=True))

    def loads(self, assignment: Sequence[int]) -> list[float]:
        """Per device, the summed cost of its lanes."""
        loads = [0.0] * self.num_devices
        for i, j in enumerate(assignment):
            loads[j] += self.costs[i]
        return loads

    def memory_used(self, assignment: Sequence[int]) -> list[int]:
        used = [0] * self.num_devices
        for i, j in enumerate(assignment):
            used[j] += self.memory[i]
        return used

    def ideal_makespan(self) -> float:
        """The makespan of a perfectly divisible load: ``sum(cost) / sum(speed)``."""
        return sum(self.costs) / sum(self.speeds)

    def lower_bound(self) -> float:
        """A simple valid lower bound on the optimal makespan.

        The larger of the divisible-load bound and, for every k <= number of
        devices, the k largest lanes on the k fastest devices (they cannot share
        less than those devices' total speed).
        """
        bound = self.ideal_makespan()
        costs = sorted(self.costs, reverse=True)
        speeds = sorted(self.speeds, reverse=True)
        lane_sum = speed_sum = 0.0
        for k in range(min(len(costs), len(speeds))):
            lane_sum += costs[k]
            speed_sum += speeds[k]
            bound = max(bound, lane_sum / speed_sum)
        return bound

    def check(self, assignment: Sequence[int]) -> None:
        """Raises ValueError unless ``assignment`` is a full, memory-feasible placement."""
        if len(assignment) != self.num_lanes:
            raise ValueError(f"assignment has {len(assignment)} entries for {self.num_lanes} lanes")
        for i, j in enumerate(assignment):
            if not 0 <= j < self.num_devices:
                raise ValueError(
                    f"lane {i} assigned to device {j}, not in 0..{self.num_devices - 1}"
                )
        for j, (used, cap) in enumerate(
            zip(self.memory_used(assignment), self.capacities, strict=True)
        ):
            if used > cap:
                raise ValueError(f"device {j} holds {used} bytes of lanes, more than its {cap}")

    def does_not_fit(self, lane: int, free: Sequence[int]) -> PlacementError:
        """The error for ``lane`` fitting on no device with ``free`` bytes left."""
        best = max(range(self.num_devices), key=lambda j: free[j])
        return PlacementError(
            f"{self.lane_names[lane]} (lane {lane}) needs {format_bytes(self.memory[lane])} but the "
            f"largest free memory left is {format_bytes(max(free[best], 0))} on "
            f"{self.device_names[best]}; use fewer or smaller lanes, or more memory "
            f"({option('mem')})"
        )

    def check_fits_somewhere(self) -> None:
        """Raises PlacementError for the first lane larger than every device's capacity."""
        for i, mem in enumerate(self.memory):
            if all(mem > cap for cap in self.capacities):
                raise self.does_not_fit(i, self.capacities)


@dataclass(frozen=True)
class Placement:
    """A placement: lane -> device, and what is known about its quality.

    Attributes:
        assignment: Per lane, the device index.
        makespan: ``max_j load_j / speed_j``.
        strategy: The placer that made it.
        lower_bound: A proven lower bound on the optimal makespan (None if the
            placer proves none).
        optimal: True when the placer proved the makespan optimal.
        seconds: Time the placer took.
    """

    assignment: tuple[int, ...]
    makespan: float
    strategy: str
    lower_bound: float | None = None
    optimal: bool = False
    seconds: float = 0.0

    @property
    def gap(self) -> float | None:
        """Relative gap ``makespan / lower_bound - 1`` (0 when proven optimal)."""
        if self.lower_bound is None or self.lower_bound <= 0:
            return None
        return max(self.makespan / self.lower_bound - 1.0, 0.0)

    def lanes_on(self, device: int) -> list[int]:
        return [i for i, j in enumerate(self.assignment) if j == device]

    def to_dict(self) -> dict[str, Any]:
        return {
            "strategy": self.strategy,
            "assignment": list(self.assignment),
            "makespan": self.makespan,
            "lower_bound": self.lower_bound,
            "optimal": self.optimal,
            "gap": self.gap,
            "seconds": self.seconds,
        }
