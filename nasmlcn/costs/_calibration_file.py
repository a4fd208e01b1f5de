"""The calibration file: what ``nasmlcn calibrate`` measured and fitted, one
versioned JSON schema, written and read through :class:`Calibration` only."""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from nasmlcn._io import parse_json, read_text_file, write_text_atomic
from nasmlcn._paths import cache_path
from nasmlcn._toml import check_keys
from nasmlcn.costs._context import CostContext
from nasmlcn.costs._features import (
    MEMORY_FEATURES,
    TIME_FEATURES,
    dot,
    memory_features,
    time_features,
)
from nasmlcn.costs._samples import LaneSample, ModelSample
from nasmlcn.costs._whole import MODEL_TIME_FEATURES, model_time_features
from nasmlcn.errors import CalibrationError, NasmlcnError, nested
from nasmlcn.specs import LaneSpec

SCHEMA_VERSION = 1
CALIBRATION_ENV = "NASMLCN_CALIBRATION"


def default_calibration_path() -> Path:
    """``$NASMLCN_CALIBRATION``, else ``~/.cache/nasmlcn/calibration.json``."""
    return cache_path(CALIBRATION_ENV, "calibration.json")


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
        model_time_coefficients: Seconds per unit of each of ``MODEL_TIME_FEATURES``:
            the whole-model step time (:mod:`nasmlcn.costs._whole`); empty in a
            calibration that measured no whole models (lane sums are used then).
        model_samples: The measured whole models.
        model_time_features: Names of the whole-model features.
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
    model_time_coefficients: tuple[float, ...] = ()
    model_samples: tuple[ModelSample, ...] = ()
    model_time_features: tuple[str, ...] = MODEL_TIME_FEATURES
    schema_version: int = SCHEMA_VERSION

    def __post_init__(self) -> None:
        for name in (
            "time_coefficients",
            "memory_coefficients",
            "time_features",
            "memory_features",
            "samples",
            "model_time_coefficients",
            "model_samples",
            "model_time_features",
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
        if self.model_time_coefficients:
            _check_coefficients(
                "whole-model time",
                self.model_time_features,
                MODEL_TIME_FEATURES,
                self.model_time_coefficients,
            )

    def measured_for(self, ctx: CostContext) -> bool:
        """Whether the lanes were measured for ``ctx``'s images: input shape, classes
        and routing (the batch size scales; anything else extrapolates)."""
        ref = self.context
        return (ctx.input_shape, ctx.num_classes, ctx.routing, ctx.routing_iterations) == (
            ref.input_shape,
            ref.num_classes,
            ref.routing,
            ref.routing_iterations,
        )

    @property
    def device_type(self) -> str:
        """``cpu`` or ``cuda``: which lanes the measured models fused."""
        return self.device.split(":")[0]

    # -- predictions in the measured device's own units --

    def local_seconds(self, lane: LaneSpec, ctx: CostContext) -> float:
        """Predicted step time of ``lane`` on the calibration device, in seconds."""
        return dot(self.time_coefficients, time_features(lane, ctx))

    def model_local_seconds(
        self,
        lanes: Sequence[LaneSpec],
        ctx: CostContext,
        *,
        head_lanes: int | None = None,
        device_type: str | None = None,
    ) -> float | None:
        """Predicted step time on the calibration device of ``lanes`` run on one device
        (and the head of a ``head_lanes``-lane model), in seconds; None when no whole
        models were measured."""
        if not self.model_time_coefficients:
            return None
        features = model_time_features(
            lanes, ctx, device_type or self.device_type, head_lanes=head_lanes
        )
        return dot(self.model_time_coefficients, features)

    def memory_bytes(self, lane: LaneSpec, ctx: CostContext) -> int:
        """Predicted peak training memory of ``lane``, in bytes."""
        return math.ceil(dot(self.memory_coefficients, memory_features(lane, ctx)))

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
            "model_time_features": list(self.model_time_features),
            "model_time_coefficients": list(self.model_time_coefficients),
            "model_samples": [s.to_dict() for s in self.model_samples],
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)

    @classmethod
    def from_dict(cls, data: Any) -> Calibration:
        """A calibration from its dict.

        Raises:
            CalibrationError: Not a calibration, a newer schema, an unknown key
                ("did you mean"), or a bad field.
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
        _check_calibration_keys(data)
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
                model_time_features=tuple(data.get("model_time_features", MODEL_TIME_FEATURES)),
                model_time_coefficients=tuple(data.get("model_time_coefficients", ())),
                model_samples=tuple(
                    ModelSample.from_dict(s) for s in data.get("model_samples", [])
                ),
            )
        except CalibrationError:
            raise
        except KeyError as err:
            raise CalibrationError(f"missing field {err.args[0]!r}") from None
        except (NasmlcnError, TypeError, ValueError, AttributeError) as err:
            raise CalibrationError(f"invalid field: {nested(err)}") from None

    @classmethod
    def from_json(cls, text: str) -> Calibration:
        return cls.from_dict(parse_json(text, CalibrationError))

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
        text = read_text_file(
            p,
            "calibration file",
            CalibrationError,
            missing_hint="run 'nasmlcn calibrate' to make it",
        )
        try:
            return cls.from_json(text)
        except CalibrationError as err:
            raise CalibrationError(f"calibration file {str(p)!r}: {nested(err)}") from None


_KEYS = (
    "schema_version",
    "created",
    "hostname",
    "cpu_model",
    "torch_version",
    "load_average",
    "device",
    "device_description",
    "threads",
    "clock",
    "context",
    "fc_flops_per_second",
    "device_speeds",
    "speed",
    "speed_anchor",
    "time_features",
    "time_coefficients",
    "memory_method",
    "memory_features",
    "memory_coefficients",
    "memory_envelope",
    "samples",
    "model_time_features",
    "model_time_coefficients",
    "model_samples",
)
"""The top-level keys of a calibration file (what :meth:`Calibration.to_dict`
writes and :meth:`Calibration.from_dict` reads). ``fc_flops_per_second`` and
``device_speeds`` map device names, any, to figures."""
_CONTEXT_KEYS = tuple(f.name for f in fields(CostContext) if f.init)
"""The keys of ``context`` (:class:`CostContext`'s fields)."""
_SAMPLE_KEYS = tuple(f.name for f in fields(LaneSample) if f.init)
_MODEL_SAMPLE_KEYS = tuple(f.name for f in fields(ModelSample) if f.init)
"""The keys of each entry of ``samples`` (:class:`LaneSample`'s fields)."""


def _check_calibration_keys(data: Mapping[str, Any]) -> None:
    """Refuses an unknown key at the top level, in ``context`` or in a sample."""
    check_keys(data, _KEYS, "", CalibrationError)
    if isinstance(data.get("context"), Mapping):
        check_keys(data["context"], _CONTEXT_KEYS, "", CalibrationError, inside="context")
    samples = data.get("samples")
    for i, sample in enumerate(samples if isinstance(samples, list) else []):
        if isinstance(sample, Mapping):
            check_keys(sample, _SAMPLE_KEYS, "", CalibrationError, inside=f"samples[{i}]")
    models = data.get("model_samples")
    for i, sample in enumerate(models if isinstance(models, list) else []):
        if isinstance(sample, Mapping):
            check_keys(
                sample, _MODEL_SAMPLE_KEYS, "", CalibrationError, inside=f"model_samples[{i}]"
            )
