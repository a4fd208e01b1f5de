"""Lane groups: lanes of the same kind run as one fused computation.

The default space builds models of many narrow lanes (``20*mlcn1:2x1,20*mlcn2:2x4``);
run one after another, each lane pays its own small convolutions, capsule
reshapes and routing, and the machine mostly waits. Lanes of one kind (same type,
width and depth; routing and weight sharing are the model's) have the same shapes
at every step, so a group of ``G`` of them runs as one computation:

- the first layer reads the same image for every lane: one convolution with the
  lanes' filters stacked along the output channels;
- every later layer reads only its own lane's channels: one grouped convolution
  (``groups = G`` times the layer's own groups), the lanes' filters stacked;
- primary capsules, votes and routing are batched over the group's lanes (routing
  treats the group as more batch: lanes never mix).

The parameters stay the lanes' own (the stacked kernels are built from them at
every step, and autograd carries the gradients back to each lane), so checkpoints,
lane removal and per-lane placement see the same model. The outputs equal the
per-lane loop's up to floating-point summation order (``tests/models/test_fused.py``
checks outputs and gradients in float64 against the loop).

Off by default (``MLCN(spec, fuse_lanes=True)`` turns it on): on this 2-core CPU, one
thread, batch 100, the grouped convolutions are slower than the lanes one by one
(``python benchmarks/fused_lanes.py``: ``48*mlcn2:2x1`` 627 ms per-lane against
1056 ms fused, ``36*mlcn2:2x2`` 727 against 1276; oneDNN's grouped convolution and
its backward take the time). Untested on a GPU, where one launch per group instead
of per lane is the point.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import cast

import torch
import torch.nn.functional as F
from torch import nn

from nasmlcn.models._capsules import dynamic_routing, shared_transforms, squash
from nasmlcn.models._conv import FoldedConv2d, PointwiseConv2d, channels_last
from nasmlcn.models._lane import Lane


def lane_groups(lanes: Iterable[nn.Module]) -> list[list[int]]:
    """The indices of ``lanes`` (:class:`Lane` modules) by kind (same spec), in order
    of first appearance."""
    groups: dict[object, list[int]] = {}
    for i, module in enumerate(lanes):
        lane = cast(Lane, module)
        key = (lane.spec, lane.routing, lane.routing_iterations, lane.positions)
        groups.setdefault(key, []).append(i)
    return list(groups.values())


def fused_lane_outputs(lanes: Iterable[nn.Module], x: torch.Tensor) -> list[torch.Tensor]:
    """Each lane's ``(B, K)`` output (:class:`Lane` modules), in lane order, lanes of
    one kind fused."""
    lanes = list(lanes)
    outputs: list[torch.Tensor | None] = [None] * len(lanes)
    x = channels_last(x)
    for group in lane_groups(lanes):
        members = [cast(Lane, lanes[i]) for i in group]
        if len(members) == 1 or not _fusable(members[0]):
            results = [lane(x) for lane in members]
        else:
            results = list(_group_forward(members, x).unbind(0))
        for i, out in zip(group, results, strict=True):
            outputs[i] = out
    return [out for out in outputs if out is not None]


def _fusable(lane: Lane) -> bool:
    """Layers the fused path knows (anything else runs lane by lane)."""
    known = (FoldedConv2d, PointwiseConv2d, nn.Conv2d, nn.ReLU)
    return all(isinstance(layer, known) for layer in lane.convs)


def _stacked_conv(layers: Sequence[nn.Module], h: torch.Tensor, first: bool) -> torch.Tensor:
    """One conv layer of every lane of a group on ``h`` (the image when ``first``,
    else the group's stacked features)."""
    count = len(layers)
    head = layers[0]
    if isinstance(head, FoldedConv2d):
        weights = [layer.kernel() for layer in layers]  # type: ignore[operator]
        weight = torch.cat([w for w, _ in weights])
        bias = torch.cat([b for _, b in weights])
        return F.conv2d(h, weight, bias, stride=head.conv.stride, groups=1 if first else count)
    assert isinstance(head, nn.Conv2d)  # PointwiseConv2d is one too
    weight = torch.cat([layer.weight for layer in layers])  # type: ignore[misc]
    conv_bias: torch.Tensor | None = None
    if head.bias is not None:
        conv_bias = torch.cat([layer.bias for layer in layers])  # type: ignore[misc]
    groups = head.groups if first else head.groups * count
    if first and head.groups != 1:
        raise ValueError("a grouped first layer cannot read one shared image")
    return F.conv2d(h, weight, conv_bias, head.stride, head.padding, head.dilation, groups)


def _group_forward(lanes: Sequence[Lane], x: torch.Tensor) -> torch.Tensor:
    """``(G, B, K)``: the outputs of ``G`` lanes of one kind."""
    count = len(lanes)
    h = x
    for depth, head in enumerate(lanes[0].convs):
        if isinstance(head, nn.ReLU):
            h = F.relu(h)
            continue
        h = _stacked_conv([lane.convs[depth] for lane in lanes], h, first=depth == 0)
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
