"""The ``thesis`` cost model: equations 5.1 and 6.1 of the thesis, as published.

* Eq. 5.1: ``lane_cost = width^2 * depth`` (times the device speed factor, which
  nasmlcn applies when it divides by the device's speed). Pearson 0.901 with
  step times measured on K80, P100 and V100 in the thesis. The unit is the
  thesis's own (``w2d``), not seconds.
* Eq. 6.1: ``lane_memory = (width^(depth/2) * 256 + 1832) MiB``, measured with
  nvidia-smi under TensorFlow 1.13 (whose runtime accounts for most of the 1832
  MiB); always above the measured value there, mean error < 256 MiB.

Parameters and FLOPs are reported from the layer arithmetic, as for every model.
The head is not in the thesis's equations: it costs nothing here.

Inference: the thesis predicts training step times only. Eq. 5.1 is a proxy for
a training step, so a lane's inference time is its eq. 5.1 value scaled by the
share of that step's FLOPs one image's forward pass has (per-image forward FLOPs
at batch 1 over the step's forward + backward FLOPs at the training batch; about
1/300 at batch 100), still in ``w2d``. This assumes the proxy's time is
proportional to FLOPs, which is what the thesis's width^2 * depth stands for.
"""

from __future__ import annotations

from nasmlcn.costs._base import (
    COST_MODELS,
    CostModel,
    HeadCost,
    LaneCost,
    forward_share,
    head_facts,
    layer_facts,
)
from nasmlcn.costs._context import CostContext
from nasmlcn.costs._profile import lane_profile
from nasmlcn.specs import LaneSpec

MIB = 2**20


def thesis_time(width: int, depth: int) -> float:
    """Eq. 5.1 without the device factor."""
    return float(width**2 * depth)


def thesis_memory_bytes(width: int, depth: int) -> int:
    """Eq. 6.1 in bytes."""
    return round((width ** (depth / 2) * 256 + 1832) * MIB)


@COST_MODELS.register("thesis")
class ThesisCostModel(CostModel):
    """Eq. 5.1 (time, in width^2*depth units) and eq. 6.1 (memory)."""

    name = "thesis"
    time_unit = "w2d"

    def lane_cost(self, lane: LaneSpec, ctx: CostContext) -> LaneCost:
        facts = layer_facts(lane, ctx)
        time = thesis_time(lane.width, lane.depth)
        return LaneCost(
            lane=lane,
            memory_bytes=thesis_memory_bytes(lane.width, lane.depth),
            time=time,
            inference_time=time * forward_share(lane_profile(lane, ctx), ctx),
            **facts,
        )

    def head_cost(self, num_lanes: int, ctx: CostContext) -> HeadCost:
        return HeadCost(memory_bytes=0, time=0.0, inference_time=0.0, **head_facts(num_lanes, ctx))
