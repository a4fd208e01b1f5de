"""The features of the calibrated cost model's two linear fits (time and memory).

A lane's step time and peak training memory are non-negative combinations of
these features; see :mod:`nasmlcn.costs._calibrated` for the model as a whole.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from nasmlcn.costs._context import ADAM_STATES, BYTES_PER_VALUE, CostContext
from nasmlcn.costs._profile import head_profile, lane_profile
from nasmlcn.specs import LaneSpec, executed_convs

TIME_FEATURES = ("train_flops", "params", "feature_values", "capsules", "layers", "one")
"""Step time = sum of non-negative coefficients times:

* ``train_flops``: forward + backward FLOPs of the step: the arithmetic;
* ``params``: Adam's update and the gradient reset touch every weight once a step;
* ``feature_values``: batch x convolution output values: element-wise passes
  (ReLU and its backward) and the memory traffic of reading the maps;
* ``capsules``: batch x primary capsules: squash, votes and routing are many
  small element-wise operations per capsule;
* ``layers``: executed convolutions: a fixed dispatch/launch cost per layer
  (what dominates on a GPU for lanes this small);
* ``one``: fixed cost per step (Python, the loss, the optimizer's bookkeeping).

The fit keeps only the terms the measurements support (the others get 0): on
the development CPU, FLOPs, parameters, layers and the constant.
"""

MEMORY_FEATURES = ("state_bytes", "feature_bytes", "capsules", "one")
"""Peak memory = sum of non-negative coefficients times:

* ``state_bytes``: weights, gradients and Adam's two moments (16 bytes/param);
* ``feature_bytes``: the batch of images and every convolution output map,
  float32 (kept for backward);
* ``capsules``: batch x primary capsules: the capsule tensors (squashed
  capsules, votes, routing temporaries and their gradients), whose size per
  capsule depends on the routing and the number of classes;
* ``one``: fixed scratch (convolution library workspaces, small buffers).
"""


def _layer_count(lane: LaneSpec, ctx: CostContext) -> int:
    return len(executed_convs(lane.layout(ctx.input_shape).convs))


def time_features(lane: LaneSpec, ctx: CostContext) -> list[float]:
    """The values of ``TIME_FEATURES`` for ``lane`` at ``ctx.batch_size``."""
    p = lane_profile(lane, ctx)
    b = ctx.batch_size
    return [
        float(p.train_flops_per_step(b)),
        float(p.params),
        float(b * p.feature_values),
        float(b * p.num_primary),
        float(_layer_count(lane, ctx)),
        1.0,
    ]


def memory_features(lane: LaneSpec, ctx: CostContext) -> list[float]:
    """The values of ``MEMORY_FEATURES`` for ``lane`` at ``ctx.batch_size``."""
    p = lane_profile(lane, ctx)
    b = ctx.batch_size
    image = ctx.input_shape[0] * ctx.input_shape[1] * ctx.input_shape[2]
    return [
        float((2 + ADAM_STATES) * p.params * BYTES_PER_VALUE),
        float(b * (image + p.feature_values) * BYTES_PER_VALUE),
        float(b * p.num_primary),
        1.0,
    ]


def head_time_features(num_lanes: int, ctx: CostContext) -> list[float]:
    """``TIME_FEATURES`` of the head (class capsules and decoder), no per-step constant."""
    h = head_profile(num_lanes, ctx)
    b = ctx.batch_size
    layers = 0 if ctx.decoder == "none" else 3
    return [
        float(h.train_flops * b),
        float(h.params),
        float(b * h.saved_values),
        float(b * ctx.num_classes),
        float(layers),
        0.0,
    ]


def head_memory_features(num_lanes: int, ctx: CostContext) -> list[float]:
    """``MEMORY_FEATURES`` of the head (class capsules and decoder), no fixed scratch."""
    h = head_profile(num_lanes, ctx)
    return [
        float((2 + ADAM_STATES) * h.params * BYTES_PER_VALUE),
        float(ctx.batch_size * h.saved_values * BYTES_PER_VALUE),
        0.0,
        0.0,
    ]


def dot(coefficients: Sequence[float], features: Sequence[float]) -> float:
    """The prediction of ``coefficients`` for ``features`` (an exact sum)."""
    return math.fsum(c * f for c, f in zip(coefficients, features, strict=True))
