"""How long the search will take, said before its first trial.

From this machine's calibration where there is one for the device the trials train
on (``nasmlcn calibrate``: its whole-model step time, measured with as many threads
and for the same images), else a short timing on that device. Models are drawn from
the search space (seeded, so always the same ones: the first trials of a search are
random ones). With a calibration, each drawn model's step is predicted and nothing
is timed. Otherwise the two at the first and third quartile of training FLOPs are
timed for a few training steps as training runs them
(:func:`nasmlcn.measure.time_model_step`: fused lanes, both losses, Adam) at the
search's batch size; a step's time is then a fixed part plus a part per FLOP (the
line through the two timings: small models are bound by what a step pays whatever
its size), averaged over the drawn models. A search of fewer than
:data:`FEW_STEPS` training steps times one model instead.
A trial is its epochs of training steps over the training images it uses, the
validation passes (a forward pass costs about a third of a training step per image)
and what a trial pays besides (building, measuring its inference, writing its
files: :data:`TRIAL_OVERHEAD_S`). The whole search is that times the trials left,
shared out over the workers. With pruning on it is an upper bound: a pruned trial
stops early. Only the ``train`` evaluator's trials are forecast (the proxy's take
milliseconds)."""

from __future__ import annotations

import functools
import logging
import math
import statistics
from dataclasses import asdict, dataclass, replace
from typing import TYPE_CHECKING, Any

from nasmlcn._text import counted
from nasmlcn.search._prepare.setup import SearchSetup

if TYPE_CHECKING:
    from nasmlcn.costs import Calibration

log = logging.getLogger(__name__)

DRAWS = 16
"""Models drawn from the space: two are timed, all are averaged over."""

TRIAL_OVERHEAD_S = 1.5
"""Seconds a trial spends outside its epochs on a CPU: building and placing the model,
timing its inference after training, writing its checkpoint and record (measured:
``scripts/quickstart.sh``'s trials, 1.2 to 1.8 s)."""

FEW_STEPS = 20
"""Below this many training steps in all (the trials left, their epochs and batches),
the forecast times one model (the median of the drawn models' FLOPs; a warm-up and a
step) and scales it to the others by their FLOPs: timing two models (4 steps) would
cost more than a fifth of the training it forecasts."""

EVAL_SHARE = 1 / 3
"""A validation image's forward pass, as a share of a training step's time per image."""


@dataclass(frozen=True)
class Forecast:
    """The predicted time of a trial and of the trials left, on ``device``."""

    trial_seconds: float
    total_seconds: float
    trials: int  # trials left to run
    workers: int
    device: str
    model: str  # the larger timed model
    step_seconds: float  # a training step at the search's batch size, averaged
    upper_bound: bool  # pruning is on: trials may stop early
    source: str = "timed steps of the space's models"  # or "the calibration of DATE"
    # what other processes held while it timed (nasmlcn.hardware.busy_record); the
    # figure is unreliable where they held half a core or more
    machine_load: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def line(self) -> str:
        """One line for the display: ``predicted: about 12 s a trial, 2.1 min for
        the 10 trials left on cpu``."""
        bound = " at most" if self.upper_bound else ""
        shared = f" over {self.workers} workers" if self.workers > 1 else ""
        from nasmlcn.hardware import crowded_record

        busy = crowded_record(self.machine_load)
        crowded = (
            f"; unreliable: timed while other processes held {busy:.1f} cores"
            if busy is not None
            else ""
        )
        return (
            f"predicted:{bound} about {_duration(self.trial_seconds)} a trial, "
            f"{_duration(self.total_seconds)} for the {counted(self.trials, 'trial')} left"
            f"{shared} on "
            f"{self.device} (from {self.source}"
            + ("; pruning may stop trials earlier" if self.upper_bound else "")
            + crowded
            + ")"
        )


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def forecast_search(setup: SearchSetup, trials_left: int, workers: int = 1) -> Forecast | None:
    """The forecast of ``trials_left`` trials of ``setup`` (None: nothing to forecast:
    no trial left, an evaluator that trains nothing, or no model the space builds)."""
    config = setup.config
    if trials_left <= 0 or config.evaluator != "train" or not setup.needs_training:
        return None
    drawn = _drawn_models(setup)
    if not drawn:
        return None
    from nasmlcn.parallel import parse_run_on
    from nasmlcn.training import resolve_device

    device = resolve_device(parse_run_on(config.run_on)[0])
    ctx = setup.space_context.cost_context
    sizes = setup.dataset.split_sizes() or (config.train_limit or 0, config.val_limit or 0)
    train = config.train_limit or sizes[0]
    val = config.val_limit or sizes[1]
    steps_per_epoch = math.ceil(train / config.batch_size)
    if 0 < train < ctx.batch_size:  # each epoch is one batch of every training image
        ctx = replace(ctx, batch_size=train)
    calibration = calibration_for(setup, device.type)
    looked = None
    if calibration is None:  # timed here: fewer threads beside other processes, and marked
        from nasmlcn.training import share_cores

        looked = share_cores("timing for the forecast", device)
    if calibration is not None:
        step = statistics.fmean(
            calibration.model_local_seconds(lanes, ctx, head_lanes=len(lanes)) or 0.0
            for _, lanes in drawn
        )
        source = f"the calibration of {calibration.created[:10] or 'unknown date'}"
    elif trials_left * config.epochs * steps_per_epoch < FEW_STEPS:
        step = _one_timed_step(drawn, ctx, str(device))
        source = "a timed step of one of the space's models"
    else:
        step = _timed_step(drawn, ctx, str(device))
        source = Forecast.source
    lanes = drawn[(3 * len(drawn)) // 4][1]
    per_epoch = steps_per_epoch * step
    per_epoch += val * (step / ctx.batch_size) * EVAL_SHARE
    trial = config.epochs * per_epoch + TRIAL_OVERHEAD_S
    total = trial * trials_left / max(1, workers)
    from nasmlcn.specs import format_lane_mix

    return Forecast(
        trial_seconds=trial,
        total_seconds=total,
        trials=trials_left,
        workers=workers,
        device=str(device),
        model=format_lane_mix(lanes),
        step_seconds=step,
        upper_bound=config.prune,
        source=source,
        machine_load=None if looked is None else _busy_record(looked),
    )


def _busy_record(looked: Any) -> dict[str, Any]:
    """The most cores other processes held before or while the steps were timed."""
    from nasmlcn.hardware import busy_record, look_at_load

    return busy_record(looked, look_at_load())


def _one_timed_step(drawn: list[tuple[int, tuple[Any, ...]]], ctx: Any, device: str) -> float:
    """The drawn models' mean step time, from one timed step of the median one,
    scaled to each by its FLOPs."""
    flops, lanes = drawn[len(drawn) // 2]
    seconds = _step_seconds(lanes, ctx, device)
    return statistics.fmean(seconds * f / flops if flops else seconds for f, _ in drawn)


def _timed_step(drawn: list[tuple[int, tuple[Any, ...]]], ctx: Any, device: str) -> float:
    """The drawn models' mean step time, from the line through two of them timed."""
    low, high = drawn[len(drawn) // 4], drawn[(3 * len(drawn)) // 4]
    timed = [(f, _step_seconds(lanes, ctx, device)) for f, lanes in (low, high)]
    (f0, t0), (f1, t1) = timed
    per_flop = max(0.0, (t1 - t0) / (f1 - f0)) if f1 > f0 else 0.0
    fixed = max(0.0, t0 - per_flop * f0) if f1 > f0 else (t0 + t1) / 2
    return statistics.fmean(fixed + per_flop * f for f, _ in drawn)


def calibration_for(setup: SearchSetup, device_type: str) -> Calibration | None:
    """The calibration that predicts this search's steps, or None: the search's own
    cost model's, else the default file's (``nasmlcn calibrate``), if it measured whole
    models on this host's ``device_type`` with the threads training has now, for the
    search's images (shape, classes, routing)."""
    from nasmlcn.costs import CalibratedCostModel, Calibration, default_calibration_path
    from nasmlcn.errors import CalibrationError

    if isinstance(setup.cost_model, CalibratedCostModel):
        calibration = setup.cost_model.calibration
    else:
        path = default_calibration_path()
        if not path.is_file():
            return None
        try:
            calibration = Calibration.load(path)
        except CalibrationError as err:  # a broken file is calibrate's to report
            log.debug("forecast: calibration not used: %s", err)
            return None
    import socket

    import torch

    fits = (
        bool(calibration.model_time_coefficients)
        and calibration.device_type == device_type
        and calibration.hostname in ("", socket.gethostname())
        and (device_type != "cpu" or calibration.threads == torch.get_num_threads())
        and calibration.measured_for(setup.space_context.cost_context)
    )
    return calibration if fits else None


@functools.lru_cache(maxsize=64)
def _step_seconds(lanes: tuple[Any, ...], ctx: Any, device: str) -> float:
    """A training step of ``lanes`` on ``device``, timed once a process: a search run
    again in the same process (a sweep, a notebook) forecasts without timing again."""
    from nasmlcn.measure import time_model_step

    return time_model_step(lanes, ctx, device, steps=1, warmup=1)


def _drawn_models(setup: SearchSetup) -> list[tuple[int, tuple[Any, ...]]]:
    """:data:`DRAWS` models drawn from the space (those it marks infeasible left out)
    as (training FLOPs, lanes), fewest FLOPs first."""
    import optuna

    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    distributions = setup.space.distributions()
    ctx = setup.space_context.cost_context
    drawn = []
    for _ in range(DRAWS):
        candidate = setup.space.build(study.ask(distributions).params, setup.space_context)
        if candidate.feasible:
            flops = setup.cost_model.costs(candidate.spec.lanes, ctx).train_flops
            drawn.append((flops, tuple(candidate.spec.lanes)))
    return sorted(drawn, key=lambda d: d[0])
