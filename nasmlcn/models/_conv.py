"""Convolution modules built from :class:`~nasmlcn.specs.ConvSpec`.

All feature maps are kept in channels-last memory order: oneDNN's convolutions
are faster on it on CPUs (1.5x for the 9x9 layers of an mlcn1 lane, measured),
and cuDNN prefers it too.
"""

from __future__ import annotations

import functools
import math

import torch
import torch.nn.functional as F
from torch import nn

from nasmlcn.specs import ConvSpec, can_fold


class PointwiseConv2d(nn.Conv2d):
    """A 1x1 convolution computed as a matrix product over channels.

    Same parameters as ``nn.Conv2d(c_in, c_out, 1, bias=bias)``, so checkpoints and FLOP
    counts are unchanged; on channels-last input the product needs no copy, and it
    is 6x faster than oneDNN's 1x1 convolution for mlcn2's first layer on a
    1-channel image.
    """

    def __init__(self, in_channels: int, out_channels: int, bias: bool = True) -> None:
        super().__init__(in_channels, out_channels, kernel_size=1, bias=bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        w = self.weight.view(self.out_channels, self.in_channels)
        y = F.linear(x.permute(0, 2, 3, 1), w, self.bias)  # (B, H, W, C_out)
        return y.permute(0, 3, 1, 2)  # (B, C_out, H, W), channels-last in memory


class FoldedConv2d(nn.Module):
    """A linear 1x1 convolution followed by an unpadded convolution, computed as one.

    ``conv(pointwise(x))`` equals one convolution with kernel
    ``W[o, c] = sum_m W2[o, m] W1[m, c]`` and bias ``b2 + sum_m W2[o, m] b1[m]``
    (summed over the kernel window); the parameters stay those of the two layers,
    and autograd carries the gradients back through the kernel product. For
    mlcn2 on a 1-channel image this makes the 9x9 convolution read 1 channel
    instead of ``4*width`` (2.6x faster training for ``2*mlcn2:4x1``, measured).
    """

    def __init__(self, first: ConvSpec, second: ConvSpec) -> None:
        super().__init__()
        if not can_fold(first, second):
            raise ValueError(f"{first} does not fold into {second}")
        self.pointwise = PointwiseConv2d(first.in_channels, first.out_channels)
        self.conv = nn.Conv2d(first.out_channels, second.out_channels, second.kernel, second.stride)

    def kernel(self) -> tuple[torch.Tensor, torch.Tensor]:
        """The one kernel ``(O, C, k, k)`` and bias ``(O,)`` the two layers make."""
        assert self.pointwise.bias is not None
        assert self.conv.bias is not None
        w1, b1 = self.pointwise.weight.flatten(1), self.pointwise.bias  # (M, C), (M,)
        weight, bias = fold_kernels(
            w1.unsqueeze(0),
            b1.unsqueeze(0),
            self.conv.weight.unsqueeze(0),
            self.conv.bias.unsqueeze(0),
        )
        return weight[0], bias[0]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        weight, bias = self.kernel()
        return F.conv2d(x, weight, bias, stride=self.conv.stride)


def fold_kernels(
    w1: torch.Tensor, b1: torch.Tensor, w2: torch.Tensor, b2: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """The folded kernels of ``G`` stacked layer pairs: ``(G, O, C, k, k)`` and bias
    ``(G, O)`` from ``W1 (G, M, C)``, ``b1 (G, M)``, ``W2 (G, O, M, k, k)``, ``b2 (G, O)``
    (a lane stack's: one batched product for the stack, whatever ``G`` is)."""
    # (G, O, C, k, k) laid out as (G, O, k, k, C), as a lane stack keeps its kernels
    weight = torch.einsum("gomhw,gmc->gohwc", w2, w1).permute(0, 1, 4, 2, 3)
    bias = b2 + torch.einsum("gomhw,gm->go", w2, b1)  # (G, O)
    return weight, bias


def conv_layers(convs: tuple[ConvSpec, ...] | list[ConvSpec]) -> nn.Sequential:
    """The torch layers of ``convs`` (with their ReLUs), folding where it pays."""
    layers: list[nn.Module] = []
    i = 0
    while i < len(convs):
        conv = convs[i]
        if i + 1 < len(convs) and can_fold(conv, convs[i + 1]):
            conv = convs[i + 1]
            layers.append(FoldedConv2d(convs[i], conv))
            i += 2
        else:
            if conv.kernel == 1 and conv.stride == 1 and conv.padding == 0 and conv.groups == 1:
                layers.append(PointwiseConv2d(conv.in_channels, conv.out_channels, conv.bias))
            else:
                layers.append(
                    nn.Conv2d(
                        conv.in_channels,
                        conv.out_channels,
                        conv.kernel,
                        conv.stride,
                        conv.padding,
                        groups=conv.groups,
                        bias=conv.bias,
                    )
                )
            i += 1
        if conv.relu:
            layers.append(nn.ReLU(inplace=True))
    return nn.Sequential(*layers).to(memory_format=torch.channels_last)


@functools.lru_cache(maxsize=256)
def meta_conv_layers(convs: tuple[ConvSpec, ...]) -> nn.Sequential:
    """:func:`conv_layers` on the ``meta`` device: geometry and parameter names, never
    values (building them draws no random numbers). One per layout in a process, shared
    read-only by every lane of that layout (a 58-lane model has a handful of layouts;
    building them lane by lane cost more than drawing the weights)."""
    with torch.device("meta"):
        return conv_layers(convs)


def initial_conv_tensors(layers: nn.Module) -> list[torch.Tensor]:
    """The parameters ``layers`` (built by :func:`conv_layers`, on any device: the
    ``meta`` device's carry only shapes) start with when built on the CPU, in their
    order and from the same random numbers (each ``nn.Conv2d``'s initialisation,
    layer by layer, weight then bias), drawn without building the layers again: a
    default-space model's few hundred small ``nn.Conv2d`` cost a search 0.1-0.2 s a
    trial to build."""
    out = [t for m in layers.modules() if isinstance(m, nn.Conv2d) for t in _conv2d_init(m)]
    assert len(out) == len(list(layers.parameters())), "a parameter not of a Conv2d"
    return out


def _conv2d_init(conv: nn.Conv2d) -> list[torch.Tensor]:
    """``conv.reset_parameters()``'s draws for fresh CPU tensors of its shapes:
    Kaiming-uniform weight (``a = sqrt(5)``, torch's own function), bias uniform in
    ``+-1/sqrt(fan_in)``."""
    weight = torch.empty(conv.weight.shape)
    nn.init.kaiming_uniform_(weight, a=math.sqrt(5))
    if conv.bias is None:
        return [weight]
    fan_in = weight[0].numel()
    bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
    return [weight, nn.init.uniform_(torch.empty(conv.bias.shape), -bound, bound)]


def channels_last(x: torch.Tensor) -> torch.Tensor:
    return x.contiguous(memory_format=torch.channels_last)
