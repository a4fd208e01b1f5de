"""The ``calibrated`` cost model: fitted to lanes measured on this machine.

``nasmlcn calibrate`` measures a sample of random lanes on one local device (step
time and peak training memory, see :mod:`nasmlcn.measure`), fits the two linear
models below to them and saves a :class:`Calibration` file. This module holds the
cost model; its parts sit beside it: the features (``_features``), the measured
lanes (``_samples``), the file (``_calibration_file``), the fit and its
cross-validation (``_fit``), the host's facts and device speeds (``_host``) and the
scores against measurements (``_scoring``). All pure Python (numpy only while
fitting); none imports torch.

**Time.** A lane's step time on the measured device is modelled as a non-negative
combination of ``TIME_FEATURES`` (see :func:`time_features` for why each is
there), fitted by least squares on the *relative* error so that 5 ms lanes count
as much as 500 ms ones. The result is in local seconds; ``LaneCost.time`` is in
seconds on a speed-1.0 device (a K80), so it is multiplied by the measured
device's relative speed.

**Device speeds.** Each measured device runs the thesis's tiny 512x512 fully
connected network (its training FLOP/s). Ratios of those figures relate the
devices to each other, as the thesis normalised by its K80. What ties them to
the K80 scale is an *anchor*: the catalog speed of the first measured device's
catalog kind (the device the lanes ran on comes first). There is no K80 here to
measure, so that absolute figure is the catalog's: for ``cpu`` it is *derived*
from peak FLOPS and bandwidth (see ``devices.toml``), not measured; for GPUs the
catalog's published or derived figure. Only the absolute unit depends on it —
correlations and the relative cost of lanes do not. The catalog's ``cpu`` figure
describes a whole 2-core slice; a calibration timed with fewer threads than the
CPU has (``--threads 1 --clock cpu`` on a shared machine) is slower per step than
that slice, so its speed-1.0 times come out high by about the same factor.

**Memory.** Peak training memory is modelled as a non-negative combination of
``MEMORY_FEATURES``, fitted the same way and then scaled up by the smallest
factor under which no calibration lane is under-predicted (an upper envelope:
a plan must not overfill a device). It predicts what was measured: on a CPU the
resident-set growth of a fresh process while the lane trains (glibc's mmap
threshold held fixed, which makes it reproducible); on CUDA the caching
allocator's peak. Neither includes the runtime's fixed cost (a CUDA context is
several hundred MiB), which eq. 6.1's 1832 MiB does include.

**Whole models.** A calibration also measures whole random models (1-64 lanes,
mixed kinds, as training runs them: lanes fused, head, decoder, loss, Adam) and
fits the whole-model step time of :mod:`nasmlcn.costs._whole` to them. With it,
what the lanes of one device cost together (:meth:`lanes_time`: fused groups pay
their dispatches once), what the head and each step cost (the head's time) and a
lane's own ``time`` (its terms alone: what placement balances and the search's
buckets fill) come from that fit; the lane fit keeps inference times and memory. A calibration written before whole models were measured has no such fit:
lane sums and the head below are used.

**Head.** Without the whole-model fit, the class capsules and decoder are not
measured; their cost applies the lane coefficients to the head's arithmetic
(FLOPs, parameters, values kept for backward, three linear layers), without the
per-step constant (which each measured lane already carries).

**Inference.** Only training steps are measured, so a lane's forward-only time
per image (batch ``INFERENCE_BATCH_SIZE`` = 1) is derived from the time fit under
two stated assumptions: the per-step terms of training do not occur at inference
(``params``: Adam's update and the gradient reset; ``one``: the loss, backward's
and the optimizer's bookkeeping; see ``INFERENCE_DROPPED``); the other terms
(FLOPs, feature maps, capsules, per-layer dispatch) split between the forward and
backward passes as the lane's FLOPs do, so they are taken at batch 1 and scaled
by the forward pass's share of the step's FLOPs (about a third). The head's
classification (capsule lengths, no decoder) takes the head features without the
decoder at batch 1, times a third (``HEAD_FORWARD_SHARE``). Checked on the
2-core development CPU (1 thread, calibrated with ``--threads 1 --clock cpu``)
against 7 models of 1-4 lanes: 1.2-3.7x the measured latency, highest for deep
lanes (a training step's per-layer cost, autograd included, is more than three
forward dispatches); ``2*mlcn1:4x1`` 2.5 ms predicted, 1.8-2.0 ms measured
(keeping ``one`` would have predicted 9.1 ms). An upper estimate, then;
``nasmlcn search --evaluator train`` measures every trial's.

The coefficients belong to the context the lanes were measured in (input shape,
classes, routing). Batch size scales the per-image features, so other batch
sizes extrapolate linearly; other contexts are predicted with a warning.
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from nasmlcn.costs._base import (
    COST_MODELS,
    INFERENCE_BATCH_SIZE,
    CostModel,
    HeadCost,
    LaneCost,
    forward_share,
    head_facts,
    layer_facts,
)
from nasmlcn.costs._calibration_file import Calibration, default_calibration_path
from nasmlcn.costs._context import CostContext
from nasmlcn.costs._features import (
    TIME_FEATURES,
    dot,
    head_memory_features,
    head_time_features,
    time_features,
)
from nasmlcn.costs._profile import lane_profile
from nasmlcn.specs import LaneSpec

log = logging.getLogger(__name__)

INFERENCE_DROPPED = ("params", "one")
"""Time features of a training step that a forward pass does not have."""

HEAD_FORWARD_SHARE = 1 / 3
"""The forward pass's share of the head's training time (train FLOPs = 3x forward)."""


@COST_MODELS.register("calibrated")
class CalibratedCostModel(CostModel):
    """Step time and memory fitted to this machine (see the module docstring).

    Args:
        calibration: A calibration in memory; or
        calibration_file: a calibration file; with neither, the default file
            (``$NASMLCN_CALIBRATION`` or ``~/.cache/nasmlcn/calibration.json``).

    Raises:
        CalibrationError: The file is missing (run ``nasmlcn calibrate``) or invalid.
    """

    name = "calibrated"
    time_unit = "s"

    def __init__(
        self,
        calibration: Calibration | None = None,
        calibration_file: str | os.PathLike[str] | None = None,
    ) -> None:
        if calibration is not None and calibration_file is not None:
            raise ValueError("give a calibration or a calibration_file, not both")
        if calibration is None:
            path = (
                Path(calibration_file)
                if calibration_file is not None
                else default_calibration_path()
            )
            calibration = Calibration.load(path)
            log.info("calibration %s: %s, %s", path, calibration.device, calibration.created)
        self.calibration = calibration
        self._warned: set[tuple[Any, ...]] = set()

    def _check_context(self, ctx: CostContext) -> None:
        ref = self.calibration.context
        key = (ctx.input_shape, ctx.num_classes, ctx.routing, ctx.routing_iterations)
        if not self.calibration.measured_for(ctx) and key not in self._warned:
            self._warned.add(key)
            log.warning(
                "the calibration was measured for input %s, %d classes, %s routing x%d; "
                "predicting for %s, %d classes, %s routing x%d extrapolates (calibrate for "
                "these images: nasmlcn calibrate --dataset ...)",
                "x".join(map(str, ref.input_shape)),
                ref.num_classes,
                ref.routing,
                ref.routing_iterations,
                "x".join(map(str, ctx.input_shape)),
                ctx.num_classes,
                ctx.routing,
                ctx.routing_iterations,
            )

    def lane_cost(self, lane: LaneSpec, ctx: CostContext) -> LaneCost:
        self._check_context(ctx)
        cal = self.calibration
        # a lane's own terms of the whole-model fit (no head, no per-step term), where
        # the calibration has one: what placement balances and buckets fill
        whole = cal.model_local_seconds([lane], ctx)
        seconds = cal.local_seconds(lane, ctx) if whole is None else whole
        return LaneCost(
            lane=lane,
            memory_bytes=cal.memory_bytes(lane, ctx),
            time=seconds * cal.speed,
            inference_time=self._inference_seconds(lane, ctx) * cal.speed,
            **layer_facts(lane, ctx),
        )

    def _inference_seconds(self, lane: LaneSpec, ctx: CostContext) -> float:
        """Local forward-only seconds per image (see the module docstring)."""
        one = replace(ctx, batch_size=INFERENCE_BATCH_SIZE)
        features = [
            0.0 if name in INFERENCE_DROPPED else value  # no loss, backward or optimizer
            for name, value in zip(TIME_FEATURES, time_features(lane, one), strict=True)
        ]
        step = dot(self.calibration.time_coefficients, features)
        return step * forward_share(lane_profile(lane, one), one) / INFERENCE_BATCH_SIZE

    def lanes_time(self, lanes: Sequence[LaneSpec], ctx: CostContext, device_type: str) -> float:
        """The whole-model fit's time of ``lanes`` on one device (fused as they run
        there), speed-1.0 seconds; the lane sum without a whole-model fit."""
        self._check_context(ctx)
        cal = self.calibration
        seconds = cal.model_local_seconds(lanes, ctx, device_type=device_type)
        if seconds is None:
            return super().lanes_time(lanes, ctx, device_type)
        return seconds * cal.speed

    def head_cost(self, num_lanes: int, ctx: CostContext) -> HeadCost:
        cal = self.calibration
        seconds = dot(cal.time_coefficients, head_time_features(num_lanes, ctx))
        whole = cal.model_local_seconds([], ctx, head_lanes=num_lanes)
        if whole is not None:  # the head, the decoder and what every step pays once
            seconds = whole
        memory = math.ceil(dot(cal.memory_coefficients, head_memory_features(num_lanes, ctx)))
        classify = replace(ctx, batch_size=INFERENCE_BATCH_SIZE, decoder="none")
        inference = dot(cal.time_coefficients, head_time_features(num_lanes, classify))
        return HeadCost(
            memory_bytes=memory,
            time=seconds * cal.speed,
            inference_time=inference * HEAD_FORWARD_SHARE * cal.speed / INFERENCE_BATCH_SIZE,
            **head_facts(num_lanes, ctx),
        )

    def describe(self) -> str:
        cal = self.calibration
        return f"calibrated on {cal.device} ({cal.device_description or 'unknown'}), {cal.created}"
