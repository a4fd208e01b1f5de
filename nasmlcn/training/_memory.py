"""Refusing a model that cannot train in this machine's memory, before it is built.

Building ``mlcn1:10000x1`` asks the allocator for terabytes; the error that comes
back names neither the lane nor the limit. The analytic cost model knows every
lane's training memory (weights, gradients, Adam state, activations), so the
check compares what each local device would hold with what it has free, and says
which lane is too large.

Workers that share a GPU (``nasmlcn search --workers-per-gpu K``) each get 1/K of
its memory: a trial's model must fit that share (and what is free now), so that K
workers' models fit the GPU together.
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
    shared_by: int = 1,
) -> None:
    """Raises when ``spec`` would not fit the free memory of the devices it trains on.

    Args:
        spec: The model (CapsNet baselines are not checked: the cost model covers lanes).
        batch_size: Training batch size.
        device: Where the model trains; with ``lane_devices``, where the head runs.
        lane_devices: The local device of every lane (lane-parallel training).
        shared_by: Workers training on each GPU at once, this one included: on a
            GPU the model must also fit ``1/shared_by`` of the GPU's total memory.

    Raises:
        TrainingError: The predicted training memory on a device exceeds what it has
            available (or this worker's share of a shared GPU), naming the lane (or
            the model) and both sizes.
    """
    if not isinstance(spec, MLCNSpec):
        return
    if shared_by < 1:
        raise ValueError(f"shared_by must be >= 1, got {shared_by}")
    from nasmlcn.costs import get_cost_model
    from nasmlcn.hardware import available_memory, format_bytes

    cost = get_cost_model("analytic").model_cost(spec, batch_size)
    device = _indexed(device)
    places = (
        tuple(_indexed(d) for d in lane_devices)
        if lane_devices is not None
        else (device,) * spec.num_lanes
    )
    need: dict[str, int] = {device: cost.head.memory_bytes}
    for where, lane in zip(places, cost.lanes, strict=True):
        need[where] = need.get(where, 0) + lane.memory_bytes
    for where, total in need.items():
        shared = shared_by > 1 and where.startswith("cuda")
        others = f"{shared_by - 1} other worker{'s' if shared_by > 2 else ''}"
        hint = "use fewer or narrower lanes or a smaller --batch-size"
        size = _total_memory(where) if shared else None
        if size is not None and total > size // shared_by:
            limit = size // shared_by
            machine = (
                f"this worker may use 1/{shared_by} of {where}'s {format_bytes(size)} "
                f"({format_bytes(limit)}), shared with {others}"
            )
            hint = "use fewer or narrower lanes, a smaller --batch-size or fewer --workers-per-gpu"
        else:
            free = available_memory(where)
            if free is None or total <= free:
                continue
            limit = free
            machine = f"this machine ({where}) has {format_bytes(free)} available" + (
                f" (shared with {others})" if shared else ""
            )
        on_here = [i for i, p in enumerate(places) if p == where]
        if not on_here:  # only the head: cannot happen for a real model, but say so
            raise TrainingError(
                f"the class capsules of {spec.describe()} need about {format_bytes(total)} to "
                f"train at batch {batch_size}; {machine}"
            )
        largest = max(on_here, key=lambda i: cost.lanes[i].memory_bytes)
        lane = cost.lanes[largest]
        if lane.memory_bytes > limit:
            what = f"lane {largest + 1} ({lane.lane}) needs about {format_bytes(lane.memory_bytes)}"
        else:
            what = (
                f"the {len(on_here)} lanes on {where} need about {format_bytes(total)} "
                f"(the largest, lane {largest + 1} ({lane.lane}), about "
                f"{format_bytes(lane.memory_bytes)})"
            )
        raise TrainingError(f"{what} to train at batch {batch_size}; {machine}; {hint}")


def _indexed(device: str) -> str:
    """``cuda`` (torch's current GPU, the first in a fresh process) as ``cuda:0``, so
    that one GPU has one name in the check and in its messages."""
    return "cuda:0" if device == "cuda" else device


def _total_memory(device: str) -> int | None:
    """Total memory of local GPU ``device`` (``cuda:N``), or None if it is not found."""
    from nasmlcn.hardware import detect_devices

    return next((d.memory_bytes for d in detect_devices() if d.name == device), None)
