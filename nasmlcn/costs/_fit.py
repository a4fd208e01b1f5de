"""Fitting the calibrated cost model to measured lanes, and cross-validating the fit.

Time and memory are fitted by non-negative least squares on the relative error
(:func:`nasmlcn.stats.fit_relative`); memory is then scaled up by the smallest
factor under which no lane is under-predicted (see :mod:`nasmlcn.costs._calibrated`).
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from nasmlcn.costs._calibration_file import Calibration
from nasmlcn.costs._context import CostContext
from nasmlcn.costs._features import dot, memory_features, time_features
from nasmlcn.costs._host import host_facts
from nasmlcn.costs._samples import LaneSample, ModelSample
from nasmlcn.costs._whole import fit_model_time, whole_model_features
from nasmlcn.errors import CalibrationError
from nasmlcn.stats import fit_relative


@dataclass(frozen=True)
class Fit:
    """Fitted coefficients (see :func:`fit_samples`)."""

    time_coefficients: tuple[float, ...]
    memory_coefficients: tuple[float, ...]
    memory_envelope: float


def fit_samples(samples: Sequence[LaneSample], ctx: CostContext) -> Fit:
    """Fits the time and memory models to ``samples`` measured in ``ctx``.

    Raises:
        CalibrationError: Fewer than 2 samples.
    """
    if len(samples) < 2:
        raise CalibrationError(f"need at least 2 measured lanes to fit, got {len(samples)}")
    t_rows = [time_features(s.lane, ctx) for s in samples]
    time_c = fit_relative(t_rows, [s.seconds for s in samples])
    m_rows = [memory_features(s.lane, ctx) for s in samples]
    mem_c = fit_relative(m_rows, [float(s.peak_bytes) for s in samples])
    predicted = [dot(mem_c, row) for row in m_rows]
    # The smallest factor that lifts every sample's prediction to its measurement.
    envelope = max(
        [1.0]
        + [s.peak_bytes / p if p > 0 else math.inf for s, p in zip(samples, predicted, strict=True)]
    )
    if not math.isfinite(envelope):
        raise CalibrationError("the memory fit predicts 0 bytes for a measured lane")
    return Fit(tuple(time_c), tuple(c * envelope for c in mem_c), envelope)


def fit_calibration(
    samples: Sequence[LaneSample],
    ctx: CostContext,
    *,
    device: str,
    speed: float,
    threads: int,
    model_samples: Sequence[ModelSample] = (),
    **facts: Any,
) -> Calibration:
    """A :class:`Calibration` fitted to ``samples``.

    Args:
        samples: Lanes measured on ``device`` in ``ctx``.
        ctx: Their context.
        device: Torch device name.
        speed: The device's relative speed (K80 = 1.0).
        threads: Torch threads during the measurements.
        model_samples: Whole models measured on ``device`` in ``ctx``: the
            whole-model step time is fitted to them (none: lane sums are used).
        **facts: Other :class:`Calibration` fields (speeds, host, torch version);
            ``created``, ``hostname`` and ``cpu_model`` default to now and this host.
    """
    fit = fit_samples(samples, ctx)
    model_coefficients: tuple[float, ...] = ()
    if model_samples:
        device_type = device.split(":")[0]
        rows = [whole_model_features(m.lanes, ctx, device_type) for m in model_samples]
        try:
            model_coefficients = tuple(fit_model_time(rows, [m.seconds for m in model_samples]))
        except ValueError as err:
            raise CalibrationError(str(err)) from None
    defaults: dict[str, Any] = {
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        **host_facts(),
    }
    return Calibration(
        device=device,
        speed=speed,
        context=ctx,
        threads=threads,
        time_coefficients=fit.time_coefficients,
        memory_coefficients=fit.memory_coefficients,
        memory_envelope=fit.memory_envelope,
        samples=tuple(samples),
        model_time_coefficients=model_coefficients,
        model_samples=tuple(model_samples),
        **{**defaults, **facts},
    )


def cross_validated(
    calibration: Calibration, folds: int = 5, seed: int = 0
) -> tuple[list[float], list[int]]:
    """Held-out predictions for every sample of ``calibration`` (k-fold).

    Each fold is predicted by a model fitted (envelope included) on the other
    folds only: the figure to quote, since in-sample figures flatter the fit.

    Returns:
        Predicted local seconds and peak bytes, in sample order.
    """
    samples = calibration.samples
    n = len(samples)
    if n < 3:
        raise CalibrationError(f"cross-validation needs at least 3 samples, got {n}")
    k = max(2, min(folds, n))
    order = list(range(n))
    random.Random(seed).shuffle(order)
    seconds = [0.0] * n
    peaks = [0] * n
    ctx = calibration.context
    for f in range(k):
        held = set(order[f::k])
        fit = fit_samples([samples[i] for i in range(n) if i not in held], ctx)
        model = replace(
            calibration,
            time_coefficients=fit.time_coefficients,
            memory_coefficients=fit.memory_coefficients,
            memory_envelope=fit.memory_envelope,
        )
        for i in held:
            seconds[i] = model.local_seconds(samples[i].lane, ctx)
            peaks[i] = model.memory_bytes(samples[i].lane, ctx)
    return seconds, peaks
