"""Measured lanes: what ``nasmlcn calibrate`` measures, and which lanes it picks."""

from __future__ import annotations

import math
import random
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from nasmlcn.errors import CalibrationError
from nasmlcn.specs import LaneSpec, format_lanes, parse_lane, parse_lanes

MIN_LANES = 20
"""Lanes ``nasmlcn calibrate`` measures at least (the thesis fitted eq. 5.1 to ~25)."""

LANE_TYPES = ("mlcn1", "mlcn2")
MAX_WIDTH = 5
MAX_DEPTH = 5


@dataclass(frozen=True)
class LaneSample:
    """One measured lane.

    Attributes:
        lane: The lane.
        seconds: Measured training step time on the calibration device.
        peak_bytes: Measured peak training memory (see
            :mod:`nasmlcn.costs._calibrated`).
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


@dataclass(frozen=True)
class ModelSample:
    """One measured whole model (see :mod:`nasmlcn.costs._whole`).

    Attributes:
        lanes: The model's lanes (its head is the calibration context's).
        seconds: Measured training step time on the calibration device.
    """

    lanes: tuple[LaneSpec, ...]
    seconds: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "lanes", tuple(self.lanes))
        if not self.lanes:
            raise CalibrationError("a model sample needs at least one lane")
        if not (isinstance(self.seconds, (int, float)) and math.isfinite(self.seconds)):
            raise CalibrationError(
                f"model sample {format_lanes(self.lanes)}: seconds must be a number"
            )
        if self.seconds <= 0:
            raise CalibrationError(
                f"model sample {format_lanes(self.lanes)}: seconds must be > 0, got {self.seconds!r}"
            )

    def to_dict(self) -> dict[str, Any]:
        return {"lanes": format_lanes(self.lanes), "seconds": self.seconds}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ModelSample:
        return cls(tuple(parse_lanes(str(data["lanes"]))), float(data["seconds"]))


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


MAX_MODEL_LANES = 64


def calibration_models(
    count: int, seed: int = 0, *, max_lanes: int = MAX_MODEL_LANES
) -> list[tuple[LaneSpec, ...]]:
    """``count`` random whole models' lanes, seeded: 1..``max_lanes`` lanes (log-uniform,
    so few-lane and many-lane models are both common) of 1-3 kinds mixed. Many-lane
    models get narrow kinds (width 1-2, as the default space's do), few-lane ones
    widths up to 4; depth 1-4."""
    if count < 1:
        raise ValueError(f"count must be >= 1, got {count}")
    rng = random.Random(seed)
    models: list[tuple[LaneSpec, ...]] = []
    for _ in range(count):
        total = max(1, min(max_lanes, round(math.exp(rng.uniform(0, math.log(max_lanes))))))
        widest = 2 if total > 16 else 4
        kinds = [
            LaneSpec(rng.choice(LANE_TYPES), rng.randint(1, widest), rng.randint(1, 4))
            for _ in range(min(total, rng.randint(1, 3)))
        ]
        counts = [1] * len(kinds)
        for _ in range(total - len(kinds)):
            counts[rng.randrange(len(kinds))] += 1
        lanes = [kind for kind, n in zip(kinds, counts, strict=True) for _ in range(n)]
        models.append(tuple(lanes))
    return models
