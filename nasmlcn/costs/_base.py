"""Cost models: what a lane costs to train, per step, on a speed-1.0 device.

A cost model turns a lane (in a :class:`CostContext`) into a :class:`LaneCost`:
parameters and FLOPs (facts of the layers, the same for every model), and three
*predictions* that differ between models: ``time`` — the training step time on a
device of speed 1.0 (a K80) — ``inference_time`` — the forward-only time of
classifying one image (batch ``INFERENCE_BATCH_SIZE`` = 1, evaluation mode, no
gradients) on the same device — and ``memory_bytes`` — the training memory the
lane needs on its device. Time on a device of speed ``s`` is ``time / s``; the
makespan of a placement is ``max over devices of sum(time of its lanes) / s``,
and its inference makespan the same sum over ``inference_time``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from nasmlcn.costs._context import CostContext
from nasmlcn.costs._profile import LaneProfile, head_profile, lane_profile
from nasmlcn.registry import Registry
from nasmlcn.specs import LaneSpec, MLCNSpec

INFERENCE_BATCH_SIZE = 1
"""Images per inference pass that ``inference_time`` is predicted (and measured) at:
one image, the latency a deployed classifier sees, not a throughput."""


@dataclass(frozen=True)
class LaneCost:
    """One lane's cost.

    Attributes:
        lane: The lane.
        params: Trainable parameters.
        forward_flops: Forward FLOPs per image.
        train_flops: Forward + backward FLOPs per training step (whole batch).
        activation_bytes: Bytes kept for backward per image.
        memory_bytes: Predicted training memory on its device (weights, gradients,
            optimizer state, activations for the batch, workspace).
        time: Predicted training step time on a speed-1.0 device, in the model's
            ``time_unit``.
        inference_flops: FLOPs of one forward pass at ``INFERENCE_BATCH_SIZE``,
            per image (kernel folds included).
        inference_time: Predicted forward-only time per image at
            ``INFERENCE_BATCH_SIZE`` on a speed-1.0 device, in ``time_unit``.
    """

    lane: LaneSpec
    params: int
    forward_flops: int
    train_flops: int
    activation_bytes: int
    memory_bytes: int
    time: float
    inference_flops: int
    inference_time: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "lane": str(self.lane),
            "params": self.params,
            "forward_flops": self.forward_flops,
            "train_flops": self.train_flops,
            "activation_bytes": self.activation_bytes,
            "memory_bytes": self.memory_bytes,
            "time": self.time,
            "inference_flops": self.inference_flops,
            "inference_time": self.inference_time,
        }


@dataclass(frozen=True)
class HeadCost:
    """The head (class capsules and decoder), which runs on the head device.

    ``inference_*`` is classification only (class capsules and their lengths):
    the decoder reconstructs images for the training loss and is not run at
    inference.
    """

    params: int
    forward_flops: int
    train_flops: int
    memory_bytes: int
    time: float
    inference_flops: int
    inference_time: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "params": self.params,
            "forward_flops": self.forward_flops,
            "train_flops": self.train_flops,
            "memory_bytes": self.memory_bytes,
            "time": self.time,
            "inference_flops": self.inference_flops,
            "inference_time": self.inference_time,
        }


@dataclass(frozen=True)
class ModelCost:
    """Every lane's cost and the head's, for one model."""

    lanes: tuple[LaneCost, ...]
    head: HeadCost

    @property
    def params(self) -> int:
        return sum(c.params for c in self.lanes) + self.head.params

    @property
    def train_flops(self) -> int:
        return sum(c.train_flops for c in self.lanes) + self.head.train_flops

    @property
    def forward_flops(self) -> int:
        return sum(c.forward_flops for c in self.lanes) + self.head.forward_flops

    @property
    def memory_bytes(self) -> int:
        return sum(c.memory_bytes for c in self.lanes) + self.head.memory_bytes

    @property
    def time(self) -> float:
        """Every lane's time and the head's, summed: the step on one speed-1.0 device
        as a sum of parts (what a whole-model fit improves on)."""
        return sum(c.time for c in self.lanes) + self.head.time

    @property
    def inference_flops(self) -> int:
        """FLOPs of classifying one image (every lane and the head, no decoder)."""
        return sum(c.inference_flops for c in self.lanes) + self.head.inference_flops


class CostModel(ABC):
    """Predicts lane costs. Subclasses implement :meth:`lane_cost` and :meth:`head_cost`.

    Attributes:
        name: Registry name.
        time_unit: Unit of ``LaneCost.time`` (``s`` for seconds on a K80).
    """

    name: str = ""
    time_unit: str = "s"

    @abstractmethod
    def lane_cost(self, lane: LaneSpec, ctx: CostContext) -> LaneCost:
        """The cost of ``lane`` in ``ctx``."""

    @abstractmethod
    def head_cost(self, num_lanes: int, ctx: CostContext) -> HeadCost:
        """The cost of the head of a model with ``num_lanes`` lanes."""

    def lanes_time(self, lanes: Sequence[LaneSpec], ctx: CostContext, device_type: str) -> float:
        """Predicted step time of ``lanes`` run together on one device of
        ``device_type`` (``cpu`` or ``cuda``), on a speed-1.0 device, without the head.

        The sum of the lanes' times here; a model that knows what lanes cost
        together (fused groups, :mod:`nasmlcn.costs._whole`) overrides it.
        """
        return sum(self.lane_cost(lane, ctx).time for lane in lanes)

    def model_cost(self, spec: MLCNSpec, batch_size: int = 100) -> ModelCost:
        """Every lane's cost and the head's for ``spec`` trained at ``batch_size``."""
        ctx = CostContext.of(spec, batch_size)
        return self.costs(spec.lanes, ctx)

    def costs(self, lanes: Sequence[LaneSpec], ctx: CostContext) -> ModelCost:
        return ModelCost(
            tuple(self.lane_cost(lane, ctx) for lane in lanes), self.head_cost(len(lanes), ctx)
        )

    def describe(self) -> str:
        return self.name


COST_MODELS: Registry[type[CostModel]] = Registry("cost model")


def layer_facts(lane: LaneSpec, ctx: CostContext) -> dict[str, int]:
    """Parameters, FLOPs and activation bytes of a lane (the same for every model)."""
    from nasmlcn.costs._context import BYTES_PER_VALUE

    p = lane_profile(lane, ctx)
    return {
        "params": p.params,
        "forward_flops": p.forward_flops,
        "train_flops": p.train_flops_per_step(ctx.batch_size),
        "activation_bytes": p.saved_values * BYTES_PER_VALUE,
        "inference_flops": inference_flops(p),
    }


def inference_flops(p: LaneProfile) -> int:
    """FLOPs per image of one forward pass at ``INFERENCE_BATCH_SIZE``, rounded up."""
    return -(-p.forward_flops_per_pass(INFERENCE_BATCH_SIZE) // INFERENCE_BATCH_SIZE)


def forward_share(p: LaneProfile, ctx: CostContext) -> float:
    """Per-image inference FLOPs over the training step's FLOPs at ``ctx.batch_size``:
    what scales a training-step time to an inference time where a model knows no
    better (the ``thesis`` model's eq. 5.1 is a training-step proxy)."""
    return inference_flops(p) / p.train_flops_per_step(ctx.batch_size)


def head_facts(num_lanes: int, ctx: CostContext) -> dict[str, int]:
    p = head_profile(num_lanes, ctx)
    return {
        "params": p.params,
        "forward_flops": p.forward_flops,
        "train_flops": p.train_flops * ctx.batch_size,
        "inference_flops": p.inference_flops,
    }
