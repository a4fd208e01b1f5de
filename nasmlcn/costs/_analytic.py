"""The ``analytic`` cost model (default): costs from the real layer shapes.

Memory of a lane while it trains (float32, Adam):

* weights, their gradients and Adam's two moment buffers: ``16 * params`` bytes;
* the batch's activations kept for backward, plus the largest pair of gradient
  buffers alive at once during backward (see :mod:`nasmlcn.costs._profile`);
  Adam's step needs ``8 * params`` of temporaries after those are freed, so the
  larger of the two counts;
* a fixed workspace for the convolution library's scratch buffers.

The activation term is taken 1.5 times: a real process holds more than the live
tensors (the allocator keeps freed blocks, glibc's arenas grow), and measured
peaks of fresh training processes on this CPU reached up to 1.27 times the live
bytes (``benchmarks/cost_model.py``, glibc's default allocator). With the factor
the model stays above every measured peak, as the thesis's eq. 6.1 did.

Time: training FLOPs per step at a fixed fraction of the speed-1.0 device's
(K80) peak FP32 rate. That fraction is an assumption (the thesis's TensorFlow
reached a few per cent on GPUs, PyTorch on this CPU much more); ``nasmlcn
calibrate`` fits the ``calibrated`` model to measured times instead.

Inference time: the FLOPs of one forward pass per image at batch
``INFERENCE_BATCH_SIZE`` (1), at the same fraction of the same peak — derived
exactly as the training time is, from forward instead of forward + backward
FLOPs (about a third per image). The head classifies with element-wise work only
(capsule lengths; the decoder does not run at inference), so it predicts 0.
"""

from __future__ import annotations

from nasmlcn.costs._base import COST_MODELS, CostModel, HeadCost, LaneCost, inference_flops
from nasmlcn.costs._context import ADAM_STATES, BYTES_PER_VALUE, CostContext
from nasmlcn.costs._profile import head_profile, lane_profile
from nasmlcn.specs import LaneSpec

K80_PEAK_FLOPS = 4.37e12
"""Peak FP32 FLOP/s of the speed-1.0 device (one K80 GPU, as in the catalog)."""

DEFAULT_EFFICIENCY = 0.3
"""Assumed fraction of peak FLOP/s that training reaches."""

ALLOCATOR_SLACK = 1.5
"""Process memory per byte of live activations (see the module docstring)."""

WORKSPACE_BYTES = 16 * 2**20
"""Scratch memory of the convolution library per lane (oneDNN/cuDNN workspaces)."""


def state_bytes(params: int) -> int:
    """Weights, gradients and Adam state."""
    return (2 + ADAM_STATES) * params * BYTES_PER_VALUE


@COST_MODELS.register("analytic")
class AnalyticCostModel(CostModel):
    """Costs from the layer arithmetic; time at ``efficiency`` of a K80's peak."""

    name = "analytic"
    time_unit = "s"

    def __init__(
        self, efficiency: float = DEFAULT_EFFICIENCY, reference_flops: float = K80_PEAK_FLOPS
    ) -> None:
        if not 0 < efficiency <= 1:
            raise ValueError(f"efficiency must be in (0, 1], got {efficiency!r}")
        self.efficiency = efficiency
        self.reference_flops = reference_flops

    def seconds(self, flops: float) -> float:
        return flops / (self.reference_flops * self.efficiency)

    def lane_cost(self, lane: LaneSpec, ctx: CostContext) -> LaneCost:
        p = lane_profile(lane, ctx)
        activations = ctx.batch_size * (p.saved_values + p.transient_values) * BYTES_PER_VALUE
        step_temporaries = 2 * p.params * BYTES_PER_VALUE
        live = max(activations, step_temporaries)
        memory = state_bytes(p.params) + round(ALLOCATOR_SLACK * live) + WORKSPACE_BYTES
        flops = p.train_flops_per_step(ctx.batch_size)
        forward = inference_flops(p)
        return LaneCost(
            lane=lane,
            params=p.params,
            forward_flops=p.forward_flops,
            train_flops=flops,
            activation_bytes=p.saved_values * BYTES_PER_VALUE,
            memory_bytes=memory,
            time=self.seconds(flops),
            inference_flops=forward,
            inference_time=self.seconds(forward),
        )

    def head_cost(self, num_lanes: int, ctx: CostContext) -> HeadCost:
        h = head_profile(num_lanes, ctx)
        flops = h.train_flops * ctx.batch_size
        activations = ctx.batch_size * h.saved_values * BYTES_PER_VALUE
        return HeadCost(
            params=h.params,
            forward_flops=h.forward_flops,
            train_flops=flops,
            memory_bytes=state_bytes(h.params) + activations,
            time=self.seconds(flops),
            inference_flops=h.inference_flops,
            inference_time=self.seconds(h.inference_flops),
        )
