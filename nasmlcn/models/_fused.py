"""Lane groups: lanes of the same kind run as one fused computation.

The default space builds models of many narrow lanes (``20*mlcn1:2x1,20*mlcn2:2x4``);
run one after another, each lane pays its own small convolutions, capsule
reshapes and routing, and the machine mostly waits. Lanes of one kind (same type,
width and depth; routing and weight sharing are the model's) have the same shapes
at every step, so a group of ``G`` of them runs as one computation:

- the first layer reads the same image for every lane: the image's patches are cut
  once per step (shared by every group with that first-layer geometry) and one
  matrix product with the lanes' kernels stacked gives every lane's first maps;
- every later layer reads only its own lane's channels: one grouped convolution
  (``groups = G`` times the layer's own groups), the lanes' filters stacked;
- primary capsules, votes and routing are batched over the group's lanes (routing
  treats the group as more batch: lanes never mix).

The parameters stay the lanes' own (the stacked kernels are built from them at
every step, and autograd carries the gradients back to each lane), so checkpoints,
lane removal and per-lane placement see the same model. The outputs equal the
per-lane loop's up to floating-point summation order (``tests/models/test_fused.py``
checks outputs and gradients in float64 against the loop).

On by default (``MLCN(spec, fuse_lanes=False)``, ``TrainConfig(fuse_lanes=False)`` or
``nasmlcn train --no-fuse-lanes`` run lanes one after another). Which kinds fuse on
a device is :func:`nasmlcn.specs.lane_fuses`' rule, which the cost model follows
too: on a GPU every kind (one launch per group and layer instead of one per lane
and layer); on a CPU the narrow kinds, where fusing pays (``64*mlcn2:1x1`` 588 ->
369 ms a training step, one thread, batch 100); the rule's module gives the
measurements.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import cast

import torch
import torch.nn.functional as F
from torch import nn

from nasmlcn.models._capsules import dynamic_routing, shared_transforms, squash
from nasmlcn.models._conv import FoldedConv2d, PointwiseConv2d, channels_last, folded_kernels
from nasmlcn.models._lane import Lane
from nasmlcn.specs import lane_fuses


def lane_groups(lanes: Iterable[nn.Module]) -> list[list[int]]:
    """The indices of ``lanes`` (:class:`Lane` modules) by kind (same spec), in order
    of first appearance."""
    groups: dict[object, list[int]] = {}
    for i, module in enumerate(lanes):
        lane = cast(Lane, module)
        key = (lane.spec, lane.routing, lane.routing_iterations, lane.positions)
        groups.setdefault(key, []).append(i)
    return list(groups.values())


def fused_lane_outputs(
    lanes: Iterable[nn.Module], x: torch.Tensor, device_type: str | None = None
) -> list[torch.Tensor]:
    """Each lane's ``(B, K)`` output (:class:`Lane` modules), in lane order, lanes of
    one kind fused; with ``device_type``, only the kinds that fuse on such a device
    (:func:`nasmlcn.specs.lane_fuses`), the others lane by lane."""
    lanes = list(lanes)
    outputs: list[torch.Tensor | None] = [None] * len(lanes)
    x = channels_last(x)
    patches = _Patches(x)
    for group in lane_groups(lanes):
        members = [cast(Lane, lanes[i]) for i in group]
        alone = device_type is not None and not lane_fuses(
            members[0].spec, members[0].input_shape, device_type, x.shape[0]
        )
        if len(members) == 1 or alone or not _fusable(members[0]):
            results = [lane(x) for lane in members]
        else:
            results = list(_group_forward(members, x, patches).unbind(0))
        for i, out in zip(group, results, strict=True):
            outputs[i] = out
    return [out for out in outputs if out is not None]


def _fusable(lane: Lane) -> bool:
    """Layers the fused path knows (anything else runs lane by lane)."""
    known = (FoldedConv2d, PointwiseConv2d, nn.Conv2d, nn.ReLU)
    if not all(isinstance(layer, known) for layer in lane.convs):
        return False
    first = lane.convs[0]
    return isinstance(first, FoldedConv2d) or cast(nn.Conv2d, first).groups == 1


class _Patches:
    """The image's patches (im2col) for each first-layer geometry, cut once per step
    and shared by every group whose first layer has that geometry."""

    def __init__(self, x: torch.Tensor) -> None:
        self.x = x
        self._cache: dict[tuple[object, ...], tuple[torch.Tensor, int, int]] = {}

    def of(self, conv: nn.Conv2d) -> tuple[torch.Tensor, int, int]:
        """``(B * H' * W', C * k * k)`` patches and the output's ``H'``, ``W'``."""
        padding = cast(tuple[int, int], conv.padding)  # nasmlcn's layers pad by numbers
        geometry = (conv.kernel_size, conv.dilation, padding, conv.stride)
        if geometry not in self._cache:
            b, _, height, width = self.x.shape
            kernel, dilation, _, stride = geometry
            cols = F.unfold(self.x, kernel, dilation, padding, stride)  # (B, C*k*k, H'*W')
            out_h, out_w = (
                (size + 2 * padding[i] - dilation[i] * (kernel[i] - 1) - 1) // stride[i] + 1
                for i, size in enumerate((height, width))
            )
            rows = cols.transpose(1, 2).reshape(b * out_h * out_w, cols.shape[1])
            self._cache[geometry] = (rows, out_h, out_w)
        return self._cache[geometry]


def _first_layer(layers: Sequence[nn.Module], patches: _Patches, relu: bool) -> torch.Tensor:
    """The first conv layer of every lane of a group (and its ReLU when ``relu``):
    one matrix product of the image's patches with the lanes' kernels stacked,
    ``(B, G*C, H', W')`` in channels-last memory order."""
    head = layers[0]
    bias: torch.Tensor | None
    if isinstance(head, FoldedConv2d):
        weight, bias = folded_kernels(cast(Sequence[FoldedConv2d], layers))
        conv = head.conv
    else:
        conv = cast(nn.Conv2d, head)
        weight = torch.cat([layer.weight for layer in layers])  # type: ignore[misc]
        bias = None if conv.bias is None else torch.cat([layer.bias for layer in layers])  # type: ignore[misc]
    rows, out_h, out_w = patches.of(conv)
    out = F.linear(rows, weight.flatten(1), bias)  # (B*H'*W', G*C)
    if relu:
        # on the matrix, not on the channels-last view of it: through the view,
        # autograd's backward mixes memory orders and is 10x slower
        out = torch.relu_(out)
    return out.view(patches.x.shape[0], out_h, out_w, -1).permute(0, 3, 1, 2)


def _grouped_conv(layers: Sequence[nn.Module], h: torch.Tensor) -> torch.Tensor:
    """A later conv layer of every lane of a group on the group's stacked features:
    one grouped convolution, the lanes' kernels stacked."""
    count = len(layers)
    head = layers[0]
    if isinstance(head, FoldedConv2d):
        weight, bias = folded_kernels(cast(Sequence[FoldedConv2d], layers))
        return F.conv2d(h, weight, bias, stride=head.conv.stride, groups=count)
    assert isinstance(head, nn.Conv2d)  # PointwiseConv2d is one too
    weight = torch.cat([layer.weight for layer in layers])  # type: ignore[misc]
    conv_bias: torch.Tensor | None = None
    if head.bias is not None:
        conv_bias = torch.cat([layer.bias for layer in layers])  # type: ignore[misc]
    return F.conv2d(
        h, weight, conv_bias, head.stride, head.padding, head.dilation, head.groups * count
    )


def _group_forward(lanes: Sequence[Lane], x: torch.Tensor, patches: _Patches) -> torch.Tensor:
    """``(G, B, K)``: the outputs of ``G`` lanes of one kind."""
    count = len(lanes)
    convs = list(lanes[0].convs)
    first_relu = len(convs) > 1 and isinstance(convs[1], nn.ReLU)
    h = _first_layer([lane.convs[0] for lane in lanes], patches, first_relu)
    for depth in range(2 if first_relu else 1, len(convs)):
        if isinstance(convs[depth], nn.ReLU):
            h = torch.relu_(h)  # no layer needs its output kept: conv backward reads inputs
        else:
            h = _grouped_conv([lane.convs[depth] for lane in lanes], h)
    lane = lanes[0]
    d = lane.capsule_dim
    b, c, height, width = h.shape  # c = G * C
    caps = h.permute(0, 2, 3, 1).reshape(b, height * width, count, c // count // d, d)
    caps = caps.permute(2, 0, 1, 3, 4).reshape(count, b, -1, d)  # (G, B, N, d)
    u = squash(caps).transpose(1, 2)  # (G, N, B, d)
    n = u.shape[1]
    weights = [
        shared_transforms(member.weight, member.positions) if member.positions else member.weight
        for member in lanes
    ]
    weight = torch.stack(weights)  # (G, N, d, K)
    k = weight.shape[-1]
    u_hat = torch.bmm(u.reshape(count * n, b, d), weight.reshape(count * n, d, k))  # (G*N, B, K)
    if lane.routing == "vector":
        return squash(u_hat.view(count, n, b, k).sum(dim=1))  # (G, B, K)
    votes = u_hat.view(count, n, b, k, 1).permute(1, 0, 2, 3, 4).reshape(n, count * b, k, 1)
    routed = dynamic_routing(votes, lane.routing_iterations)  # (G*B, K, 1)
    return routed.view(count, b, k)
