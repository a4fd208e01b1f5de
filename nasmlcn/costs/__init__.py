"""Cost models (pure Python): per-lane FLOPs, parameters, memory, step time and
per-image inference time.

Built-ins: ``analytic`` (default, from the layer shapes), ``thesis`` (equations
5.1 and 6.1 as published), ``calibrated`` (fitted to this machine by
``nasmlcn calibrate``) and ``capsacc`` (the CapsAcc accelerator of NASCaps, the
cost model of ``--devices capsacc``). :func:`get_cost_model` builds one by name.
``TARGETS`` holds the accelerators ``nasmlcn estimate --target`` models per layer.
The calibration's pure-Python parts live here too (lane samples, the fit, the scores,
the calibration file); :mod:`nasmlcn.measure` takes the measurements.
"""

from __future__ import annotations

from typing import Any

from nasmlcn.costs import _analytic, _calibrated, _capsacc, _thesis
from nasmlcn.costs._analytic import AnalyticCostModel
from nasmlcn.costs._base import (
    COST_MODELS,
    INFERENCE_BATCH_SIZE,
    CostModel,
    HeadCost,
    LaneCost,
    ModelCost,
)
from nasmlcn.costs._calibrated import CalibratedCostModel
from nasmlcn.costs._calibration_file import Calibration, default_calibration_path
from nasmlcn.costs._capsacc import (
    CAPSACC,
    CapsAcc,
    CapsAccEstimate,
    CapsAccLayer,
    LayerEstimate,
    estimate_capsacc,
    estimate_capsacc_layers,
    mlcn_energy_j,
)
from nasmlcn.costs._capsacc import (
    LAYER_KINDS as CAPSACC_LAYER_KINDS,
)
from nasmlcn.costs._context import CostContext
from nasmlcn.costs._devices import devices_cost_model
from nasmlcn.costs._fit import cross_validated, fit_calibration
from nasmlcn.costs._host import MEMORY_METHODS, relative_speeds
from nasmlcn.costs._profile import HeadProfile, LaneProfile, head_profile, lane_profile
from nasmlcn.costs._samples import (
    MIN_LANES,
    LaneSample,
    ModelSample,
    calibration_lanes,
    calibration_models,
)
from nasmlcn.costs._scoring import Score, score_cost_model, score_predictions
from nasmlcn.costs._targets import TARGETS, Target
from nasmlcn.costs._whole import (
    MODEL_TIME_FEATURES,
    cross_validated_times,
    fit_model_time,
    model_time_features,
    time_agreement,
    whole_model_features,
)

DEFAULT_COST_MODEL = "analytic"

__all__ = [
    "CAPSACC",
    "CAPSACC_LAYER_KINDS",
    "COST_MODELS",
    "DEFAULT_COST_MODEL",
    "INFERENCE_BATCH_SIZE",
    "MEMORY_METHODS",
    "MIN_LANES",
    "MODEL_TIME_FEATURES",
    "TARGETS",
    "AnalyticCostModel",
    "CalibratedCostModel",
    "Calibration",
    "CapsAcc",
    "CapsAccEstimate",
    "CapsAccLayer",
    "CostContext",
    "CostModel",
    "HeadCost",
    "HeadProfile",
    "LaneCost",
    "LaneProfile",
    "LaneSample",
    "LayerEstimate",
    "ModelCost",
    "ModelSample",
    "Score",
    "Target",
    "calibration_lanes",
    "calibration_models",
    "cross_validated",
    "cross_validated_times",
    "default_calibration_path",
    "devices_cost_model",
    "estimate_capsacc",
    "estimate_capsacc_layers",
    "fit_calibration",
    "fit_model_time",
    "get_cost_model",
    "head_profile",
    "lane_profile",
    "mlcn_energy_j",
    "model_time_features",
    "relative_speeds",
    "score_cost_model",
    "score_predictions",
    "time_agreement",
    "whole_model_features",
]


def get_cost_model(name: str = DEFAULT_COST_MODEL, **options: Any) -> CostModel:
    """The cost model registered as ``name``, built with ``options``.

    Raises:
        UnknownNameError: No such model (with "did you mean").
    """
    return COST_MODELS.get(name)(**options)
