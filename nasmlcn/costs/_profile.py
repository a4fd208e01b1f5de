"""The exact arithmetic of a lane's layers, in pure Python.

Counts follow how :mod:`nasmlcn.models` executes a lane, so they agree with
``torch.utils.flop_counter.FlopCounterMode`` (which counts 2 FLOPs per
multiply-add of convolutions and matrix products, nothing for element-wise ops):

* a convolution costs ``2 * C_in/groups * C_out * k^2 * H_out * W_out`` per image
  forward; backward computes the weight gradient (same again) and, except for the
  first layer (the image needs no gradient), the input gradient (same again).
  These are the multiply-adds done. ``FlopCounterMode`` (torch 2.x) counts the
  weight gradient of a grouped convolution ``groups`` times over (it drops the
  groups from that formula); we count what is computed, and the tests correct
  the counter for it (``tests/costs/test_analytic.py``);
* mlcn2's linear 1x1 layer is folded into the 9x9 one after it (see
  ``nasmlcn.specs._layers.can_fold``): the convolution reads the image's channels,
  and the kernel product costs ``2*O*M*k^2*C + 2*O*M`` per step (not per image),
  three times that with its backward;
* votes are ``N`` products of ``(B, 8) x (8, K)``; backward twice that;
* ``classwise`` routing adds ``2*K*N`` per image for each weighted sum (every
  iteration) and each agreement (all but the last); backward only through the
  last weighted sum. ``vector`` routing is a sum (no multiply-adds).

Activation counts are values kept for backward, per image: the image, every
convolution's output (ReLUs run in place), the squashed primary capsules and, for
``classwise``, the reshaped votes.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from itertools import pairwise

from nasmlcn.costs._context import CostContext
from nasmlcn.specs import LaneSpec, can_fold, executed_convs


@dataclass(frozen=True)
class LaneProfile:
    """Layer arithmetic of one lane in one context.

    Attributes:
        params: Trainable parameters (convolutions and vote transforms).
        forward_flops: FLOPs of a forward pass, per image.
        train_flops: FLOPs of forward + backward, per image.
        step_flops: FLOPs per training step independent of the batch (kernel folds).
        saved_values: Values kept for backward, per image.
        transient_values: Largest gradient pair alive at once in backward, per image.
        num_primary: Primary capsules.
        feature_values: Values of all convolution outputs, per image.
    """

    params: int
    forward_flops: int
    train_flops: int
    step_flops: int
    saved_values: int
    transient_values: int
    num_primary: int
    feature_values: int

    def train_flops_per_step(self, batch_size: int) -> int:
        return self.train_flops * batch_size + self.step_flops

    def forward_flops_per_pass(self, batch_size: int) -> int:
        """FLOPs of one forward pass (inference) over ``batch_size`` images: the
        kernel folds are computed once per pass, a third of ``step_flops`` (their
        backward is the other two thirds)."""
        return self.forward_flops * batch_size + self.step_flops // 3


@lru_cache(maxsize=4096)
def lane_profile(lane: LaneSpec, ctx: CostContext) -> LaneProfile:
    """The :class:`LaneProfile` of ``lane`` (cached: lanes repeat across trials)."""
    layout = lane.layout(ctx.input_shape)
    k_out = ctx.num_classes
    d = layout.capsule_dim
    n = layout.num_primary
    params = sum(c.params for c in layout.convs)
    # one (d x K) vote transform per primary capsule, or per capsule channel when
    # shared over the grid's positions (FasTrCaps Alg. 4; the votes cost the same)
    params += (layout.feature_shapes[-1][0] // d if ctx.weight_sharing else n) * d * k_out

    channels, h, w = ctx.input_shape
    image = channels * h * w
    forward = backward = 0
    saved = image
    features = 0
    transient = 0
    previous = image
    for i, conv in enumerate(executed_convs(layout.convs)):
        h, w = conv.output_size(h), conv.output_size(w)
        out = conv.out_channels * h * w
        f = 2 * conv.weights * h * w
        forward += f
        backward += f + (f if i > 0 else 0)
        saved += out
        features += out
        transient = max(transient, out + previous)
        previous = out
    step = 0
    convs = layout.convs
    for first, second in pairwise(convs):
        if can_fold(first, second):
            o, m, c, k = second.out_channels, first.out_channels, first.in_channels, second.kernel
            step += 3 * (2 * o * m * k * k * c + 2 * o * m)

    vote = 2 * n * d * k_out
    forward += vote
    backward += 2 * vote
    saved += n * d  # squashed primary capsules (the votes' input)
    transient = max(transient, 2 * n * k_out)  # votes and their gradient
    if ctx.routing == "classwise":
        r = ctx.routing_iterations
        weighted = 2 * k_out * n
        forward += (2 * r - 1) * weighted
        backward += weighted
        saved += n * k_out
    return LaneProfile(
        params=params,
        forward_flops=forward,
        train_flops=forward + backward,
        step_flops=step,
        saved_values=saved,
        transient_values=transient,
        num_primary=n,
        feature_values=features,
    )


@dataclass(frozen=True)
class HeadProfile:
    """Arithmetic of the part after the lanes (class capsules, decoder).

    ``forward_flops`` and ``train_flops`` are per image and include the decoder.
    Inference classifies without it: the class capsules' lengths are element-wise
    work, 0 FLOPs as ``FlopCounterMode`` counts (see :attr:`inference_flops`).
    """

    params: int
    forward_flops: int
    train_flops: int
    saved_values: int

    @property
    def inference_flops(self) -> int:
        """FLOPs per image of classifying (stacking lanes, capsule lengths): none."""
        return 0


@lru_cache(maxsize=1024)
def head_profile(num_lanes: int, ctx: CostContext) -> HeadProfile:
    """The decoder 512-1024-(C*H*W) reading ``K*L`` (full) or ``L`` (reduced) values."""
    if ctx.decoder == "none":
        return HeadProfile(0, 0, 0, ctx.num_classes * num_lanes)
    pixels = ctx.input_shape[0] * ctx.input_shape[1] * ctx.input_shape[2]
    first = ctx.num_classes * num_lanes if ctx.decoder == "full" else num_lanes
    sizes = [first, 512, 1024, pixels]
    params = sum(a * b + b for a, b in pairwise(sizes))
    forward = sum(2 * a * b for a, b in pairwise(sizes))
    return HeadProfile(params, forward, 3 * forward, sum(sizes) + pixels)
