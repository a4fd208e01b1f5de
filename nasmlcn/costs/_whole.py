"""The whole-model step time: what a model costs as it runs, not a sum of lanes.

A sum of lane costs misses what belongs to no lane and what the lanes share: the
head, the decoder, the loss and the optimizer's bookkeeping are paid once a step
(``1*mlcn2:1x1`` was predicted at a 25th of its measured 28 ms by the lane sum), and
lanes of one kind that run fused (:func:`nasmlcn.specs.execution_groups`) pay one
dispatch per layer for the whole group instead of one per lane. The step time of a
model (or of the part of it one device runs) is modelled as a non-negative
combination of ``MODEL_TIME_FEATURES``, fitted by ``nasmlcn calibrate`` on whole
random models measured on this machine (:func:`fit_model_time`), on the relative
error as the lane fit is (:func:`nasmlcn.stats.fit_relative`).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from nasmlcn.costs._context import CostContext
from nasmlcn.costs._profile import head_profile, lane_profile
from nasmlcn.specs import LaneSpec, executed_convs, execution_groups, lane_channels
from nasmlcn.stats import fit_relative, pearson, spearman, worst_factor

MODEL_TIME_FEATURES = (
    "train_flops",
    "narrow_flops",
    "params",
    "feature_values",
    "capsules",
    "group_layers",
    "groups",
    "step",
)
"""Step time = sum of non-negative coefficients times:

* ``train_flops``: forward + backward FLOPs of the step (lanes, head, decoder);
* ``narrow_flops``: the FLOPs of lanes at most 16 channels wide, which run below
  the machine's matrix-product rate even fused (thin matrix products);
* ``params``: Adam's update and the gradient reset touch every weight;
* ``feature_values``: batch x feature-map values (lanes and head): element-wise
  passes and memory traffic;
* ``capsules``: batch x primary capsules: squash, votes and routing;
* ``group_layers``: executed layers summed over the groups as they run (a fused
  group's layer is one dispatch for all its lanes);
* ``groups``: fused groups and lone lanes: each pays its capsule stage's dispatches
  (squash, votes, routing iterations) once;
* ``step``: what each step pays once on the head's device: the loss, the decoder's
  and the optimizer's dispatches, batch handling (0 for a device without the head).
"""

NARROW_CHANNELS = 16


def model_time_features(
    lanes: Sequence[LaneSpec],
    ctx: CostContext,
    device_type: str,
    *,
    head_lanes: int | None = None,
    fuse: bool = True,
) -> list[float]:
    """The values of ``MODEL_TIME_FEATURES`` for ``lanes`` run on one device.

    Args:
        lanes: The lanes this device runs (a whole model's, or one device's share).
        ctx: The context (batch size, input shape, head).
        device_type: ``cpu`` or ``cuda``: which kinds fuse.
        head_lanes: The model's lane count when this device also runs the head
            (None: it does not).
        fuse: Lanes of one kind run fused (the default, as models train).
    """
    b = ctx.batch_size
    flops = narrow = params = values = capsules = 0.0
    for lane in lanes:
        p = lane_profile(lane, ctx)
        step_flops = float(p.train_flops_per_step(b))
        flops += step_flops
        if lane_channels(lane, ctx.input_shape) <= NARROW_CHANNELS:
            narrow += step_flops
        params += p.params
        values += b * p.feature_values
        capsules += b * p.num_primary
    groups = execution_groups(
        lanes, ctx.input_shape, device_type, batch_size=ctx.batch_size, fuse=fuse
    )
    group_layers = sum(
        len(executed_convs(lanes[group[0]].layout(ctx.input_shape).convs)) for group in groups
    )
    step = 0.0
    if head_lanes is not None:
        h = head_profile(head_lanes, ctx)
        flops += h.train_flops * b
        params += h.params
        values += b * h.saved_values
        step = 1.0
    return [
        flops,
        narrow,
        params,
        values,
        capsules,
        float(group_layers),
        float(len(groups)),
        step,
    ]


def whole_model_features(
    lanes: Sequence[LaneSpec], ctx: CostContext, device_type: str, *, fuse: bool = True
) -> list[float]:
    """``MODEL_TIME_FEATURES`` of a whole model on one device (lanes and head)."""
    return model_time_features(lanes, ctx, device_type, head_lanes=len(lanes), fuse=fuse)


def fit_model_time(rows: Sequence[Sequence[float]], seconds: Sequence[float]) -> list[float]:
    """Non-negative coefficients of ``MODEL_TIME_FEATURES`` for measured step times."""
    if len(rows) < 2:
        raise ValueError(f"need at least 2 measured models to fit, got {len(rows)}")
    return fit_relative(rows, seconds)


def cross_validated_times(
    models: Sequence[Sequence[LaneSpec]],
    seconds: Sequence[float],
    ctx: CostContext,
    device_type: str,
    *,
    folds: int = 6,
    seed: int = 0,
) -> list[float]:
    """Each model's step time predicted by a fit on the other folds only (k-fold):
    the figure to quote, since in-sample figures flatter the fit."""
    n = len(models)
    k = max(2, min(folds, n))
    if n < 3:
        raise ValueError(f"cross-validation needs at least 3 models, got {n}")
    rows = [whole_model_features(lanes, ctx, device_type) for lanes in models]
    order = list(range(n))
    random.Random(seed).shuffle(order)
    predicted = [0.0] * n
    for f in range(k):
        held = set(order[f::k])
        train = [i for i in order if i not in held]
        coefficients = fit_model_time([rows[i] for i in train], [seconds[i] for i in train])
        for i in held:
            predicted[i] = sum(c * v for c, v in zip(coefficients, rows[i], strict=True))
    return predicted


def time_agreement(predicted: Sequence[float], measured: Sequence[float]) -> dict[str, Any]:
    """Pearson's r, Spearman's rho, and the worst factor after one common scale."""
    scale, worst = worst_factor(predicted, measured)
    return {
        "n": len(measured),
        "pearson": pearson(predicted, measured),
        "spearman": spearman(predicted, measured),
        "scale": scale,
        "worst_factor": worst,
    }
