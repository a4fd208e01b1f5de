"""Measurements with torch: device speed and single-lane step time and peak memory.

Used by ``nasmlcn calibrate`` and ``benchmarks/cost_model.py`` to fit and check the
``calibrated`` cost model. This package imports torch; the cost models themselves
(:mod:`nasmlcn.costs`) never do.
"""

from __future__ import annotations

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
    "DeviceSpeeds",
    "LaneStepper",
    "LaneTiming",
    "SpeedResult",
    "fc_flops_per_step",
    "lane_peak_memories",
    "lane_peak_memory",
    "measure_fc_speed",
    "measure_lanes",
    "measure_speeds",
    "time_lane_step",
    "time_lanes",
]
