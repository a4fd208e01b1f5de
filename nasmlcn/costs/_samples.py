"""Measured lanes: what ``nasmlcn calibrate`` measures, and which lanes it picks."""

from __future__ import annotations

import math
import random
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from nasmlcn.errors import CalibrationError
from nasmlcn.specs import LaneSpec, parse_lane

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
