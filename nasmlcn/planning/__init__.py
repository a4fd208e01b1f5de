"""Planning (pure Python): buckets (thesis Algorithm 4), the ``--flops`` limit, and
plans that place a model's lanes on target devices with predicted time and memory."""

from __future__ import annotations

from nasmlcn.planning._buckets import Bucket, baseline_load, load_limits, make_buckets
from nasmlcn.planning._flops import BASELINE_LANES, FlopsLimit, parse_flops
from nasmlcn.planning._plan import (
    HEAD_DEVICE,
    DevicePlan,
    Plan,
    compare_strategies,
    imbalance,
    placement_problem,
    plan_model,
)

__all__ = [
    "BASELINE_LANES",
    "HEAD_DEVICE",
    "Bucket",
    "DevicePlan",
    "FlopsLimit",
    "Plan",
    "baseline_load",
    "compare_strategies",
    "imbalance",
    "load_limits",
    "make_buckets",
    "parse_flops",
    "placement_problem",
    "plan_model",
]
