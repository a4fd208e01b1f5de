"""The per-rank half of ``nasmlcn/reproduce/engines/scaling.py``: the training steps
every mode times, and :func:`bench_rank`, which each of the P processes runs (all
modes, in interleaved rounds, the ranks kept in step by barriers)."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

import torch

from nasmlcn._defaults import LEARNING_RATE
from nasmlcn.models import MLCN, build_model, capsule_loss
from nasmlcn.parallel import AllReduceStats, DistributedMLCN, RankContext, data_parallel
from nasmlcn.specs import CapsNetSpec, MLCNSpec
from nasmlcn.training import make_optimizer


def random_batch(spec: MLCNSpec | CapsNetSpec, batch: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``batch`` seeded random images of ``spec``'s input shape, and labels."""
    g = torch.Generator().manual_seed(0)
    x = torch.rand(batch, *spec.input_shape, generator=g)  # (B, C, H, W)
    y = torch.randint(0, spec.num_classes, (batch,), generator=g)  # (B,)
    return x, y


def stepper(
    model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor, after_backward: Any = None
) -> Any:
    """One training step of ``model`` on ``(x, y)``; ``after_backward()`` runs between
    the backward pass and the optimizer step (DDP's all-reduce bookkeeping). Adam is
    the one CPU training builds."""
    optimizer = make_optimizer(model.parameters(), LEARNING_RATE, "cpu")

    def step() -> None:
        out = model(x, y)
        loss = capsule_loss(out.lengths, out.reconstruction, x, y).total
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if after_backward is not None:
            after_backward()
        optimizer.step()

    return step


def ddp_stepper(
    spec: MLCNSpec | CapsNetSpec,
    x: torch.Tensor,
    y: torch.Tensor,
    world: int,
    rank: int,
    stats: AllReduceStats,
) -> Any:
    """One DDP training step of ``spec`` on this rank's share of the batch."""
    torch.manual_seed(0)
    ddp = data_parallel(build_model(spec), "cpu", stats=stats)
    shard_x, shard_y = x.tensor_split(world)[rank], y.tensor_split(world)[rank]
    return stepper(ddp, shard_x, shard_y, after_backward=stats.end_step)


def timed(step: Any, steps: int) -> float:
    return timed_cpu(step, steps)[0]


def timed_cpu(step: Any, steps: int) -> tuple[float, float]:
    """Wall and CPU seconds of ``steps`` steps (CPU time: every thread of the process)."""
    c0, t0 = time.process_time(), time.perf_counter()
    for _ in range(steps):
        step()
    return time.perf_counter() - t0, time.process_time() - c0


@dataclass
class _RankSteps:
    """The training steps one rank times, and the counters of their communication."""

    lanes_model: DistributedMLCN
    lanes: Any
    ddp: Any
    ddp_stats: AllReduceStats
    capsnet_stats: AllReduceStats
    capsnet_ddp: Any = None
    single: Any = None  # rank 0 only
    capsnet: Any = None  # rank 0 only, with --capsnet


def _rank_steps(cfg: dict[str, Any], world: int, rank: int) -> _RankSteps:
    """This rank's steps: lane-parallel, DDP (and CapsNet's); on rank 0 the one-process ones."""
    spec = MLCNSpec.from_lanes(cfg["lanes"])
    batch = cfg["batch_size"]
    x, y = random_batch(spec, batch)

    torch.manual_seed(0)
    full = build_model(spec)
    assert isinstance(full, MLCN)
    lanes_model = DistributedMLCN(full, cfg["assignment"])
    lanes_step = stepper(lanes_model, x, y)

    stats = AllReduceStats()
    ddp_step = ddp_stepper(spec, x, y, world, rank, stats)
    steps = _RankSteps(lanes_model, lanes_step, ddp_step, stats, AllReduceStats())
    if cfg.get("capsnet"):
        cx, cy = random_batch(CapsNetSpec(), batch)
        steps.capsnet_ddp = ddp_stepper(CapsNetSpec(), cx, cy, world, rank, steps.capsnet_stats)

    if rank == 0:
        torch.manual_seed(0)
        steps.single = stepper(build_model(spec), x, y)
        if cfg.get("capsnet"):
            torch.manual_seed(0)
            steps.capsnet = stepper(build_model(CapsNetSpec()), cx, cy)
    return steps


def _warm_up(steps: _RankSteps, cfg: dict[str, Any], world: int, rank: int) -> tuple[int, int]:
    """Warms every step up (allocator, oneDNN primitives); the step counts (one process,
    parallel) sized on rank 0 to ~``cfg["seconds"]`` and shared with every rank."""
    import torch.distributed as dist

    counts = [0, 0]
    if rank == 0:
        assert steps.single is not None
        steps.single()
        t = timed(steps.single, 2) / 2
        counts[0] = max(3, math.ceil(cfg["seconds"] / t))
        counts[1] = max(3, math.ceil(cfg["seconds"] * world / t))
    dist.broadcast_object_list(counts, src=0)
    for _ in range(2):
        steps.lanes()
        steps.ddp()
        if steps.capsnet_ddp is not None:
            steps.capsnet_ddp()
    if steps.capsnet is not None:
        steps.capsnet()
    return counts[0], counts[1]


def _round(
    steps: _RankSteps, world: int, rank: int, n_single: int, n_parallel: int
) -> dict[str, Any]:
    """One measurement round of every mode, the ranks kept in step by barriers."""
    import torch.distributed as dist

    row: dict[str, Any] = {}
    dist.barrier()
    if rank == 0:
        assert steps.single is not None
        row["single_seconds"], row["single_cpu_seconds"] = timed_cpu(steps.single, n_single)
        torch.set_num_threads(world)
        steps.single()  # warm the multi-threaded kernels
        row["single_2threads_seconds"] = timed(steps.single, n_single)
        torch.set_num_threads(1)
    dist.barrier()
    steps.lanes_model.comm.reset()
    row["lane_seconds"], row["lane_cpu_seconds"] = timed_cpu(steps.lanes, n_parallel)
    row["lane_comm_seconds"] = steps.lanes_model.comm.seconds
    dist.barrier()
    stats = steps.ddp_stats
    stats.reset()
    row["ddp_seconds"], row["ddp_cpu_seconds"] = timed_cpu(steps.ddp, n_parallel)
    row["ddp_exposed_seconds"] = stats.exposed_seconds
    row["ddp_busy_seconds"] = stats.busy_seconds
    row["ddp_bytes_per_step"] = stats.bytes / n_parallel
    if steps.capsnet_ddp is not None:
        # CapsNet steps are several times slower: a third of the steps keeps the
        # round short; the figures are rates.
        n_caps = max(3, n_parallel // 3)
        dist.barrier()
        if rank == 0:
            assert steps.capsnet is not None
            row["capsnet_single_seconds"] = timed(steps.capsnet, max(3, n_single // 3))
        dist.barrier()
        steps.capsnet_stats.reset()
        row["capsnet_ddp_seconds"] = timed(steps.capsnet_ddp, n_caps)
    return row


def bench_rank(ctx: RankContext, cfg: dict[str, Any]) -> dict[str, Any]:
    """Runs in every rank: all modes, ``cfg['rounds']`` interleaved rounds."""
    world, rank = ctx.world_size, ctx.rank
    steps = _rank_steps(cfg, world, rank)
    n_single, n_parallel = _warm_up(steps, cfg, world, rank)
    rows = [_round(steps, world, rank, n_single, n_parallel) for _ in range(cfg["rounds"])]
    lanes_model = steps.lanes_model
    return {
        "rank": rank,
        "steps_single": n_single,
        "steps_parallel": n_parallel,
        "owned_lanes": list(lanes_model.owned),
        "gather_bytes_per_step": lanes_model.comm.bytes / max(lanes_model.comm.calls, 1),
        "threads": torch.get_num_threads(),
        "rounds": rows,
    }
