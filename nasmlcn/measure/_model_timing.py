"""Training step time of whole models: what the whole-model cost model is fitted to.

One step is what training runs: the MLCN's forward (lanes fused as they train),
the margin and reconstruction losses, backward and Adam's step, on one fixed
random batch. The figure is the fastest of the timed steps after warm-up (other
processes only ever add time; see :mod:`nasmlcn.measure._lane_timing`).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from nasmlcn._allocator import keep_freed_memory
from nasmlcn._defaults import LEARNING_RATE
from nasmlcn.costs import CostContext
from nasmlcn.measure._clock import clock_function, synchronize
from nasmlcn.models import build_model, capsule_loss
from nasmlcn.specs import LaneSpec
from nasmlcn.training import make_optimizer


def time_model_step(
    lanes: Sequence[LaneSpec],
    ctx: CostContext,
    device: str | torch.device = "cpu",
    *,
    steps: int = 3,
    warmup: int = 1,
    fuse: bool = True,
    seed: int = 0,
    clock: str = "wall",
) -> float:
    """The fastest of ``steps`` timed training steps of the model, in seconds
    (``clock``: ``wall``, or ``cpu`` for this process's CPU time)."""
    keep_freed_memory()  # as training does
    device = torch.device(device)
    now = clock_function(clock, device)
    torch.manual_seed(seed)
    spec = ctx.spec(lanes)
    model = build_model(spec).to(device)
    model.fuse_lanes = fuse
    optimizer = make_optimizer(model.parameters(), LEARNING_RATE, device.type)  # as training
    x = torch.rand(ctx.batch_size, *ctx.input_shape, device=device)
    y = torch.randint(0, ctx.num_classes, (ctx.batch_size,), device=device)
    best = float("inf")
    for i in range(warmup + steps):
        synchronize(device)
        start = now()
        optimizer.zero_grad(set_to_none=True)
        out = model(x, y)
        capsule_loss(out.lengths, out.reconstruction, x, y).total.backward()
        optimizer.step()
        synchronize(device)
        if i >= warmup:
            best = min(best, now() - start)
    return best
