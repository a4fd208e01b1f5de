"""One lane stack's forward pass: ``G`` lanes of one kind as one computation.

The default space builds models of many narrow lanes (``20*mlcn1:2x1,20*mlcn2:2x4``);
run one after another, each lane pays its own small convolutions, capsule reshapes
and routing, and a GPU mostly waits on launches. Lanes of one kind (same type, width
and depth; routing and weight sharing are the model's) have the same shapes at every
step, and a :class:`~nasmlcn.models.LaneStack` keeps each of their parameters as one
tensor with a leading lane dimension ``(G, ...)``. So a group of ``G`` lanes runs as:

- the first layer reads the same image for every lane: the image's patches are cut
  once per step, for the whole batch in one copy (shared by every stack with that
  first-layer geometry), and one matrix product with the stack's kernels gives every
  lane's first maps;
- every later layer reads only its own lane's channels: by default one grouped
  convolution (``groups = G`` times the layer's own groups), the stacked kernel viewed
  as ``(G*O, C, k, k)`` with no copy; or, the ``bmm`` layer path
  (:data:`LAYER_PATHS`, chosen per model: ``MLCN.layer_path``), the maps' patches cut
  once and one batched matrix product with the lanes as its batch
  (:mod:`nasmlcn.models._bmm_conv`: cuDNN runs a grouped convolution's backward one
  group at a time);
- primary capsules, votes and routing are batched over the stack's lanes (routing
  treats the stack as more batch: lanes never mix).

A training step therefore launches a handful of kernels per stack and layer whatever
``G`` is, and the optimizer updates one tensor per stack and parameter, not one per
lane. :func:`member_outputs` runs the same layers lane by lane on views of the stack
(the CPU's rule for wide kinds, :func:`nasmlcn.specs.lane_fuses`, and
``fuse_lanes=False``). Both are checked in float64 against a plain per-lane module,
the reference lane of the tests (``tests/models/reference_lane.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import cast

import torch
import torch.nn.functional as F
from torch import nn

from nasmlcn.models._bmm_conv import stacked_conv_bmm
from nasmlcn.models._capsules import dynamic_routing, squash
from nasmlcn.models._conv import FoldedConv2d, fold_kernels
from nasmlcn.models._lane import LaneKind

Params = Mapping[str, torch.Tensor]
"""A stack's parameters by the lane's own names, each ``(G, *lane's shape)``."""

Kernels = tuple[torch.Tensor, torch.Tensor | None]
"""A conv layer's stacked kernel ``(G, O, C/g, k, k)`` and bias ``(G, O)`` (or None)."""

DEFAULT_LAYER_PATH = "grouped"
"""How a stack's later conv layers run unless a model says otherwise (see
:data:`LAYER_PATHS`)."""


class Patches:
    """The image's patches (im2col) for each first-layer geometry, cut once per step
    and shared by every stack whose first layer has that geometry.

    Also what the step's stacks share besides: ``layer_path``, how their later conv
    layers run (a name of :data:`LAYER_PATHS`).
    """

    def __init__(self, x: torch.Tensor, layer_path: str = DEFAULT_LAYER_PATH) -> None:
        self.x = x  # (B, C, H, W)
        self.layer_path = layer_path
        self._cache: dict[tuple[int, int, int], tuple[torch.Tensor, int, int]] = {}

    def of(self, kernel: int, stride: int, padding: int) -> tuple[torch.Tensor, int, int]:
        """``(B * H' * W', C * k * k)`` patches and the output's ``H'``, ``W'``.

        Cut as a strided view of the batch and copied once: one kernel for the whole
        batch (``F.unfold`` on a GPU runs ``im2col`` once per image, 100 launches at
        batch 100).
        """
        key = (kernel, stride, padding)
        if key not in self._cache:
            x = F.pad(self.x, (padding,) * 4) if padding else self.x
            b, c = x.shape[:2]
            windows = x.unfold(2, kernel, stride).unfold(3, kernel, stride)  # (B, C, H', W', k, k)
            out_h, out_w = windows.shape[2:4]
            rows = windows.permute(0, 2, 3, 1, 4, 5).reshape(b * out_h * out_w, c * kernel**2)
            self._cache[key] = (rows, out_h, out_w)
        return self._cache[key]


def fused_outputs(
    kind: LaneKind, params: Params, patches: Patches, by_lane: bool = False
) -> torch.Tensor:
    """``(G, B, K)``: the outputs of the ``G`` lanes of ``kind`` whose stacked
    ``params`` are given, all at once.

    With ``vector`` routing the outputs are not yet squashed (:func:`finish` squashes
    every stack's at once); ``classwise`` routing squashes its own 1-D capsules.
    ``by_lane`` (one lane's ``params``, from :func:`member_outputs`): the first layer
    is a convolution of the image, as a lane's own module computes it (on a CPU
    oneDNN's 9x9 convolution of one lane is 2x faster than its patch product).
    """
    convs = list(kind.convs)
    first_relu = len(convs) > 1 and isinstance(convs[1], nn.ReLU)
    kernels = _kernels(convs[0], params, "convs.0.")
    if by_lane:
        h = _grouped_conv(convs[0], kernels, patches.x)
        h = torch.relu_(h) if first_relu else h
    else:
        h = _first_layer(convs[0], kernels, patches, first_relu)
    later = LAYER_PATHS[patches.layer_path]
    for i in range(2 if first_relu else 1, len(convs)):
        if isinstance(convs[i], nn.ReLU):
            h = torch.relu_(h)  # no layer needs its output kept: conv backward reads inputs
        else:
            h = later(convs[i], _kernels(convs[i], params, f"convs.{i}."), h)
    return _capsules(kind, params["weight"], h)


def finish(routing: str, outputs: torch.Tensor) -> torch.Tensor:
    """Lane outputs ``(..., K)`` of :func:`fused_outputs` as the lanes give them: with
    ``vector`` routing the squash of each lane's summed votes (one op for every
    stack of a model, not one per stack: routing to one capsule is just that)."""
    return squash(outputs) if routing == "vector" else outputs


def member_outputs(kind: LaneKind, params: Params, patches: Patches) -> torch.Tensor:
    """``(G, B, K)`` as :func:`fused_outputs`, computed lane by lane.

    Each parameter is unbound once (so the backward pass stacks each lane's gradient
    in one copy, instead of adding ``G`` full-size ones)."""
    lanes = {name: p.unbind(0) for name, p in params.items()}
    count = len(next(iter(lanes.values())))
    outs = [
        fused_outputs(kind, {n: p[i].unsqueeze(0) for n, p in lanes.items()}, patches, True)
        for i in range(count)
    ]
    return torch.cat(outs)  # (G, B, K)


def _kernels(layer: nn.Module, params: Params, prefix: str) -> Kernels:
    """A conv layer's stacked kernel ``(G, O, C/g, k, k)`` and bias ``(G, O)``."""
    if isinstance(layer, FoldedConv2d):
        parts = ("pointwise.weight", "pointwise.bias", "conv.weight", "conv.bias")
        w1, b1, w2, b2 = (params[prefix + part] for part in parts)
        return fold_kernels(w1.flatten(2), b1, w2, b2)
    conv = cast(nn.Conv2d, layer)
    return params[prefix + "weight"], None if conv.bias is None else params[prefix + "bias"]


def _geometry(layer: nn.Module) -> nn.Conv2d:
    return layer.conv if isinstance(layer, FoldedConv2d) else cast(nn.Conv2d, layer)


def _first_layer(layer: nn.Module, kernels: Kernels, patches: Patches, relu: bool) -> torch.Tensor:
    """The first conv layer of every lane of a stack (and its ReLU when ``relu``):
    one matrix product of the image's patches with the stacked kernels,
    ``(B, G*O, H', W')`` in channels-last memory order."""
    conv = _geometry(layer)
    weight, bias = kernels  # (G, O, C, k, k), (G, O)
    rows, out_h, out_w = patches.of(conv.kernel_size[0], conv.stride[0], _padding(conv))
    out = F.linear(rows, weight.flatten(0, 1).flatten(1), None if bias is None else bias.flatten())
    if relu:
        # on the matrix, not on the channels-last view of it: through the view,
        # autograd's backward mixes memory orders and is 10x slower
        out = torch.relu_(out)  # (B*H'*W', G*O)
    return out.view(patches.x.shape[0], out_h, out_w, -1).permute(0, 3, 1, 2)


def _padding(conv: nn.Conv2d) -> int:
    return cast(tuple[int, int], conv.padding)[0]  # nasmlcn's layers pad by numbers


def _grouped_conv(layer: nn.Module, kernels: Kernels, h: torch.Tensor) -> torch.Tensor:
    """A later conv layer of every lane of a stack on the stack's features
    ``(B, G*C, H, W)``: one grouped convolution, the stacked kernel viewed whole."""
    conv = _geometry(layer)
    weight, bias = kernels  # (G, O, C/g, k, k), (G, O)
    count = weight.shape[0]
    # One lane's kernel is selected, not reshaped: a reshape renumbers the strides of
    # a 1-channel kernel as NCHW's, and the convolution would then run (and copy its
    # input) in NCHW instead of the maps' channels-last order.
    kernel = weight[0] if count == 1 else weight.flatten(0, 1)  # (G*O, C/g, k, k), a view
    return F.conv2d(
        h,
        kernel,
        None if bias is None else bias.flatten(),
        conv.stride,
        conv.padding,
        conv.dilation,
        conv.groups * count,
    )


def _bmm_conv(layer: nn.Module, kernels: Kernels, h: torch.Tensor) -> torch.Tensor:
    """What :func:`_grouped_conv` computes, as the features' patches and one batched
    matrix product, the stack's lanes (and the layer's groups) as its batch
    (:func:`~nasmlcn.models._bmm_conv.stacked_conv_bmm`). A layer padded by name
    (``"same"``) runs as the grouped convolution: nasmlcn's layers pad by numbers."""
    conv = _geometry(layer)
    if isinstance(conv.padding, str):
        return _grouped_conv(layer, kernels, h)
    weight, bias = kernels  # (G, O, C/g, k, k), (G, O)
    return stacked_conv_bmm(
        h,
        weight,
        bias,
        cast(tuple[int, int], conv.stride),
        cast(tuple[int, int], conv.padding),
        cast(tuple[int, int], conv.dilation),
        conv.groups,
    )


LayerPath = Callable[[nn.Module, Kernels, torch.Tensor], torch.Tensor]
"""A stack's later conv layer on the stack's features ``(B, G*C, H, W)``: the conv
layer (its geometry), its stacked kernels, the features -> ``(B, G*O, H', W')`` in
channels-last memory order."""

LAYER_PATHS: dict[str, LayerPath] = {"grouped": _grouped_conv, "bmm": _bmm_conv}
"""How a stack's later conv layers can run, by name (the same results within
rounding; checkpoints do not depend on it): ``grouped``, one grouped convolution per
layer; ``bmm``, one unfold and one batched matrix product per layer. A model
chooses with ``MLCN.layer_path`` (``LaneSet.layer_path``)."""


def _capsules(kind: LaneKind, weight: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
    """Primary capsules, votes and routing of every lane of a stack: ``(G, B, K)``
    from the last conv layer's ``(B, G*C, H, W)`` and the stacked vote weights
    ``(G, N, d, K)`` (``(G, C/d, d, K)`` shared across positions)."""
    count, d = weight.shape[0], kind.capsule_dim
    b, height, width = h.shape[0], h.shape[2], h.shape[3]  # h: (B, G*C, H, W)
    # channels-last: the permuted maps are contiguous, capsule n = p * C/d + channel
    caps = squash(
        h.permute(0, 2, 3, 1).reshape(b, height * width, count, -1, d)
    )  # (B, P, G, C/d, d)
    if kind.routing == "vector":
        # squashed with every other stack's, once per model (LaneSet.class_capsules)
        return _summed_votes(kind, weight, caps)  # (G, B, K)
    if kind.positions:
        weight = weight.repeat(1, kind.positions, 1, 1)  # (G, N, d, K), position-major
    k = weight.shape[-1]
    u = caps.permute(2, 1, 3, 0, 4).reshape(-1, b, d)  # (G*N, B, d)
    u_hat = torch.bmm(u, weight.reshape(u.shape[0], d, k))  # (G*N, B, K)
    n = u.shape[0] // count
    votes = u_hat.view(count, n, b, k, 1).permute(1, 0, 2, 3, 4).reshape(n, count * b, k, 1)
    routed = dynamic_routing(votes, kind.routing_iterations)  # (G*B, K, 1)
    return routed.view(count, b, k)


def _summed_votes(kind: LaneKind, weight: torch.Tensor, caps: torch.Tensor) -> torch.Tensor:
    """``(G, B, K)``: each lane's votes summed over its primary capsules, which is all
    that routing to one capsule reads (its softmax over one capsule is 1). One matrix
    product per lane over capsules and their dimensions, ``(B, N*d) @ (N*d, K)``: the
    votes themselves (``N`` times larger) are never made."""
    count, b, k = weight.shape[0], caps.shape[0], weight.shape[-1]
    if kind.positions:
        # a transform shared by a channel's capsules at every position: sum them first
        u = caps.sum(dim=1).transpose(0, 1).reshape(count, b, -1)  # (G, B, C/d*d)
    else:
        u = caps.permute(2, 0, 1, 3, 4).reshape(count, b, -1)  # (G, B, N*d)
    return torch.bmm(u, weight.reshape(count, -1, k))  # (G, B, K)


def stack_tensors(tensors: Sequence[torch.Tensor]) -> torch.Tensor:
    """One parameter of ``G`` lanes as one tensor ``(G, ...)``. A kernel ``(O, C, k, k)``
    is laid out channels-last, so that the stack viewed as ``(G*O, C, k, k)`` is a
    channels-last kernel as the feature maps are: the convolutions then read it as it
    is, and its gradient comes back in its own layout (no copy either way)."""
    out = torch.stack(list(tensors))
    if out.dim() != 5:
        return out
    _, o, c, kh, kw = out.shape  # stored as (G, O, k, k, C); explicit strides, as
    # .contiguous() keeps a 1-channel kernel's strides NCHW-like and convolutions then
    # pick the NCHW format (copying every feature map they read)
    strides = (o * kh * kw * c, kh * kw * c, 1, kw * c, c)
    return torch.empty_strided(out.shape, strides, dtype=out.dtype, device=out.device).copy_(out)
