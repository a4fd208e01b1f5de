"""Which lanes of a model run fused (pure Python: the torch model and the cost
model both follow it).

Lanes of one kind (the same :class:`LaneSpec`; routing and weight sharing are the
model's) run as one computation on a device (:mod:`nasmlcn.models._fused`). On a
GPU every kind fuses: one launch per group and layer instead of one per lane. On a
CPU only narrow kinds do, as measured one thread at batch 100, fused against lane by
lane (measured figures: docs/results.md):

- 8 channels (mlcn2 width 1) at any depth: fusing widens thin matrix products;
- 16 channels without 3x3 layers (depth 1);
- at batches of at most ``CPU_FUSE_ALL_BATCH`` images (inference) every kind;
- not 16 channels with 3x3 layers at training batches (oneDNN's grouped 3x3
  convolution and its backward are slower than the lanes' own), nor wider lanes (a
  lane of 32 channels already runs near the machine's matrix-product rate, and the
  fused maps fall out of the caches).
"""

from __future__ import annotations

from collections.abc import Sequence

from nasmlcn.specs._lane import LaneSpec

CPU_MAX_LANE_CHANNELS = 16
"""On a CPU, kinds whose widest layer has more channels run lane by lane."""

CPU_MAX_DEEP_LANE_CHANNELS = 8
"""On a CPU, kinds with small (3x3) convolutions fuse only up to this width."""

CPU_FUSE_ALL_BATCH = 4
"""On a CPU, every kind fuses at batches of at most this many images: with a few
images a step is dispatch, not arithmetic (forward at batch 1, one thread: fused
1.1-2.9x faster for every kind measured, ``36*mlcn2:2x2`` 14.2 -> 5.3 ms,
``20*mlcn1:2x1`` 6.6 -> 4.5; at batch 8 the 32-channel kinds already lose,
``20*mlcn1:2x1`` 18.0 -> 20.4 ms)."""


def lane_channels(lane: LaneSpec, input_shape: tuple[int, int, int]) -> int:
    """The channels of the lane's widest layer."""
    return max(conv.out_channels for conv in lane.layout(input_shape).convs)


def lane_fuses(
    lane: LaneSpec,
    input_shape: tuple[int, int, int],
    device_type: str,
    batch_size: int | None = None,
) -> bool:
    """Whether lanes of ``lane``'s kind run fused on a device of ``device_type``
    (``cpu``, ``cuda``) at ``batch_size`` images (see the module docstring)."""
    if device_type != "cpu" or (batch_size is not None and batch_size <= CPU_FUSE_ALL_BATCH):
        return True
    convs = lane.layout(input_shape).convs
    small = any(1 < conv.kernel < 5 for conv in convs)
    width = max(conv.out_channels for conv in convs)
    return width <= (CPU_MAX_DEEP_LANE_CHANNELS if small else CPU_MAX_LANE_CHANNELS)


def execution_groups(
    lanes: Sequence[LaneSpec],
    input_shape: tuple[int, int, int],
    device_type: str,
    *,
    batch_size: int | None = None,
    fuse: bool = True,
) -> list[list[int]]:
    """The lanes (indices) as one device runs them at ``batch_size`` images: each list
    is one fused group or one lane alone, in order of first appearance."""
    if not fuse:
        return [[i] for i in range(len(lanes))]
    kinds: dict[LaneSpec, list[int]] = {}
    for i, lane in enumerate(lanes):
        kinds.setdefault(lane, []).append(i)
    groups: list[list[int]] = []
    for lane, members in kinds.items():
        if lane_fuses(lane, input_shape, device_type, batch_size):
            groups.append(members)
        else:
            groups.extend([i] for i in members)
    return groups
