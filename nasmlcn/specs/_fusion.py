"""Which lanes of a model run fused (pure Python: the torch model and the cost
model both follow it).

Lanes of one kind (the same :class:`LaneSpec`; routing and weight sharing are the
model's) run as one computation on a device (:mod:`nasmlcn.models._fused`). On a
CPU only narrow kinds fuse: there a lane of 32 channels already runs near the
machine's matrix-product rate on its own, and fusing 20 of them makes feature
maps 20 times larger that fall out of the caches (``benchmarks/fused_lanes.py``:
``20*mlcn1:2x1`` 602 ms a step lane by lane, 710 fused, one thread), while lanes
of 8-16 channels are thin matrix products that fusing widens (``64*mlcn2:1x1``
575 -> 361 ms). On a GPU every kind fuses.
"""

from __future__ import annotations

from collections.abc import Sequence

from nasmlcn.specs._lane import LaneSpec

CPU_MAX_LANE_CHANNELS = 16
"""On a CPU, only kinds whose lanes are at most this wide (widest layer) fuse."""


def lane_channels(lane: LaneSpec, input_shape: tuple[int, int, int]) -> int:
    """The channels of the lane's widest layer."""
    return max(conv.out_channels for conv in lane.layout(input_shape).convs)


def max_lane_channels(device_type: str) -> int | None:
    """How wide a fused lane may be on a device of ``device_type`` (None: any width)."""
    return CPU_MAX_LANE_CHANNELS if device_type == "cpu" else None


def execution_groups(
    lanes: Sequence[LaneSpec],
    input_shape: tuple[int, int, int],
    device_type: str,
    *,
    fuse: bool = True,
) -> list[list[int]]:
    """The lanes (indices) as one device runs them: each list is one fused group or
    one lane alone, in order of first appearance."""
    if not fuse:
        return [[i] for i in range(len(lanes))]
    kinds: dict[LaneSpec, list[int]] = {}
    for i, lane in enumerate(lanes):
        kinds.setdefault(lane, []).append(i)
    limit = max_lane_channels(device_type)
    groups: list[list[int]] = []
    for lane, members in kinds.items():
        if limit is not None and lane_channels(lane, input_shape) > limit:
            groups.extend([i] for i in members)
        else:
            groups.append(members)
    return groups
