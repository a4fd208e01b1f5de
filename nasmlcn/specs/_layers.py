"""Layer shapes of a lane, in pure Python.

The torch model (:mod:`nasmlcn.models`) and the analytic cost model both read a
lane's layers from here, so the two can never disagree about shapes.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ConvSpec:
    """One 2-D convolution of a lane.

    Attributes:
        in_channels: Input channels.
        out_channels: Output channels (filters).
        kernel: Square kernel size.
        stride: Stride in both directions.
        padding: Zero padding on each side.
        relu: Whether a ReLU follows the convolution.
    """

    in_channels: int
    out_channels: int
    kernel: int
    stride: int = 1
    padding: int = 0
    relu: bool = True

    def output_size(self, size: int) -> int:
        """Spatial output size for a square input of side ``size``."""
        return (size + 2 * self.padding - self.kernel) // self.stride + 1


@dataclass(frozen=True)
class LaneLayout:
    """The concrete layers of one lane for one input shape.

    Attributes:
        convs: The convolutions in order; the last one produces the primary capsules.
        feature_shapes: ``(C, H, W)`` after each convolution.
        capsule_dim: Dimension of the primary capsules.
        num_primary: Number of primary capsules the lane produces.
    """

    convs: tuple[ConvSpec, ...]
    feature_shapes: tuple[tuple[int, int, int], ...]
    capsule_dim: int
    num_primary: int


def can_fold(first: ConvSpec, second: ConvSpec) -> bool:
    """Whether ``first`` (a linear 1x1 convolution) folds into ``second``.

    A 1x1 convolution with no activation followed by an unpadded convolution is
    one convolution whose kernel is their product; computing that one reads
    ``first.in_channels`` channels instead of ``first.out_channels``. It pays
    when the 1x1 layer widens its input, as mlcn2's does on 1- or 3-channel
    images. (With padding the fold would be wrong at the borders, where the 1x1
    layer's output is its bias, not zero.)
    """
    return (
        first.kernel == 1
        and first.stride == 1
        and first.padding == 0
        and not first.relu
        and second.padding == 0
        and first.in_channels < first.out_channels
    )


def executed_convs(convs: tuple[ConvSpec, ...] | list[ConvSpec]) -> list[ConvSpec]:
    """The convolutions as computed, after folding (see :func:`can_fold`).

    Parameters are those of ``convs``; the arithmetic is that of this list (plus
    the small kernel products of each fold).
    """
    out: list[ConvSpec] = []
    i = 0
    while i < len(convs):
        if i + 1 < len(convs) and can_fold(convs[i], convs[i + 1]):
            second = convs[i + 1]
            out.append(
                ConvSpec(
                    convs[i].in_channels,
                    second.out_channels,
                    second.kernel,
                    second.stride,
                    0,
                    second.relu,
                )
            )
            i += 2
        else:
            out.append(convs[i])
            i += 1
    return out
