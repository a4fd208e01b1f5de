"""One training step of a single lane: what lane timing and lane memory measure.

A lane is measured alone, as the cost models predict it: a stack of one lane
(:class:`~nasmlcn.models.LaneSet`, the computation an MLCN runs for its lanes), run
lane by lane (its first layer a convolution of the image, as a lane's own module
ran it before lanes were stacked: measurements stay comparable with earlier
calibrations), with a margin loss on its ``(B, K)`` output, trained with Adam
on one fixed random batch (the data do not change the arithmetic).
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from nasmlcn._defaults import LEARNING_RATE
from nasmlcn.costs import CostContext
from nasmlcn.models import LaneKind, LaneSet, margin_loss
from nasmlcn.specs import LaneSpec
from nasmlcn.training import make_optimizer

Progress = Callable[[str, int, int], None]
"""``progress(phase, done, total)``: called after each lane of a phase."""


class LaneStepper:
    """One lane, its Adam optimizer and a fixed batch on one device."""

    def __init__(
        self, lane: LaneSpec, ctx: CostContext, device: torch.device, seed: int = 0
    ) -> None:
        torch.manual_seed(seed)
        self.device = device
        kind = LaneKind(lane, ctx.input_shape, ctx.num_classes, ctx.routing, ctx.routing_iterations)
        self.module = LaneSet.build([kind]).to(device)
        # as training
        self.opt = make_optimizer(self.module.parameters(), LEARNING_RATE, device.type)
        self.x = torch.rand(ctx.batch_size, *ctx.input_shape, device=device)  # (B, C, H, W)
        self.y = torch.randint(0, ctx.num_classes, (ctx.batch_size,), device=device)  # (B,)

    def step(self) -> None:
        self.opt.zero_grad(set_to_none=True)
        lanes = self.module
        capsules = lanes.class_capsules(lanes.stack_outputs(self.x, by_lane=True))  # (B, K, 1)
        out = capsules[..., 0]  # (B, K): this lane's entry of every class capsule
        # |entry| stands in for the class capsule's length: the margin loss then
        # back-propagates through the whole lane as it does in an MLCN.
        loss = margin_loss(out.abs(), self.y)
        loss.backward()
        self.opt.step()
