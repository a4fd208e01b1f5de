"""Lane types: how a lane of a given width and depth turns an image into capsules.

Five types, from two sources that disagree: the thesis text (Rosario 2021,
sec. 4.2) and the public reference code it cites (lanes-capsnet, Keras,
``capsnet.py``). ``w`` is the lane width; capsule counts are for 28x28 input.

From the thesis text (8-D primary capsules, 9x9 kernels):

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
* ``mlcn2-72`` — mlcn2 with the capsule count the text states: the same layers,
  but the 9x9 stride-2 capsule convolution has ``16*width`` filters (6x6 x
  ``2*width`` = ``72*width`` capsules), at the cost of the last-layer filter count
  the text lists. Between them, ``mlcn2`` and ``mlcn2-72`` cover both readings of
  the text; the name says which number this one keeps.

From the reference code (16-D primary capsules from a 6x6 stride-2 convolution
with ``32*width`` filters, i.e. ``2*width`` capsule channels; Keras's
``PrimaryCap(dim_capsule=16, n_channels=2*width, kernel_size=6, strides=2)``):

* ``mlcn1-ref`` — conv 9x9 stride 1 with ``16*width`` filters and ReLU, then the
  capsule convolution: 8x8 x ``2*width`` = ``128*width`` capsules.
* ``mlcn2-ref`` — a linear 1x1 convolution with ``16*width`` filters; a separable
  6x6 convolution (Keras ``SeparableConv2D``: a depthwise 6x6 convolution, one
  filter per channel and no bias, then a 1x1 convolution with ``16*width``
  filters and a bias) with ReLU; three 3x3 "same" convolutions with ``16*width``
  filters and ReLU; then the capsule convolution: 9x9 x ``2*width`` =
  ``162*width`` capsules.

The reference code has no depth. Depth: a lane of depth ``d`` inserts ``d - 1``
extra 3x3 "same" convolutions (with ReLU, as many filters as the layer before)
at full resolution: after the first 9x9 convolution for ``mlcn1``, ``mlcn2``,
``mlcn2-72`` and ``mlcn1-ref``; after the three 3x3 ones for ``mlcn2-ref``,
which so has ``d + 2`` of them (depth 1 is the reference lane). This keeps the
trend the thesis measured: cost grows about linearly in depth and
quadratically in width.

``mlcn1`` and ``mlcn2`` are what the thesis's cost and memory equations describe,
and the only types the built-in search spaces draw from (``lane_types`` in a
space file names the others); the ``-72`` and ``-ref`` types exist to measure the
other readings against the thesis's accuracies.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from nasmlcn.registry import Registry
from nasmlcn.specs._layers import ConvSpec

CAPSULE_DIM = 8
"""Primary capsule dimension of the thesis text's lanes (as in CapsNet)."""

REFERENCE_CAPSULE_DIM = 16
"""Primary capsule dimension of the reference code's lanes."""


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


def _mlcn2_72(width: int, depth: int, in_channels: int) -> list[ConvSpec]:
    layers = _mlcn2(width, depth, in_channels)
    layers[-1] = ConvSpec(8 * width, 16 * width, kernel=9, stride=2, relu=False)
    return layers


def _reference_capsules(width: int) -> ConvSpec:
    """The reference code's PrimaryCap convolution: 2w channels of 16-D capsules."""
    c = 16 * width
    return ConvSpec(c, 2 * width * REFERENCE_CAPSULE_DIM, kernel=6, stride=2, relu=False)


def _mlcn1_ref(width: int, depth: int, in_channels: int) -> list[ConvSpec]:
    c = 16 * width
    layers = [ConvSpec(in_channels, c, kernel=9, stride=1)]
    layers += [ConvSpec(c, c, kernel=3, stride=1, padding=1) for _ in range(depth - 1)]
    layers.append(_reference_capsules(width))
    return layers


def _mlcn2_ref(width: int, depth: int, in_channels: int) -> list[ConvSpec]:
    c = 16 * width
    layers = [
        ConvSpec(in_channels, c, kernel=1, stride=1, relu=False),
        # SeparableConv2D(c, 6, relu): depthwise 6x6 (no bias), then pointwise with bias
        ConvSpec(c, c, kernel=6, stride=1, relu=False, groups=c, bias=False),
        ConvSpec(c, c, kernel=1, stride=1),
    ]
    layers += [ConvSpec(c, c, kernel=3, stride=1, padding=1) for _ in range(depth + 2)]
    layers.append(_reference_capsules(width))
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
LANE_TYPES.register(
    "mlcn2-72",
    LaneType(
        "mlcn2-72",
        _mlcn2_72,
        CAPSULE_DIM,
        "1x1(4w) -> conv9x9(8w) -> caps conv9x9/2(16w); 72w caps on 28x28",
    ),
)
LANE_TYPES.register(
    "mlcn1-ref",
    LaneType(
        "mlcn1-ref",
        _mlcn1_ref,
        REFERENCE_CAPSULE_DIM,
        "conv9x9(16w) -> caps conv6x6/2(32w), 16-D; 128w caps on 28x28",
    ),
)
LANE_TYPES.register(
    "mlcn2-ref",
    LaneType(
        "mlcn2-ref",
        _mlcn2_ref,
        REFERENCE_CAPSULE_DIM,
        "1x1(16w) -> sep6x6(16w) -> 3x conv3x3(16w) -> caps conv6x6/2(32w), 16-D;"
        " 162w caps on 28x28",
    ),
)
