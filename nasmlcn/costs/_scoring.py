"""Judging a cost model against measured lanes."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from nasmlcn.costs._base import CostModel
from nasmlcn.costs._context import CostContext
from nasmlcn.costs._samples import LaneSample
from nasmlcn.stats import Agreement, agreement


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
