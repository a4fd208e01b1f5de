"""The calibration pipeline behind ``nasmlcn calibrate``.

:func:`measure_calibration` resolves the devices, measures their FC speed and
the step time and peak memory of random lanes on one of them;
:func:`calibrate` then fits the ``calibrated`` cost model to those lanes, saves
it, and scores every cost model against the same measurements (the calibrated
one also by 5-fold cross-validation, its held-out figure).
``benchmarks/cost_model.py`` measures with :func:`measure_calibration` and fits
on its own train/test split.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import torch

from nasmlcn.costs import Calibration, CostContext, LaneSample, ModelSample, Score
from nasmlcn.errors import CalibrationError, option
from nasmlcn.hardware import LocalDevice, busy_record, look_at_load
from nasmlcn.measure._lane import measure_lanes
from nasmlcn.measure._lane_memory import PeakSettings
from nasmlcn.measure._lane_timing import StepTiming
from nasmlcn.measure._speed import DeviceSpeeds, measure_speeds

QUICK_LANES = 3
QUICK_MODELS = 3
"""Whole models ``--quick`` measures (at most 4 lanes each)."""
"""Lanes ``--quick`` needs at least (a smoke test, not a calibration to plan with)."""
QUICK_BATCH = 8
DEFAULT_BATCH = 100
CV_FOLDS = 5


@dataclass(frozen=True)
class CalibrationRequest:
    """What to measure and where to save the fit (``nasmlcn calibrate``'s options).

    Attributes:
        lanes: Random lanes to measure (:func:`calibrate` needs ``MIN_LANES``,
            or ``QUICK_LANES`` when ``quick``).
        seed: Seed of the random lanes, the timing and the cross-validation folds.
        batch_size: Training batch size (None: 100, or 8 when ``quick``).
        device: ``auto`` (first GPU, else cpu), ``cpu``, ``cuda[:N]`` or ``all``
            (FC speed of every local device; lanes on the auto device).
        routing: Lane routing (None: the default routing).
        out: Calibration file to write (None: the default calibration path).
        threads: Torch CPU threads (None: the usable cores).
        clock: ``wall`` or ``cpu`` (process CPU time: one thread on the cpu only).
        rounds: Interleaved timing rounds (the fastest step counts).
        quick: Smoke test: small lanes, batch 8, one short round.
        models: Random whole models to measure for the whole-model step time
            (:mod:`nasmlcn.costs._whole`; 0: none, lane sums are used; ``quick``:
            at most ``QUICK_MODELS`` of at most 4 lanes).
        input_shape: ``(C, H, W)`` of the images the lanes are measured on (the
            coefficients belong to it: a search on other images extrapolates).
        num_classes: Classes of the head the models are measured with.
        replace: Write over a calibration file already at ``out`` (else it is refused
            before anything is measured: another device's or settings' calibration,
            which the calibrated cost model may read, is not lost without a word).
    """

    lanes: int = 24
    seed: int = 0
    batch_size: int | None = None
    device: str = "auto"
    routing: str | None = None
    out: Path | None = None
    threads: int | None = None
    clock: str = "wall"
    rounds: int = 2
    quick: bool = False
    models: int = 24
    input_shape: tuple[int, int, int] = (1, 28, 28)
    num_classes: int = 10
    replace: bool = False


@dataclass(frozen=True)
class CalibrationMeasurements:
    """Measured speeds and lanes of one calibration run.

    Attributes:
        lane_device: The device the lanes ran on.
        speeds: FC speed of every measured device, lane device first.
        samples: Step time and peak memory of every lane, in order.
        context: The lanes' cost context (batch size, routing).
        threads: Torch CPU threads during the measurements.
        clock: ``wall`` or ``cpu``.
        load_average: Highest 1-minute load average seen (before and after).
        warnings: Reasons to distrust the figures, in words (a busy machine).
        model_samples: Step time of every whole model, in order.
    """

    lane_device: LocalDevice
    speeds: DeviceSpeeds
    samples: tuple[LaneSample, ...]
    context: CostContext
    threads: int
    clock: str
    load_average: float
    warnings: tuple[str, ...] = ()
    model_samples: tuple[ModelSample, ...] = ()

    @property
    def speed(self) -> float:
        """The lane device's relative speed (K80 = 1.0)."""
        return self.speeds.speeds[self.lane_device.name]

    @property
    def memory_method(self) -> str:
        from nasmlcn.costs import MEMORY_METHODS

        return MEMORY_METHODS["cuda" if self.lane_device.name.startswith("cuda") else "cpu"]


@dataclass(frozen=True)
class CalibrationReport:
    """A saved calibration and how every cost model scored against its lanes.

    Attributes:
        calibration: The fitted calibration, as saved.
        speeds: FC speed of every measured device.
        scores: ``analytic``, ``thesis``, ``calibrated`` (in-sample) and
            ``calibrated-cv`` (each lane predicted by a fit without it).
        path: Where the calibration was saved.
        seed: The request's seed.
        quick: Whether it was a ``--quick`` smoke test.
        warnings: Reasons to distrust the figures, in words.
        whole_models: How the whole-model step time agrees with the measured models
            (held out by cross-validation) and the analytic model's lane sums beside
            it; None without measured models.
    """

    calibration: Calibration
    speeds: DeviceSpeeds
    scores: tuple[Score, ...]
    path: Path
    seed: int
    quick: bool
    warnings: tuple[str, ...] = ()
    whole_models: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        """The JSON report of ``nasmlcn calibrate --json``."""
        calibration, speeds = self.calibration, self.speeds
        return {
            "calibration_file": str(self.path),
            "device": calibration.device,
            "device_description": calibration.device_description,
            "threads": calibration.threads,
            "clock": calibration.clock,
            "batch_size": calibration.context.batch_size,
            "routing": calibration.context.routing,
            "lanes": len(calibration.samples),
            "seed": self.seed,
            "quick": self.quick,
            "speeds": {
                r.device: {
                    "fc_flops_per_second": r.flops_per_second,
                    "speed": speeds.speeds[r.device],
                }
                for r in speeds.results
            },
            "speed_anchor": speeds.anchor,
            "memory_method": calibration.memory_method,
            "load_average": calibration.load_average,
            "time_coefficients": dict(
                zip(calibration.time_features, calibration.time_coefficients, strict=True)
            ),
            "memory_coefficients": dict(
                zip(calibration.memory_features, calibration.memory_coefficients, strict=True)
            ),
            "memory_envelope": calibration.memory_envelope,
            "models": [s.to_dict() for s in self.scores],
            "samples": [s.to_dict() for s in calibration.samples],
            "whole_models": self.whole_models,
            "model_time_coefficients": dict(
                zip(
                    calibration.model_time_features,
                    calibration.model_time_coefficients,
                    strict=False,
                )
            ),
            "model_samples": [s.to_dict() for s in calibration.model_samples],
        }


def calibrate(
    request: CalibrationRequest, progress: Callable[[str, int, int], None] | None = None
) -> CalibrationReport:
    """Measures this machine, fits the calibrated cost model, saves it and scores
    every cost model against the measured lanes.

    Sets torch's CPU threads to ``request.threads`` (see :func:`measure_calibration`).

    Args:
        request: What to measure and where to save.
        progress: Called with ``(phase, done, total)`` while lanes are measured
            (phases ``time`` and ``memory``).

    Raises:
        CalibrationError: Too few lanes, a bad clock or device, or no device
            anchors the speed scale.
    """
    from nasmlcn._io import check_output_file
    from nasmlcn.costs import MIN_LANES, default_calibration_path, fit_calibration

    least = QUICK_LANES if request.quick else MIN_LANES
    if request.lanes < least:
        raise CalibrationError(
            f"{option('lanes')} must be at least {least} to fit and judge the models, got {request.lanes}"
        )
    if request.quick and request.out is None:  # a smoke test must not replace the real one
        raise CalibrationError(
            f"{option('quick')} is a smoke test, not a calibration to plan with: give "
            f"{option('out')} FILE for it "
            f"(without, it would replace {str(default_calibration_path())!r}, which the "
            "calibrated cost model reads)"
        )
    path = request.out or default_calibration_path()
    check_output_file(path, option("out"), CalibrationError)  # before minutes of measuring
    if path.exists() and not request.replace:
        raise CalibrationError(
            f"calibration file {str(path)!r} already exists; give another {option('out')} "
            f"FILE, or {option('replace')} to write over it"
        )
    measured = measure_calibration(request, progress)
    device = measured.lane_device
    calibration = fit_calibration(
        measured.samples,
        measured.context,
        device=device.name,
        speed=measured.speed,
        threads=measured.threads,
        clock=measured.clock,
        device_description=device.description,
        fc_flops_per_second=measured.speeds.fc_flops_per_second,
        device_speeds=measured.speeds.speeds,
        speed_anchor=measured.speeds.anchor,
        memory_method=measured.memory_method,
        torch_version=str(torch.__version__),
        load_average=measured.load_average,
        model_samples=measured.model_samples,
    )
    calibration.save(path)
    return CalibrationReport(
        calibration=calibration,
        speeds=measured.speeds,
        scores=_scores(calibration, request.seed),
        path=path,
        seed=request.seed,
        quick=request.quick,
        warnings=measured.warnings,
        whole_models=_whole_model_agreement(calibration, request.seed),
    )


def measure_calibration(
    request: CalibrationRequest, progress: Callable[[str, int, int], None] | None = None
) -> CalibrationMeasurements:
    """The FC speed of the request's devices and the step time and peak memory of
    ``request.lanes`` random lanes (:func:`nasmlcn.costs._samples.calibration_lanes`).

    Sets torch's CPU threads to ``request.threads`` (the usable cores if None)
    for the rest of the process, as the measurements ran with them.

    Raises:
        CalibrationError: A bad clock or device, or no device anchors the speed scale.
    """
    from nasmlcn.costs import calibration_lanes
    from nasmlcn.hardware import detect_devices, load_catalog, usable_cores
    from nasmlcn.specs import DEFAULT_ROUTING

    clock = request.clock
    if clock not in ("wall", "cpu"):
        raise CalibrationError(f"{option('clock')} must be wall or cpu, got {clock!r}")
    catalog = load_catalog()
    lane_device, devices = resolve_devices(request.device, detect_devices(catalog))
    threads = request.threads or usable_cores()
    if threads > usable_cores():  # the load it makes would be blamed on other processes
        raise CalibrationError(
            f"{option('threads')} {threads}: this process may use {usable_cores()} cores; give at most "
            f"{usable_cores()} (more threads than cores time the contention, not the lanes)"
        )
    if clock == "cpu" and (threads != 1 or lane_device.name != "cpu"):
        raise CalibrationError(
            f"{option('clock')} cpu times the cpu device with one thread: add "
            f"{option('threads')} 1 {option('device')} cpu"
        )
    quick = request.quick
    batch = request.batch_size or (QUICK_BATCH if quick else DEFAULT_BATCH)
    ctx = CostContext(
        input_shape=request.input_shape,
        num_classes=request.num_classes,
        batch_size=batch,
        routing=DEFAULT_ROUTING if request.routing is None else request.routing,
    )
    small = {"max_width": 2, "max_depth": 2} if quick else {}
    specs = calibration_lanes(request.lanes, request.seed, **small)
    timing = (
        StepTiming(warmup=1, repeats=2, min_seconds=0.0, rounds=1, clock=clock)
        if quick
        else StepTiming(rounds=request.rounds, clock=clock)
    )

    torch.set_num_threads(threads)
    looked = look_at_load()  # the threads are the request's; the look marks the figures
    load = _load_average()
    speeds = measure_speeds(devices, catalog, threads=threads, clock=clock, quick=quick)
    samples = measure_lanes(
        specs,
        ctx,
        lane_device.name,
        timing=timing,
        threads=threads,
        memory=PeakSettings(steps=2 if quick else 3, jobs=2),
        seed=request.seed,
        progress=progress,
    )
    models = _measure_models(request, ctx, lane_device.name, progress)
    load = max(load, _load_average())
    held = busy_record(looked, look_at_load())
    return CalibrationMeasurements(
        lane_device=lane_device,
        speeds=speeds,
        samples=tuple(samples),
        context=ctx,
        threads=threads,
        clock=clock,
        load_average=load,
        warnings=_busy_warnings(clock, held),
        model_samples=tuple(models),
    )


def _measure_models(
    request: CalibrationRequest,
    ctx: CostContext,
    device: str,
    progress: Callable[[str, int, int], None] | None,
) -> list[ModelSample]:
    """The step time of ``request.models`` random whole models on ``device``."""
    quick = request.quick
    count = min(request.models, QUICK_MODELS) if quick else request.models
    if not count:
        return []
    from nasmlcn.costs import calibration_models
    from nasmlcn.measure._model_timing import time_model_step

    models: list[ModelSample] = []
    for i, lanes in enumerate(
        calibration_models(count, request.seed, max_lanes=4 if quick else 64)
    ):
        seconds = time_model_step(
            lanes,
            ctx,
            device,
            steps=1 if quick else 2 * request.rounds,
            clock=request.clock,
            seed=request.seed,
        )
        models.append(ModelSample(lanes, seconds))
        if progress is not None:
            progress("models", i + 1, count)
    return models


def _busy_warnings(clock: str, held: dict[str, Any]) -> tuple[str, ...]:
    """A warning where other processes held cores while it measured (wall clock
    only: a thread's CPU time is immune)."""
    from nasmlcn.hardware import crowded_record

    others = crowded_record(held)
    if clock == "wall" and others is not None:
        return (
            f"other processes held {others:.1f} of {held['cores']} cores while it measured: "
            "they inflate step times, so these are unreliable; calibrate on an idle "
            "machine, or time one thread's CPU time with --threads 1 --clock cpu",
        )
    return ()


def resolve_devices(device: str, local: list[LocalDevice]) -> tuple[LocalDevice, list[LocalDevice]]:
    """The device the lanes run on and the devices whose FC speed is measured.

    The lane device comes first (it anchors the speed scale when it is in the
    catalog); when none measured is in the catalog, the cpu is added as anchor.

    Raises:
        CalibrationError: ``device`` is not a local device, ``auto`` or ``all``.
    """
    by_name = {d.name: d for d in local}
    gpus = [d for d in local if d.name.startswith("cuda")]
    name = device.strip().lower()
    if name in ("auto", "all"):
        lane_device = gpus[0] if gpus else by_name["cpu"]
    else:
        if name == "cuda":
            name = "cuda:0"
        if name not in by_name:
            raise CalibrationError(
                f"no device {device!r} here; local devices: {', '.join(by_name)} (or auto, all)"
            )
        lane_device = by_name[name]
    measured = [lane_device]
    if name == "all":
        measured += [d for d in local if d is not lane_device]
    if all(d.catalog_kind is None for d in measured):
        measured.append(by_name["cpu"])
    return lane_device, measured


def _scores(calibration: Calibration, seed: int) -> tuple[Score, ...]:
    """Every cost model against the calibration's own lanes, then the calibrated
    model cross-validated (each lane predicted by a fit without it)."""
    from nasmlcn.costs import (
        CalibratedCostModel,
        cross_validated,
        get_cost_model,
        score_cost_model,
        score_predictions,
    )

    samples, ctx, speed = calibration.samples, calibration.context, calibration.speed
    models = [get_cost_model("analytic"), get_cost_model("thesis")]
    scores = [score_cost_model(m, samples, ctx, speed) for m in models]
    # the lane fit on the lanes it was fitted to (the whole-model fit is judged on models)
    lane_fit = replace(calibration, model_time_coefficients=(), model_samples=())
    scores.append(score_cost_model(CalibratedCostModel(lane_fit), samples, ctx, speed))
    cv_seconds, cv_peaks = cross_validated(calibration, folds=CV_FOLDS, seed=seed)
    scores.append(
        score_predictions(
            "calibrated-cv",
            cv_seconds,
            cv_peaks,
            samples,
            note=f"{CV_FOLDS}-fold cross-validation: each lane predicted by a fit without it",
        )
    )
    return tuple(scores)


def _whole_model_agreement(calibration: Calibration, seed: int) -> dict[str, Any] | None:
    """The whole-model fit held out (each model predicted by a fit without it) and
    the analytic model's lane sums plus head, against the measured models."""
    from nasmlcn.costs import cross_validated_times, get_cost_model, time_agreement

    samples = calibration.model_samples
    if len(samples) < 3:
        return None
    ctx = calibration.context
    measured = [s.seconds for s in samples]
    held_out = cross_validated_times(
        [s.lanes for s in samples], measured, ctx, calibration.device_type, seed=seed
    )
    analytic = get_cost_model("analytic")
    lane_sums = [analytic.costs(s.lanes, ctx).time for s in samples]
    return {
        "models": len(samples),
        "calibrated_cv": time_agreement(held_out, measured),
        "analytic": time_agreement(lane_sums, measured),
    }


def _load_average() -> float:
    try:
        return os.getloadavg()[0]
    except OSError:  # not available on this system
        return 0.0
