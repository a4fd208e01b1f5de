"""Layer shapes of a lane, in pure Python.

The torch model (:mod:`nasmlcn.models`) and the analytic cost model both read a
lane's layers from here, so the two can never disagree about shapes.
"""

from __future__ import annotations

from dataclasses import dataclass

from nasmlcn.errors import SpecError


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
        groups: Channel groups, as in ``nn.Conv2d``: each output channel reads
            ``in_channels // groups`` input channels. ``groups == in_channels ==
            out_channels`` is a depthwise convolution (the first half of a
            separable one).
        bias: Whether the convolution adds a bias (a separable convolution's
            depthwise half has none).
    """

    in_channels: int
    out_channels: int
    kernel: int
    stride: int = 1
    padding: int = 0
    relu: bool = True
    groups: int = 1
    bias: bool = True

    def __post_init__(self) -> None:
        if self.groups < 1 or self.in_channels % self.groups or self.out_channels % self.groups:
            raise SpecError(
                f"ConvSpec.groups {self.groups} must divide in_channels {self.in_channels} "
                f"and out_channels {self.out_channels}"
            )

    def output_size(self, size: int) -> int:
        """Spatial output size for a square input of side ``size``."""
        return (size + 2 * self.padding - self.kernel) // self.stride + 1

    @property
    def weights(self) -> int:
        """Kernel weights: each output channel has a ``k x k`` kernel per channel
        of its group. Also the multiply-adds per output position."""
        return self.out_channels * (self.in_channels // self.groups) * self.kernel**2

    @property
    def params(self) -> int:
        """Trainable parameters: kernel weights and biases."""
        return self.weights + (self.out_channels if self.bias else 0)


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

    Only plain layers fold: the kernel product of
    :class:`~nasmlcn.models._conv.FoldedConv2d` is that of two dense (ungrouped)
    kernels, and its folded bias is built from both layers' biases. (A 1x1 layer
    before a depthwise one, as in mlcn2-ref, would fold into a dense convolution
    too, with a different product; it would save only the small 1x1 layer, as the
    folded layer does the depthwise layer's arithmetic.)
    """
    return (
        first.kernel == 1
        and first.stride == 1
        and first.padding == 0
        and not first.relu
        and second.padding == 0
        and first.in_channels < first.out_channels
        and first.groups == second.groups == 1
        and first.bias
        and second.bias
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
