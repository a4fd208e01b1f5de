"""Which rank trains which lanes (pure Python): the placement of a model's lanes on
target devices, and the lanes of target device ``j`` on rank ``j mod ranks``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from nasmlcn.hardware import DeviceSpec
    from nasmlcn.specs import MLCNSpec

PARALLELISMS = ("lanes", "data")
"""``lanes``: each rank owns some lanes (model parallelism); ``data``: DDP."""


def rank_assignment(target_assignment: Sequence[int], world_size: int) -> tuple[int, ...]:
    """Lane -> rank: the lanes of target device ``j`` go to rank ``j mod world_size``."""
    return tuple(int(j) % world_size for j in target_assignment)


def plan_assignment(
    spec: MLCNSpec,
    devices: str | Sequence[DeviceSpec] | None,
    *,
    strategy: str = "greedy",
    processes: int = 1,
    batch_size: int = 100,
    seed: int = 0,
) -> tuple[tuple[int, ...], tuple[Any, ...]]:
    """Lane -> target device index, and the target devices.

    Args:
        spec: The model.
        devices: Target devices (``2xH100``, ``1xK80,1xV100``, or parsed:
            ``parse_devices(text, catalog=load_catalog(device_file))``); None:
            ``processes`` CPUs (a homogeneous pool, so the placement only balances lane
            costs).
        strategy: A registered placement strategy (``greedy``, ``random``, ``optimal``).
        processes: Used when ``devices`` is None.
        batch_size: Batch size the lane costs are predicted for.
        seed: Seed of the ``random`` strategy.

    Raises:
        DeviceError, PlacementError, UnknownNameError: Bad devices or strategy, or a
            lane that fits no device.
    """
    from nasmlcn.hardware import parse_devices
    from nasmlcn.planning import plan_model

    if isinstance(devices, str) and devices:
        targets = parse_devices(devices)
    elif devices:  # parsed already (with a device file's kinds)
        targets = tuple(devices)
    else:
        targets = parse_devices(f"{processes}xcpu")
    plan = plan_model(spec, targets, strategy=strategy, batch_size=batch_size, seed=seed)
    return tuple(plan.placement.assignment), targets
