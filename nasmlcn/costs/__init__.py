"""Cost models (pure Python): per-lane FLOPs, parameters, memory, step time and
per-image inference time.

Built-ins: ``analytic`` (default, from the layer shapes), ``thesis`` (equations
5.1 and 6.1 as published) and ``calibrated`` (fitted to this machine by
``nasmlcn calibrate``). :func:`get_cost_model` builds one by name.
"""

from __future__ import annotations

from typing import Any

from nasmlcn.costs import _analytic, _calibrated, _thesis  # noqa: F401  (register built-ins)
from nasmlcn.costs._base import (
    COST_MODELS,
    INFERENCE_BATCH_SIZE,
    CostModel,
    HeadCost,
    LaneCost,
    ModelCost,
)
from nasmlcn.costs._context import CostContext
from nasmlcn.costs._profile import HeadProfile, LaneProfile, head_profile, lane_profile

DEFAULT_COST_MODEL = "analytic"

__all__ = [
    "COST_MODELS",
    "DEFAULT_COST_MODEL",
    "INFERENCE_BATCH_SIZE",
    "CostContext",
    "CostModel",
    "HeadCost",
    "HeadProfile",
    "LaneCost",
    "LaneProfile",
    "ModelCost",
    "get_cost_model",
    "head_profile",
    "lane_profile",
]


def get_cost_model(name: str = DEFAULT_COST_MODEL, **options: Any) -> CostModel:
    """The cost model registered as ``name``, built with ``options``.

    Raises:
        UnknownNameError: No such model (with "did you mean").
    """
    return COST_MODELS.get(name)(**options)
