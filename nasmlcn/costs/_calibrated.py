"""The ``calibrated`` cost model: fitted to lanes measured on this machine.

``nasmlcn calibrate`` measures a sample of random lanes on one local device (step
time and peak training memory, see :mod:`nasmlcn.measure`), fits the two linear
models below to them and saves a :class:`Calibration` file. This module is pure
Python (numpy only while fitting); it never imports torch.

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

**Head.** The class capsules and decoder are not measured; their cost applies
the lane coefficients to the head's arithmetic (FLOPs, parameters, values kept
for backward, three linear layers), without the per-step constant (which each
measured lane already carries).

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

import json
import logging
import math
import os
import platform
import random
import socket
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
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
from nasmlcn.costs._context import ADAM_STATES, BYTES_PER_VALUE, CostContext
from nasmlcn.costs._profile import head_profile, lane_profile
from nasmlcn.costs._stats import Agreement, agreement, fit_relative
from nasmlcn.errors import CalibrationError, NasmlcnError
from nasmlcn.specs import LaneSpec, parse_lane, write_text_atomic
from nasmlcn.specs._layers import executed_convs

log = logging.getLogger(__name__)

SCHEMA_VERSION = 1
CALIBRATION_ENV = "NASMLCN_CALIBRATION"
MIN_LANES = 20
"""Lanes ``nasmlcn calibrate`` measures at least (the thesis fitted eq. 5.1 to ~25)."""

LANE_TYPES = ("mlcn1", "mlcn2")
MAX_WIDTH = 5
MAX_DEPTH = 5

TIME_FEATURES = ("train_flops", "params", "feature_values", "capsules", "layers", "one")
"""Step time = sum of non-negative coefficients times:

* ``train_flops``: forward + backward FLOPs of the step: the arithmetic;
* ``params``: Adam's update and the gradient reset touch every weight once a step;
* ``feature_values``: batch x convolution output values: element-wise passes
  (ReLU and its backward) and the memory traffic of reading the maps;
* ``capsules``: batch x primary capsules: squash, votes and routing are many
  small element-wise operations per capsule;
* ``layers``: executed convolutions: a fixed dispatch/launch cost per layer
  (what dominates on a GPU for lanes this small);
* ``one``: fixed cost per step (Python, the loss, the optimizer's bookkeeping).

The fit keeps only the terms the measurements support (the others get 0): on
the development CPU, FLOPs, parameters, layers and the constant.
"""

MEMORY_FEATURES = ("state_bytes", "feature_bytes", "capsules", "one")
"""Peak memory = sum of non-negative coefficients times:

* ``state_bytes``: weights, gradients and Adam's two moments (16 bytes/param);
* ``feature_bytes``: the batch of images and every convolution output map,
  float32 (kept for backward);
* ``capsules``: batch x primary capsules: the capsule tensors (squashed
  capsules, votes, routing temporaries and their gradients), whose size per
  capsule depends on the routing and the number of classes;
* ``one``: fixed scratch (convolution library workspaces, small buffers).
"""

INFERENCE_DROPPED = ("params", "one")
"""Time features of a training step that a forward pass does not have."""

HEAD_FORWARD_SHARE = 1 / 3
"""The forward pass's share of the head's training time (train FLOPs = 3x forward)."""

MEMORY_METHODS = {
    "cpu": "resident-set growth of a fresh process (VmHWM), glibc mmap threshold fixed",
    "cuda": "torch.cuda.max_memory_allocated above what was allocated before",
}


# ---- samples and features -----------------------------------------------------------


@dataclass(frozen=True)
class LaneSample:
    """One measured lane.

    Attributes:
        lane: The lane.
        seconds: Measured training step time on the calibration device.
        peak_bytes: Measured peak training memory (see the module docstring).
    """

    lane: LaneSpec
    seconds: float
    peak_bytes: int

    def __post_init__(self) -> None:
        if not (isinstance(self.seconds, (int, float)) and math.isfinite(self.seconds)):
            raise CalibrationError(f"sample {self.lane}: seconds must be a number")
        if self.seconds <= 0 or self.peak_bytes <= 0:
            raise CalibrationError(
                f"sample {self.lane}: seconds and peak_bytes must be > 0, "
                f"got {self.seconds!r} and {self.peak_bytes!r}"
            )

    def to_dict(self) -> dict[str, Any]:
        return {"lane": str(self.lane), "seconds": self.seconds, "peak_bytes": self.peak_bytes}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> LaneSample:
        return cls(parse_lane(str(data["lane"])), float(data["seconds"]), int(data["peak_bytes"]))


def _layer_count(lane: LaneSpec, ctx: CostContext) -> int:
    return len(executed_convs(lane.layout(ctx.input_shape).convs))


def time_features(lane: LaneSpec, ctx: CostContext) -> list[float]:
    """The values of ``TIME_FEATURES`` for ``lane`` at ``ctx.batch_size``."""
    p = lane_profile(lane, ctx)
    b = ctx.batch_size
    return [
        float(p.train_flops_per_step(b)),
        float(p.params),
        float(b * p.feature_values),
        float(b * p.num_primary),
        float(_layer_count(lane, ctx)),
        1.0,
    ]


def memory_features(lane: LaneSpec, ctx: CostContext) -> list[float]:
    """The values of ``MEMORY_FEATURES`` for ``lane`` at ``ctx.batch_size``."""
    p = lane_profile(lane, ctx)
    b = ctx.batch_size
    image = ctx.input_shape[0] * ctx.input_shape[1] * ctx.input_shape[2]
    return [
        float((2 + ADAM_STATES) * p.params * BYTES_PER_VALUE),
        float(b * (image + p.feature_values) * BYTES_PER_VALUE),
        float(b * p.num_primary),
        1.0,
    ]


def _head_time_features(num_lanes: int, ctx: CostContext) -> list[float]:
    h = head_profile(num_lanes, ctx)
    b = ctx.batch_size
    layers = 0 if ctx.decoder == "none" else 3
    return [
        float(h.train_flops * b),
        float(h.params),
        float(b * h.saved_values),
        float(b * ctx.num_classes),
        float(layers),
        0.0,
    ]


def _head_memory_features(num_lanes: int, ctx: CostContext) -> list[float]:
    h = head_profile(num_lanes, ctx)
    return [
        float((2 + ADAM_STATES) * h.params * BYTES_PER_VALUE),
        float(ctx.batch_size * h.saved_values * BYTES_PER_VALUE),
        0.0,
        0.0,
    ]


def _dot(coefficients: Sequence[float], features: Sequence[float]) -> float:
    return math.fsum(c * f for c, f in zip(coefficients, features, strict=True))


def calibration_lanes(
    count: int, seed: int = 0, *, max_width: int = MAX_WIDTH, max_depth: int = MAX_DEPTH
) -> list[LaneSpec]:
    """``count`` random lanes (type, width 1..max_width, depth 1..max_depth), seeded.

    Distinct lanes while the space lasts (50 by default), then repeats.
    """
    if count < 1:
        raise ValueError(f"count must be >= 1, got {count}")
    space = [
        LaneSpec(t, w, d)
        for t in LANE_TYPES
        for w in range(1, max_width + 1)
        for d in range(1, max_depth + 1)
    ]
    rng = random.Random(seed)
    out: list[LaneSpec] = []
    while len(out) < count:
        out += rng.sample(space, min(len(space), count - len(out)))
    return out


# ---- device speeds --------------------------------------------------------------------


def relative_speeds(
    fc_flops: Mapping[str, float], anchor: str, anchor_speed: float
) -> dict[str, float]:
    """Each device's speed (K80 = 1.0) from its FC FLOP/s, relative to ``anchor``.

    Args:
        fc_flops: Measured FC training FLOP/s by device name.
        anchor: The device whose speed is known.
        anchor_speed: Its speed (its catalog kind's).
    """
    if anchor not in fc_flops:
        raise ValueError(f"anchor {anchor!r} was not measured ({', '.join(fc_flops)})")
    if anchor_speed <= 0 or any(v <= 0 for v in fc_flops.values()):
        raise ValueError("speeds and FLOP/s must be > 0")
    return {name: anchor_speed * flops / fc_flops[anchor] for name, flops in fc_flops.items()}


# ---- the calibration file -------------------------------------------------------------


def default_calibration_path() -> Path:
    """``$NASMLCN_CALIBRATION``, else ``~/.cache/nasmlcn/calibration.json``."""
    env = os.environ.get(CALIBRATION_ENV)
    if env:
        return Path(env)
    return Path.home() / ".cache" / "nasmlcn" / "calibration.json"


def host_facts() -> dict[str, str]:
    """Host name and CPU model, recorded in a calibration."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {"hostname": socket.gethostname(), "cpu_model": cpu}


def _check_coefficients(
    name: str, features: tuple[str, ...], known: tuple[str, ...], values: tuple[float, ...]
) -> None:
    if features != known:
        raise CalibrationError(
            f"{name} features {list(features)} are not this version's {list(known)}"
        )
    if len(values) != len(known):
        raise CalibrationError(f"{name} needs {len(known)} coefficients, got {len(values)}")
    for f, v in zip(features, values, strict=True):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
            raise CalibrationError(f"{name} coefficient of {f!r} must be a number >= 0, got {v!r}")


@dataclass(frozen=True)
class Calibration:
    """What ``nasmlcn calibrate`` measured and fitted on one machine.

    Attributes:
        device: Torch device the lanes were measured on (``cpu``, ``cuda:0``).
        speed: That device's relative speed (K80 = 1.0): local seconds times
            ``speed`` are speed-1.0 seconds.
        context: Input shape, classes, routing and batch size of the lanes.
        threads: Torch intra-op threads during the measurements.
        clock: ``wall`` (elapsed time) or ``cpu`` (process CPU time, 1 thread).
        time_coefficients: Seconds per unit of each of ``TIME_FEATURES``.
        memory_coefficients: Bytes per unit of each of ``MEMORY_FEATURES``,
            envelope included.
        memory_envelope: The factor (>= 1) the least-squares memory fit was
            scaled by so that no sample is under-predicted.
        samples: The measured lanes.
        fc_flops_per_second: The FC network's training FLOP/s per device.
        device_speeds: Relative speed per measured device.
        speed_anchor: Which catalog figure the speeds hang on, in words.
        device_description: The device's model name.
        memory_method: How peak memory was measured, in words.
        created: ISO 8601 UTC time of the calibration.
        hostname: Host name.
        cpu_model: CPU model name.
        torch_version: ``torch.__version__`` at measurement time.
        load_average: The highest 1-minute load average seen around the
            timings (other processes inflate them; None where unknown).
        time_features: Names of the time features (``TIME_FEATURES``).
        memory_features: Names of the memory features (``MEMORY_FEATURES``).
        schema_version: File format version.
    """

    device: str
    speed: float
    context: CostContext
    threads: int
    time_coefficients: tuple[float, ...]
    memory_coefficients: tuple[float, ...]
    memory_envelope: float = 1.0
    samples: tuple[LaneSample, ...] = ()
    fc_flops_per_second: dict[str, float] = field(default_factory=dict)
    device_speeds: dict[str, float] = field(default_factory=dict)
    speed_anchor: str = ""
    device_description: str = ""
    memory_method: str = ""
    created: str = ""
    hostname: str = ""
    cpu_model: str = ""
    torch_version: str = ""
    clock: str = "wall"
    load_average: float | None = None
    time_features: tuple[str, ...] = TIME_FEATURES
    memory_features: tuple[str, ...] = MEMORY_FEATURES
    schema_version: int = SCHEMA_VERSION

    def __post_init__(self) -> None:
        for name in (
            "time_coefficients",
            "memory_coefficients",
            "time_features",
            "memory_features",
            "samples",
        ):
            object.__setattr__(self, name, tuple(getattr(self, name)))
        if self.schema_version != SCHEMA_VERSION:
            raise CalibrationError(
                f"schema version {self.schema_version!r} is not {SCHEMA_VERSION} "
                "(run 'nasmlcn calibrate' again)"
            )
        if (
            not isinstance(self.speed, (int, float))
            or not math.isfinite(self.speed)
            or self.speed <= 0
        ):
            raise CalibrationError(f"speed must be a number > 0, got {self.speed!r}")
        if isinstance(self.threads, bool) or not isinstance(self.threads, int) or self.threads < 1:
            raise CalibrationError(f"threads must be an integer >= 1, got {self.threads!r}")
        if self.clock not in ("wall", "cpu"):
            raise CalibrationError(f"clock must be 'wall' or 'cpu', got {self.clock!r}")
        if not math.isfinite(self.memory_envelope) or self.memory_envelope < 1:
            raise CalibrationError(f"memory_envelope must be >= 1, got {self.memory_envelope!r}")
        _check_coefficients("time", self.time_features, TIME_FEATURES, self.time_coefficients)
        _check_coefficients(
            "memory", self.memory_features, MEMORY_FEATURES, self.memory_coefficients
        )

    # -- predictions in the measured device's own units --

    def local_seconds(self, lane: LaneSpec, ctx: CostContext) -> float:
        """Predicted step time of ``lane`` on the calibration device, in seconds."""
        return _dot(self.time_coefficients, time_features(lane, ctx))

    def memory_bytes(self, lane: LaneSpec, ctx: CostContext) -> int:
        """Predicted peak training memory of ``lane``, in bytes."""
        return math.ceil(_dot(self.memory_coefficients, memory_features(lane, ctx)))

    # -- serialisation --

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": self.schema_version,
            "created": self.created,
            "hostname": self.hostname,
            "cpu_model": self.cpu_model,
            "torch_version": self.torch_version,
            "load_average": self.load_average,
            "device": self.device,
            "device_description": self.device_description,
            "threads": self.threads,
            "clock": self.clock,
            "context": self.context.to_dict(),
            "fc_flops_per_second": dict(self.fc_flops_per_second),
            "device_speeds": dict(self.device_speeds),
            "speed": self.speed,
            "speed_anchor": self.speed_anchor,
            "time_features": list(self.time_features),
            "time_coefficients": list(self.time_coefficients),
            "memory_method": self.memory_method,
            "memory_features": list(self.memory_features),
            "memory_coefficients": list(self.memory_coefficients),
            "memory_envelope": self.memory_envelope,
            "samples": [s.to_dict() for s in self.samples],
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)

    @classmethod
    def from_dict(cls, data: Any) -> Calibration:
        """A calibration from its dict.

        Raises:
            CalibrationError: Not a calibration, a newer schema, or a bad field.
        """
        if not isinstance(data, dict):
            raise CalibrationError(
                f"a calibration must be a JSON object, got {type(data).__name__}"
            )
        version = data.get("schema_version")
        if isinstance(version, int) and not isinstance(version, bool) and version > SCHEMA_VERSION:
            raise CalibrationError(
                f"schema version {version} is newer than this nasmlcn reads ({SCHEMA_VERSION}); "
                "upgrade nasmlcn or run 'nasmlcn calibrate' again"
            )
        try:
            ctx = dict(data["context"])
            ctx["input_shape"] = tuple(ctx["input_shape"])
            return cls(
                schema_version=version,  # type: ignore[arg-type]  # checked in __post_init__
                created=str(data.get("created", "")),
                hostname=str(data.get("hostname", "")),
                cpu_model=str(data.get("cpu_model", "")),
                torch_version=str(data.get("torch_version", "")),
                load_average=(
                    None if data.get("load_average") is None else float(data["load_average"])
                ),
                device=str(data["device"]),
                device_description=str(data.get("device_description", "")),
                threads=data["threads"],
                clock=str(data.get("clock", "wall")),
                context=CostContext(**ctx),
                fc_flops_per_second={
                    str(k): float(v) for k, v in data.get("fc_flops_per_second", {}).items()
                },
                device_speeds={str(k): float(v) for k, v in data.get("device_speeds", {}).items()},
                speed=data["speed"],
                speed_anchor=str(data.get("speed_anchor", "")),
                time_features=tuple(data["time_features"]),
                time_coefficients=tuple(data["time_coefficients"]),
                memory_method=str(data.get("memory_method", "")),
                memory_features=tuple(data["memory_features"]),
                memory_coefficients=tuple(data["memory_coefficients"]),
                memory_envelope=float(data.get("memory_envelope", 1.0)),
                samples=tuple(LaneSample.from_dict(s) for s in data.get("samples", [])),
            )
        except CalibrationError:
            raise
        except KeyError as err:
            raise CalibrationError(f"missing field {err.args[0]!r}") from None
        except (NasmlcnError, TypeError, ValueError, AttributeError) as err:
            raise CalibrationError(f"invalid field: {err}") from None

    @classmethod
    def from_json(cls, text: str) -> Calibration:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as err:
            raise CalibrationError(
                f"not valid JSON ({err.msg} at line {err.lineno} column {err.colno})"
            ) from None
        return cls.from_dict(data)

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Writes the calibration atomically (a crash leaves the old file intact)."""
        p = Path(path)
        try:
            write_text_atomic(p, self.to_json() + "\n")
        except OSError as err:
            raise CalibrationError(f"cannot write calibration file {str(p)!r}: {err}") from None
        return p

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Calibration:
        """Reads a calibration file.

        Raises:
            CalibrationError: Missing, unreadable, invalid or newer-schema file;
                the message names the file.
        """
        p = Path(path)
        try:
            text = p.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise CalibrationError(
                f"calibration file {str(p)!r} does not exist; run 'nasmlcn calibrate' to make it"
            ) from None
        except IsADirectoryError:
            raise CalibrationError(f"calibration file {str(p)!r} is a directory") from None
        except UnicodeDecodeError:
            raise CalibrationError(f"calibration file {str(p)!r} is not UTF-8 text") from None
        except OSError as err:
            raise CalibrationError(
                f"cannot read calibration file {str(p)!r}: {err.strerror}"
            ) from None
        try:
            return cls.from_json(text)
        except CalibrationError as err:
            raise CalibrationError(f"calibration file {str(p)!r}: {err}") from None


# ---- fitting ----------------------------------------------------------------------------


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
    predicted = [_dot(mem_c, row) for row in m_rows]
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
    **facts: Any,
) -> Calibration:
    """A :class:`Calibration` fitted to ``samples``.

    Args:
        samples: Lanes measured on ``device`` in ``ctx``.
        ctx: Their context.
        device: Torch device name.
        speed: The device's relative speed (K80 = 1.0).
        threads: Torch threads during the measurements.
        **facts: Other :class:`Calibration` fields (speeds, host, torch version);
            ``created``, ``hostname`` and ``cpu_model`` default to now and this host.
    """
    fit = fit_samples(samples, ctx)
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


# ---- the cost model ---------------------------------------------------------------------


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
        if (
            key != (ref.input_shape, ref.num_classes, ref.routing, ref.routing_iterations)
            and key not in self._warned
        ):
            self._warned.add(key)
            log.warning(
                "the calibration was measured for input %s, %d classes, %s routing x%d; "
                "predicting for %s, %d classes, %s routing x%d extrapolates",
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
        return LaneCost(
            lane=lane,
            memory_bytes=cal.memory_bytes(lane, ctx),
            time=cal.local_seconds(lane, ctx) * cal.speed,
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
        step = _dot(self.calibration.time_coefficients, features)
        return step * forward_share(lane_profile(lane, one), one) / INFERENCE_BATCH_SIZE

    def head_cost(self, num_lanes: int, ctx: CostContext) -> HeadCost:
        cal = self.calibration
        seconds = _dot(cal.time_coefficients, _head_time_features(num_lanes, ctx))
        memory = math.ceil(_dot(cal.memory_coefficients, _head_memory_features(num_lanes, ctx)))
        classify = replace(ctx, batch_size=INFERENCE_BATCH_SIZE, decoder="none")
        inference = _dot(cal.time_coefficients, _head_time_features(num_lanes, classify))
        return HeadCost(
            memory_bytes=memory,
            time=seconds * cal.speed,
            inference_time=inference * HEAD_FORWARD_SHARE * cal.speed / INFERENCE_BATCH_SIZE,
            **head_facts(num_lanes, ctx),
        )

    def describe(self) -> str:
        cal = self.calibration
        return f"calibrated on {cal.device} ({cal.device_description or 'unknown'}), {cal.created}"


# ---- judging a cost model against measurements -----------------------------------------


@dataclass(frozen=True)
class Score:
    """How a cost model's time and memory agree with measured lanes."""

    model: str
    time: Agreement
    memory: Agreement
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "time": self.time.to_dict(),
            "memory": self.memory.to_dict(),
            "note": self.note,
        }


def score_predictions(
    name: str,
    seconds: Sequence[float],
    peaks: Sequence[float],
    samples: Sequence[LaneSample],
    *,
    seconds_unit: bool = True,
    note: str = "",
) -> Score:
    """Agreement of predicted local seconds and peak bytes with ``samples``.

    ``seconds_unit=False`` marks predictions in another unit (eq. 5.1's
    ``w2d``): their raw percentage error is meaningless, only the scaled one.
    """
    return Score(
        name,
        agreement(seconds, [s.seconds for s in samples], same_unit=seconds_unit),
        agreement(peaks, [float(s.peak_bytes) for s in samples]),
        note,
    )


def score_cost_model(
    model: CostModel, samples: Sequence[LaneSample], ctx: CostContext, speed: float
) -> Score:
    """Agreement of ``model`` with lanes measured on a device of relative ``speed``.

    The model's speed-1.0 times are put on the device (divided by ``speed``)
    when the model's unit is seconds.
    """
    costs = [model.lane_cost(s.lane, ctx) for s in samples]
    in_seconds = model.time_unit == "s"
    seconds = [c.time / speed if in_seconds else c.time for c in costs]
    note = "" if in_seconds else f"time in {model.time_unit}: MAPE after the best single scale"
    return score_predictions(
        model.name,
        seconds,
        [float(c.memory_bytes) for c in costs],
        samples,
        seconds_unit=in_seconds,
        note=note,
    )
