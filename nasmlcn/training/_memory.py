"""Refusing a model that cannot train in this machine's memory, before it is built.

Building ``mlcn1:10000x1`` asks the allocator for terabytes; the error that comes
back names neither the lane nor the limit. The analytic cost model knows every
lane's training memory (weights, gradients, Adam state, activations), so the
check compares what each local device would hold with what it has free, and says
which lane is too large.
"""

from __future__ import annotations

from collections.abc import Sequence

from nasmlcn.errors import TrainingError
from nasmlcn.specs import ArchSpec, MLCNSpec


def check_training_memory(
    spec: ArchSpec,
    batch_size: int,
    device: str,
    *,
    lane_devices: Sequence[str] | None = None,
) -> None:
    """Raises when ``spec`` would not fit the free memory of the devices it trains on.

    Args:
        spec: The model (CapsNet baselines are not checked: the cost model covers lanes).
        batch_size: Training batch size.
        device: Where the model trains; with ``lane_devices``, where the head runs.
        lane_devices: The local device of every lane (lane-parallel training).

    Raises:
        TrainingError: The predicted training memory on a device exceeds what it has
            available, naming the lane (or the model) and both sizes.
    """
    if not isinstance(spec, MLCNSpec):
        return
    from nasmlcn.costs import get_cost_model
    from nasmlcn.hardware import available_memory, format_bytes

    cost = get_cost_model("analytic").model_cost(spec, batch_size)
    places = tuple(lane_devices) if lane_devices is not None else (device,) * spec.num_lanes
    need: dict[str, int] = {device: cost.head.memory_bytes}
    for where, lane in zip(places, cost.lanes, strict=True):
        need[where] = need.get(where, 0) + lane.memory_bytes
    for where, total in need.items():
        free = available_memory(where)
        if free is None or total <= free:
            continue
        on_here = [i for i, p in enumerate(places) if p == where]
        machine = f"this machine ({where}) has {format_bytes(free)} available"
        hint = "use fewer or narrower lanes or a smaller --batch-size"
        if not on_here:  # only the head: cannot happen for a real model, but say so
            raise TrainingError(
                f"the class capsules of {spec.describe()} need about {format_bytes(total)} to "
                f"train at batch {batch_size}; {machine}"
            )
        largest = max(on_here, key=lambda i: cost.lanes[i].memory_bytes)
        lane = cost.lanes[largest]
        if lane.memory_bytes > free:
            what = f"lane {largest + 1} ({lane.lane}) needs about {format_bytes(lane.memory_bytes)}"
        else:
            what = (
                f"the {len(on_here)} lanes on {where} need about {format_bytes(total)} "
                f"(the largest, lane {largest + 1} ({lane.lane}), about "
                f"{format_bytes(lane.memory_bytes)})"
            )
        raise TrainingError(f"{what} to train at batch {batch_size}; {machine}; {hint}")
