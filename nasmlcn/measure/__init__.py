"""Measurements with torch: device speed, single-lane step time and peak memory,
and a model's per-image inference latency.

:func:`calibrate` is the pipeline of ``nasmlcn calibrate``: measure, fit and save
the ``calibrated`` cost model and score every cost model against the measurements
(``benchmarks/cost_model.py`` uses its :func:`measure_calibration` step). The
search's ``train`` evaluator measures every trained model's inference latency here.
This package imports torch; the cost models themselves (:mod:`nasmlcn.costs`) never do.
"""

from __future__ import annotations

from nasmlcn.measure._calibrate import (
    CalibrationMeasurements,
    CalibrationReport,
    CalibrationRequest,
    calibrate,
    measure_calibration,
    resolve_devices,
)
from nasmlcn.measure._inference import (
    INFERENCE_PASSES,
    INFERENCE_WARMUP,
    InferenceTiming,
    classify,
    time_inference,
)
from nasmlcn.measure._lane import measure_lanes
from nasmlcn.measure._lane_memory import PeakSettings, lane_peak_memories, lane_peak_memory
from nasmlcn.measure._lane_timing import LaneTiming, StepTiming, time_lane_step, time_lanes
from nasmlcn.measure._model_timing import time_model_step
from nasmlcn.measure._peak import PeakMemory
from nasmlcn.measure._speed import (
    DeviceSpeeds,
    FCNetwork,
    SpeedResult,
    fc_flops_per_step,
    measure_fc_speed,
    measure_speeds,
)
from nasmlcn.measure._step_ops import StepOps, count_step_ops
from nasmlcn.measure._stepper import LaneStepper

__all__ = [
    "INFERENCE_PASSES",
    "INFERENCE_WARMUP",
    "CalibrationMeasurements",
    "CalibrationReport",
    "CalibrationRequest",
    "DeviceSpeeds",
    "FCNetwork",
    "InferenceTiming",
    "LaneStepper",
    "LaneTiming",
    "PeakMemory",
    "PeakSettings",
    "SpeedResult",
    "StepOps",
    "StepTiming",
    "calibrate",
    "classify",
    "count_step_ops",
    "fc_flops_per_step",
    "lane_peak_memories",
    "lane_peak_memory",
    "measure_calibration",
    "measure_fc_speed",
    "measure_lanes",
    "measure_speeds",
    "resolve_devices",
    "time_inference",
    "time_lane_step",
    "time_lanes",
    "time_model_step",
]
