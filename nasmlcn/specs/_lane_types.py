"""Lane types: how a lane of a given width and depth turns an image into capsules.

Two types come from the thesis (sec. 4.2); both produce 8-D primary capsules.

* ``mlcn1`` — the CapsNet recipe scaled by ``width``: conv 9x9 stride 1 with
  ``16*width`` filters and ReLU, then a 9x9 stride-2 convolution with ``16*width``
  filters whose output is cut into 8-D capsules (consecutive channels at one
  position form a capsule, as in CapsNet). On 28x28 input that is 6x6 positions x
  ``2*width`` capsule channels = ``72*width`` capsules, as the thesis says.
* ``mlcn2`` — a 1x1 (pointwise) convolution with ``4*width`` filters, conv 9x9
  stride 1 with ``8*width`` filters and ReLU, then the 9x9 stride-2 capsule
  convolution with ``8*width`` filters. The thesis text says ``8*width`` filters
  *and* ``72*width`` capsules, which cannot both hold for 8-D capsules on a 6x6
  grid; we keep the filter counts, so an mlcn2 lane makes ``36*width`` capsules.

Depth: a lane of depth ``d`` inserts ``d - 1`` extra 3x3 "same" convolutions (with
ReLU, as many filters as the layer before) after the first 9x9 convolution, at full
resolution. This keeps the trend the thesis measured: cost grows about linearly in
depth and quadratically in width.

The public reference code (lanes-capsnet, Keras) differs from the thesis text: it
uses 16-D primary capsules from a 6x6 stride-2 convolution and, for type 2, a
separable 6x6 convolution followed by three 3x3 ones. We follow the text, which is
what the thesis's cost and memory equations describe.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from nasmlcn.registry import Registry
from nasmlcn.specs._layers import ConvSpec

CAPSULE_DIM = 8


@dataclass(frozen=True)
class LaneType:
    """A lane type.

    Attributes:
        name: The name used in the lane syntax (``mlcn1``).
        convs: ``convs(width, depth, in_channels)`` returns the convolutions in
            order; the last one's channels are cut into ``capsule_dim``-D capsules.
        capsule_dim: Dimension of the primary capsules.
        description: One line for listings.
    """

    name: str
    convs: Callable[[int, int, int], list[ConvSpec]]
    capsule_dim: int
    description: str


LANE_TYPES: Registry[LaneType] = Registry("lane type")


def _mlcn1(width: int, depth: int, in_channels: int) -> list[ConvSpec]:
    c = 16 * width
    layers = [ConvSpec(in_channels, c, kernel=9, stride=1)]
    layers += [ConvSpec(c, c, kernel=3, stride=1, padding=1) for _ in range(depth - 1)]
    layers.append(ConvSpec(c, c, kernel=9, stride=2, relu=False))
    return layers


def _mlcn2(width: int, depth: int, in_channels: int) -> list[ConvSpec]:
    c = 8 * width
    layers = [
        ConvSpec(in_channels, 4 * width, kernel=1, stride=1, relu=False),
        ConvSpec(4 * width, c, kernel=9, stride=1),
    ]
    layers += [ConvSpec(c, c, kernel=3, stride=1, padding=1) for _ in range(depth - 1)]
    layers.append(ConvSpec(c, c, kernel=9, stride=2, relu=False))
    return layers


LANE_TYPES.register(
    "mlcn1",
    LaneType(
        "mlcn1", _mlcn1, CAPSULE_DIM, "conv9x9(16w) -> caps conv9x9/2(16w); 72w caps on 28x28"
    ),
)
LANE_TYPES.register(
    "mlcn2",
    LaneType(
        "mlcn2",
        _mlcn2,
        CAPSULE_DIM,
        "1x1(4w) -> conv9x9(8w) -> caps conv9x9/2(8w); 36w caps on 28x28",
    ),
)
