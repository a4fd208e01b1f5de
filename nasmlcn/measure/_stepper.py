"""One training step of a single lane: what lane timing and lane memory measure.

A lane is measured alone, as the cost models predict it: one
:class:`~nasmlcn.models._lane.Lane` with a margin loss on its ``(B, K)`` output,
trained with Adam on one fixed random batch (the data do not change the
arithmetic).
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from nasmlcn.costs import CostContext
from nasmlcn.models import Lane, margin_loss
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
        self.module = Lane(
            lane, ctx.input_shape, ctx.num_classes, ctx.routing, ctx.routing_iterations
        ).to(device)
        self.opt = make_optimizer(self.module.parameters(), 1e-3, device.type)  # as training
        self.x = torch.rand(ctx.batch_size, *ctx.input_shape, device=device)  # (B, C, H, W)
        self.y = torch.randint(0, ctx.num_classes, (ctx.batch_size,), device=device)  # (B,)

    def step(self) -> None:
        self.opt.zero_grad(set_to_none=True)
        out = self.module(self.x)  # (B, K): this lane's entry of every class capsule
        # |entry| stands in for the class capsule's length: the margin loss then
        # back-propagates through the whole lane as it does in an MLCN.
        loss = margin_loss(out.abs(), self.y)
        loss.backward()
        self.opt.step()
