"""Measurements with torch: device speed, single-lane step time and peak memory,
and a model's per-image inference latency.

Used by ``nasmlcn calibrate`` and ``benchmarks/cost_model.py`` to fit and check the
``calibrated`` cost model; the search's ``train`` evaluator measures every trained
model's inference latency with it. This package imports torch; the cost models
themselves (:mod:`nasmlcn.costs`) never do.
"""

from __future__ import annotations

from nasmlcn.measure._inference import (
    INFERENCE_PASSES,
    INFERENCE_WARMUP,
    InferenceTiming,
    classify,
    time_inference,
)
from nasmlcn.measure._lane import (
    LaneStepper,
    LaneTiming,
    lane_peak_memories,
    lane_peak_memory,
    measure_lanes,
    time_lane_step,
    time_lanes,
)
from nasmlcn.measure._speed import (
    DeviceSpeeds,
    SpeedResult,
    fc_flops_per_step,
    measure_fc_speed,
    measure_speeds,
)

__all__ = [
    "INFERENCE_PASSES",
    "INFERENCE_WARMUP",
    "DeviceSpeeds",
    "InferenceTiming",
    "LaneStepper",
    "LaneTiming",
    "SpeedResult",
    "classify",
    "fc_flops_per_step",
    "lane_peak_memories",
    "lane_peak_memory",
    "measure_fc_speed",
    "measure_lanes",
    "measure_speeds",
    "time_inference",
    "time_lane_step",
    "time_lanes",
]
