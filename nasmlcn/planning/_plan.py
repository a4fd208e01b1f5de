"""Planning a model onto devices: lane costs, placement, per-device time and memory.

:func:`plan_model` is what ``nasmlcn plan`` prints and what the search stores on
every trial. The head (class capsules, decoder) runs on the head device (device
0): its memory is reserved there, and its time is added to the predicted step time
but not to the makespan, which covers the lanes only: a device's load is its lanes'
time as its cost model predicts them together (:meth:`~nasmlcn.costs.CostModel.lanes_time`):
the sum of ``lane_costs`` for the ``analytic`` and ``thesis`` models (anyone can
recompute it), the whole-model fit's time of the device's lanes, fused groups
included, for a ``calibrated`` model whose calibration measured whole models.

Inference (one image, batch ``INFERENCE_BATCH_SIZE``): the lanes of every device
run one after the other and the devices in parallel, as in training, so the
*inference makespan* is ``max over devices of sum(lane inference times) / speed``
on the same placement; the predicted inference latency adds the head's
classification (no decoder) on the head device. Moving the lanes' ``K`` outputs
to the head device is not modelled (a few dozen bytes per lane).
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from nasmlcn.costs import (
    INFERENCE_BATCH_SIZE,
    CostContext,
    CostModel,
    ModelCost,
    get_cost_model,
)
from nasmlcn.hardware import DeviceSpec, format_devices
from nasmlcn.placement import PLACERS, Placement, PlacementProblem, get_placer
from nasmlcn.specs import MLCNSpec

HEAD_DEVICE = 0
RANDOM_DRAWS = 20
"""Seeded random placements averaged for the ``random`` comparison."""


@dataclass(frozen=True)
class DevicePlan:
    """One device in a plan.

    Attributes:
        device: The device.
        lanes: Indices of its lanes (in the model's lane order).
        load: Predicted time of its lanes per step on a speed-1.0 device: the
            lanes' times summed, or with a cost model that knows what lanes
            cost together (the calibrated whole-model fit), their time as they run
            there, fused groups included (:meth:`~nasmlcn.costs.CostModel.lanes_time`).
        time: ``load / speed``: predicted time of its lanes per step.
        memory_bytes: Predicted memory of its lanes (and the head, on the head device).
        head: Whether the head runs here.
        inference_time: Summed lane inference time (per image, forward only) over
            ``speed``; the head's is not included.
    """

    device: DeviceSpec
    lanes: tuple[int, ...]
    load: float
    time: float
    memory_bytes: int
    head: bool
    inference_time: float

    @property
    def memory_limit(self) -> int:
        return self.device.memory_bytes

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.device.index,
            "name": self.device.name,
            "kind": self.device.kind,
            "speed": self.device.speed,
            "memory_bytes": self.device.memory_bytes,
            "lanes": list(self.lanes),
            "load": self.load,
            "time": self.time,
            "memory_used_bytes": self.memory_bytes,
            "head": self.head,
            "inference_time": self.inference_time,
        }


@dataclass(frozen=True)
class Plan:
    """A model placed on devices, with its predicted costs.

    Attributes:
        spec: The model.
        devices: The target devices.
        cost_model: Name of the cost model used.
        time_unit: Unit of lane times (``s``: seconds on a speed-1.0 device).
        batch_size: Training batch size the costs are for.
        costs: Per-lane and head costs.
        placement: The chosen placement.
        per_device: Per device, its lanes, load, time and memory.
        comparison: Makespan of the other strategies (``random``: mean of seeded draws).
    """

    spec: MLCNSpec
    devices: tuple[DeviceSpec, ...]
    cost_model: str
    time_unit: str
    batch_size: int
    costs: ModelCost
    placement: Placement
    per_device: tuple[DevicePlan, ...]
    comparison: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def makespan(self) -> float:
        """``max over devices of load / speed``: the lanes' part of a step."""
        return max(d.time for d in self.per_device)

    @property
    def ideal(self) -> float:
        """Makespan of a perfectly divisible load: ``sum(loads) / sum(speeds)``."""
        return sum(d.load for d in self.per_device) / sum(d.speed for d in self.devices)

    @property
    def imbalance(self) -> float:
        """``makespan / ideal - 1``: 0 is perfectly balanced."""
        return imbalance(self.makespan, self.ideal)

    @property
    def step_time(self) -> float:
        """Predicted step time: the makespan plus the head on the head device."""
        return self.makespan + self.costs.head.time / self.devices[HEAD_DEVICE].speed

    @property
    def inference_makespan(self) -> float:
        """``max over devices of sum(lane inference times) / speed``: the lanes'
        part of classifying one image, devices in parallel."""
        return max(d.inference_time for d in self.per_device)

    @property
    def inference_latency(self) -> float:
        """Predicted per-image inference latency (batch ``INFERENCE_BATCH_SIZE``):
        the inference makespan plus the head's classification on the head device."""
        head = self.costs.head.inference_time / self.devices[HEAD_DEVICE].speed
        return self.inference_makespan + head

    @property
    def peak_memory_bytes(self) -> int:
        """The largest predicted memory on any one device."""
        return max(d.memory_bytes for d in self.per_device)

    def to_dict(self) -> dict[str, Any]:
        return {
            "lanes": self.spec.describe(),
            "arch": self.spec.to_dict(),
            "devices_spec": format_devices(self.devices),
            "cost_model": self.cost_model,
            "time_unit": self.time_unit,
            "batch_size": self.batch_size,
            "strategy": self.placement.strategy,
            "lane_costs": [c.time for c in self.costs.lanes],
            "lane_memory_bytes": [c.memory_bytes for c in self.costs.lanes],
            "lane_details": [c.to_dict() for c in self.costs.lanes],
            "head": {"device": HEAD_DEVICE, **self.costs.head.to_dict()},
            "devices": [d.to_dict() for d in self.per_device],
            "assignment": list(self.placement.assignment),
            "makespan": self.makespan,
            "ideal_makespan": self.ideal,
            "imbalance": self.imbalance,
            "step_time": self.step_time,
            "lane_inference_times": [c.inference_time for c in self.costs.lanes],
            "inference_batch_size": INFERENCE_BATCH_SIZE,
            "inference_makespan": self.inference_makespan,
            "inference_latency": self.inference_latency,
            "params": self.costs.params,
            "train_flops": self.costs.train_flops,
            "peak_memory_bytes": self.peak_memory_bytes,
            "placement": self.placement.to_dict(),
            "comparison": self.comparison,
        }


def imbalance(makespan: float, ideal: float) -> float:
    """``makespan / ideal - 1`` (0 when there is no load at all)."""
    # Clamped: rounding can put a perfectly balanced makespan a hair below ideal.
    return max(makespan / ideal - 1.0, 0.0) if ideal > 0 else 0.0


def placement_problem(costs: ModelCost, devices: Sequence[DeviceSpec]) -> PlacementProblem:
    """The placement problem of ``costs`` on ``devices``, the head's memory reserved."""
    capacities = [d.memory_bytes for d in devices]
    capacities[HEAD_DEVICE] -= costs.head.memory_bytes
    return PlacementProblem(
        costs=tuple(c.time for c in costs.lanes),
        memory=tuple(c.memory_bytes for c in costs.lanes),
        speeds=tuple(d.speed for d in devices),
        capacities=tuple(capacities),
        lane_names=tuple(str(c.lane) for c in costs.lanes),
        device_names=tuple(d.name for d in devices),
    )


def device_type(device: DeviceSpec) -> str:
    """``cpu`` for the catalog's cpu, else ``cuda`` (which lanes fuse there)."""
    return "cpu" if device.kind == "cpu" else "cuda"


def device_plans(
    problem: PlacementProblem,
    placement: Placement,
    costs: ModelCost,
    devices: Sequence[DeviceSpec],
    model: CostModel | None = None,
    ctx: CostContext | None = None,
) -> tuple[DevicePlan, ...]:
    loads = problem.loads(placement.assignment)
    if model is not None and ctx is not None:  # what the device's lanes cost together
        loads = [
            model.lanes_time(
                [costs.lanes[i].lane for i in placement.lanes_on(j)], ctx, device_type(d)
            )
            for j, d in enumerate(devices)
        ]
    memory = problem.memory_used(placement.assignment)
    memory[HEAD_DEVICE] += costs.head.memory_bytes
    inference = [0.0] * len(devices)
    for lane, j in enumerate(placement.assignment):
        inference[j] += costs.lanes[lane].inference_time
    return tuple(
        DevicePlan(
            device=d,
            lanes=tuple(placement.lanes_on(j)),
            load=loads[j],
            time=loads[j] / d.speed,
            memory_bytes=memory[j],
            head=j == HEAD_DEVICE,
            inference_time=inference[j] / d.speed,
        )
        for j, d in enumerate(devices)
    )


def compare_strategies(
    problem: PlacementProblem,
    skip: str,
    *,
    seed: int = 0,
    time_limit: float | None = None,
    random_draws: int = RANDOM_DRAWS,
    makespan: Callable[[Sequence[int]], float] | None = None,
) -> dict[str, dict[str, Any]]:
    """The makespan every other registered strategy reaches on ``problem``, each
    placement's measured by ``makespan`` (default: the problem's, summed lane costs;
    a plan passes its cost model's devices' times, so that the figures compare with
    its own makespan)."""
    span = makespan or problem.makespan
    out: dict[str, dict[str, Any]] = {}
    for name in PLACERS.names():
        if name == skip:
            continue
        placer = get_placer(name, time_limit=time_limit)
        if placer.randomised:
            spans = [
                span(placer.place(problem, seed=seed + k).assignment) for k in range(random_draws)
            ]
            out[name] = {"makespan": statistics.fmean(spans), "draws": random_draws}
        else:
            result = placer.place(problem, seed=seed)
            out[name] = {
                "makespan": span(result.assignment),
                "optimal": result.optimal,
                "lower_bound": result.lower_bound,
            }
    return out


def plan_model(
    spec: MLCNSpec,
    devices: Sequence[DeviceSpec],
    *,
    cost_model: CostModel | str = "analytic",
    strategy: str = "greedy",
    batch_size: int = 100,
    seed: int = 0,
    time_limit: float | None = None,
    compare: bool = False,
    assignment: Sequence[int] | None = None,
    over_memory: bool = False,
) -> Plan:
    """Places ``spec``'s lanes on ``devices`` and predicts per-device time and memory.

    Args:
        spec: The model.
        devices: Target devices (device 0 also runs the head).
        cost_model: A cost model or its registered name.
        strategy: A registered placement strategy.
        batch_size: Training batch size.
        seed: Seed of randomised strategies.
        time_limit: Time limit of searching strategies (``optimal``).
        compare: Also run every other strategy (``random`` as a mean of seeded draws).
        assignment: A placement made elsewhere (a bucket-filling search space);
            ``strategy`` then only names it. It is checked against memory.
        over_memory: ``assignment`` may hold more than the devices' memory (a model
            that does not fit, planned to record its overflow): not checked.

    Raises:
        PlacementError: A lane fits on no device (the message names it and the
            largest free memory).
        UnknownNameError: Unknown strategy or cost model.
    """
    model = get_cost_model(cost_model) if isinstance(cost_model, str) else cost_model
    devices = tuple(devices)
    ctx = CostContext.of(spec, batch_size)
    costs = model.costs(spec.lanes, ctx)
    problem = placement_problem(costs, devices)
    if assignment is not None:
        if not over_memory:
            problem.check(assignment)
        placement = Placement(tuple(assignment), problem.makespan(assignment), strategy)
    else:
        placement = get_placer(strategy, time_limit=time_limit).place(problem, seed=seed)
    comparison = {}
    if compare:

        def device_makespan(assignment: Sequence[int]) -> float:
            return max(
                model.lanes_time(
                    [costs.lanes[i].lane for i, a in enumerate(assignment) if a == j],
                    ctx,
                    device_type(d),
                )
                / d.speed
                for j, d in enumerate(devices)
            )

        comparison = compare_strategies(
            problem, strategy, seed=seed, time_limit=time_limit, makespan=device_makespan
        )
    return Plan(
        spec=spec,
        devices=devices,
        cost_model=model.name,
        time_unit=model.time_unit,
        batch_size=batch_size,
        costs=costs,
        placement=placement,
        per_device=device_plans(problem, placement, costs, devices, model, ctx),
        comparison=comparison,
    )
