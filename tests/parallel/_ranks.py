"""Functions that spawned ranks run in the tests (a module, so spawn can import them)."""

from __future__ import annotations

import os
import time
from typing import Any

import torch

from nasmlcn.errors import SpecError
from nasmlcn.models import MLCN, build_model, capsule_loss, per_lane_tensors
from nasmlcn.parallel import DistributedMLCN, RankContext, data_parallel
from nasmlcn.specs import MLCNSpec
from nasmlcn.training import TrainJob

LANES = "mlcn2:1x1,mlcn1:1x1,mlcn2:2x1"
ASSIGNMENT = (1, 0, 1)  # uneven on purpose: rank 0 gets one lane, rank 1 two
BATCH = 8
STEPS = 3


def spec(lane_dropout: float = 0.2) -> MLCNSpec:
    return MLCNSpec.from_lanes(LANES, lane_dropout=lane_dropout)


def batches(n: int = STEPS, batch: int = BATCH) -> list[tuple[torch.Tensor, torch.Tensor]]:
    g = torch.Generator().manual_seed(1)
    return [
        (torch.rand(batch, 1, 28, 28, generator=g), torch.randint(0, 10, (batch,), generator=g))
        for _ in range(n)
    ]


def run_steps(model: torch.nn.Module, n: int = STEPS) -> dict[str, Any]:
    """Adam steps on fixed batches: every loss, the first step's gradients, the end state."""
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    losses: list[float] = []
    grads: dict[str, torch.Tensor] = {}
    for i, (x, y) in enumerate(batches(n)):
        torch.manual_seed(100 + i)  # the same lane-dropout masks in every process
        out = model(x, y)
        loss = capsule_loss(out.lengths, out.reconstruction, x, y).total
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if i == 0:
            grads = _grads(model)
        optimizer.step()
        losses.append(float(loss.detach()))
    state = {k: v.detach().clone() for k, v in model.state_dict().items()}
    return {"losses": losses, "grads": grads, "state": state}


def ddp_grads(rank: int, world: int) -> dict[str, torch.Tensor]:
    """One DDP step on this rank's half of the first batch (no lane dropout)."""
    torch.manual_seed(0)
    model = build_model(spec(0.0))
    ddp = data_parallel(model, "cpu")
    x, y = batches(1)[0]
    xs, ys = x.tensor_split(world)[rank], y.tensor_split(world)[rank]
    out = ddp(xs, ys)
    capsule_loss(out.lengths, out.reconstruction, xs, ys).total.backward()
    return _grads(model)


def _grads(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    grads = per_lane_tensors(model, lambda p: p.grad)  # named lane by lane
    assert len(grads) == len(per_lane_tensors(model)), "a parameter got no gradient"
    return {name: grad.detach().clone() for name, grad in grads.items()}


def equivalence_rank(ctx: RankContext, job: TrainJob) -> dict[str, Any]:
    """Lane-parallel steps, a DDP step, and a whole tiny training job."""
    from nasmlcn.training._parallel import _spawned_rank

    torch.manual_seed(0)
    model = build_model(spec())
    assert isinstance(model, MLCN)
    lanes = DistributedMLCN(model, ASSIGNMENT)
    result = run_steps(lanes)
    result["owned"] = lanes.owned
    result["lane_params"] = sorted(
        {k.split(".")[1] for k in lanes.state_dict() if k.startswith("lanes.")}
    )
    result["ddp_grads"] = ddp_grads(ctx.rank, ctx.world_size)
    result["gather_calls"] = lanes.comm.calls
    report = _spawned_rank(ctx, job, (0, 1, 0, 1), "lanes")
    result["report"] = report
    result["threads"] = torch.get_num_threads()
    return result


def dying_rank(ctx: RankContext) -> None:
    """Rank 1 exits without a word after one step; rank 0 keeps training."""
    torch.manual_seed(0)
    model = build_model(spec())
    assert isinstance(model, MLCN)
    lanes = DistributedMLCN(model, ASSIGNMENT)
    x, y = batches(1)[0]
    for step in range(200):
        if ctx.rank == 1 and step == 1:
            os._exit(3)
        out = lanes(x, y)
        capsule_loss(out.lengths, out.reconstruction, x, y).total.backward()


def hanging_rank(ctx: RankContext) -> None:
    """Rank 1 stops answering (alive, but never reaches the next collective)."""
    torch.manual_seed(0)
    model = build_model(spec())
    assert isinstance(model, MLCN)
    lanes = DistributedMLCN(model, ASSIGNMENT)
    x, _ = batches(1)[0]
    lanes(x)
    if ctx.rank == 1:
        time.sleep(120)
    lanes(x)


def failing_rank(ctx: RankContext) -> None:
    """Rank 1 raises a user error; the launcher must re-raise it as it is."""
    if ctx.rank == 1:
        raise SpecError("rank 1 found a bad spec")
    torch.distributed.barrier()
