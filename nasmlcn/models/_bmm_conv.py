"""A lane stack's later conv layer as one batched matrix product (the ``bmm`` layer
path of :mod:`nasmlcn.models._fused`).

The ``grouped`` path runs a stack's later layer as one grouped convolution
(``groups = G`` times the layer's own groups). On an H100, cuDNN runs the backward
of such a convolution (its data gradient) one group at a time: 58 ``dgrad`` kernels a
step for a 58-lane model, whatever the stacking. This path computes the same layer
with a fixed handful of kernels whatever ``G`` is:

- the stack's features ``(B, G*C, H, W)`` (channels-last) are cut into patches once
  per layer, for every lane and image in one copy: ``(G*g, B*H'*W', k*k*C/g)`` for
  ``g`` channel groups of the layer (a strided view of the maps, then the copy);
- one batched matrix product with the stacked kernels ``(G*g, k*k*C/g, O/g)`` (the
  lanes and groups are the product's batch; the bias added by the same kernel);
- one copy puts the lanes' outputs back side by side: ``(B, G*O, H', W')`` in
  channels-last memory order, the tensor the grouped convolution gives.

Backward is two batched products and the copies' and view's own gradients
(``unfold``'s backward sums the overlapping windows in one kernel).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

Pair = tuple[int, int]


def stacked_conv_bmm(
    h: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor | None,
    stride: Pair,
    padding: Pair,
    dilation: Pair = (1, 1),
    groups: int = 1,
) -> torch.Tensor:
    """``G`` lanes' convolutions of their own channels, as one batched product.

    Args:
        h: The stack's features ``(B, G*C, H, W)``, lane after lane along channels
            (channels-last memory, as the stack's layers give them; any layout works).
        weight: The stacked kernels ``(G, O, C/g, kh, kw)`` (a lane stack keeps them
            laid out as ``(G, O, kh, kw, C/g)``: then read with no copy).
        bias: ``(G, O)``, or None.
        stride, padding, dilation: As ``F.conv2d``'s, the same for every lane.
        groups: The layer's own channel groups ``g`` (each lane's, as in
            ``nn.Conv2d``): each group is one more batch of the product.

    Returns:
        ``(B, G*O, H', W')`` in channels-last memory order: what
        ``F.conv2d(h, weight.flatten(0, 1), bias.flatten(), stride, padding, dilation,
        G * groups)`` gives.
    """
    count, out_channels, group_channels, kh, kw = weight.shape
    batch = h.shape[0]
    group_out = out_channels // groups
    windows = _windows(h, (kh, kw), stride, padding, dilation)  # (B, H', W', G*C, kh, kw)
    out_h, out_w = windows.shape[1:3]
    # (G, g, B, H', W', kh, kw, C/g) -> rows of k*k*C/g values: the one copy of the input
    rows = (
        windows.reshape(batch, out_h, out_w, count, groups, group_channels, kh, kw)
        .permute(3, 4, 0, 1, 2, 6, 7, 5)
        .reshape(count * groups, batch * out_h * out_w, kh * kw * group_channels)
    )
    # (G, O, C/g, kh, kw) -> (G*g, kh*kw*C/g, O/g): a view of a stack's kernel
    kernels = (
        weight.reshape(count, groups, group_out, group_channels, kh, kw)
        .permute(0, 1, 4, 5, 3, 2)
        .reshape(count * groups, kh * kw * group_channels, group_out)
    )
    if bias is None:
        out = torch.bmm(rows, kernels)
    else:
        out = torch.baddbmm(bias.reshape(count * groups, 1, group_out), rows, kernels)
    # (G*g, B*H'*W', O/g) -> (B, H', W', G*O), lanes side by side: one copy (none for
    # one lane of one group); contiguous, not merely reshaped (a reshape may keep the
    # product's order when O/g is 1)
    out = (
        out.view(count * groups, batch, out_h, out_w, group_out)
        .permute(1, 2, 3, 0, 4)
        .contiguous()
        .view(batch, out_h, out_w, count * out_channels)
    )
    return out.permute(0, 3, 1, 2)  # (B, G*O, H', W'), channels-last in memory


def _windows(
    h: torch.Tensor, kernel: Pair, stride: Pair, padding: Pair, dilation: Pair
) -> torch.Tensor:
    """Every output position's input window, ``(B, H', W', C, kh, kw)``: a view of
    the (padded) maps, nothing copied but the padding."""
    x = h.permute(0, 2, 3, 1)  # (B, H, W, C): contiguous for channels-last maps
    if padding[0] or padding[1]:
        x = F.pad(x, (0, 0, padding[1], padding[1], padding[0], padding[0]))
    span_h, span_w = ((k - 1) * d + 1 for k, d in zip(kernel, dilation, strict=True))
    x = x.unfold(1, span_h, stride[0]).unfold(2, span_w, stride[1])  # (B, H', W', C, sh, sw)
    if dilation != (1, 1):
        x = x[..., :: dilation[0], :: dilation[1]]
    return x
