"""Parallel training jobs end to end, like :func:`nasmlcn.training.run_training`.

Three ways to train one :class:`~nasmlcn.training.TrainJob`:

- :func:`run_placed_training`: one process, lanes on several local devices
  (:class:`~nasmlcn.parallel.PlacedMLCN`);
- :func:`run_multiprocess_training`: N local processes started here, lane-parallel
  (:class:`~nasmlcn.parallel.DistributedMLCN`) or data-parallel (DDP);
- :func:`train_rank`: the body of one rank, also what ``nasmlcn train`` runs in each
  process ``torchrun`` starts (one or many nodes).

Each writes the same files as ``run_training`` (``arch.json``, ``checkpoint.pt``,
``result.json``, the last with a ``parallel`` section) and returns a
:class:`ParallelReport`. Multi-process jobs checkpoint once, after the last
epoch, on rank 0 (the lanes gathered from every rank, no optimizer state), so
they cannot ``--resume``; a one-process run can resume from their checkpoint.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from nasmlcn.data import DATASETS
from nasmlcn.errors import DeviceError, SpecError
from nasmlcn.parallel._relay import Emit, replay
from nasmlcn.parallel._report import ParallelReport
from nasmlcn.specs import ArchSpec, MLCNSpec
from nasmlcn.training import (
    Callback,
    CallbackList,
    TrainJob,
    arch_for_dataset,
    check_training_memory,
    job_outputs,
    load_job_splits,
    step_batch_size,
    write_result,
)

if TYPE_CHECKING:
    from torch import nn

    from nasmlcn.parallel._launch import RankContext
    from nasmlcn.training import JobRun, TrainReport

logger = logging.getLogger(__name__)

PARALLELISMS = ("lanes", "data")
"""``lanes``: each rank owns some lanes (model parallelism); ``data``: DDP."""


def rank_assignment(target_assignment: Sequence[int], world_size: int) -> tuple[int, ...]:
    """Lane -> rank: the lanes of target device ``j`` go to rank ``j mod world_size``."""
    return tuple(int(j) % world_size for j in target_assignment)


def _check_parallelism(parallelism: str) -> None:
    if parallelism not in PARALLELISMS:
        raise SpecError(
            f"--parallelism must be one of {', '.join(PARALLELISMS)}, got {parallelism!r}"
        )


def _mlcn(job: TrainJob) -> MLCNSpec:
    arch = arch_for_dataset(job.arch, DATASETS.get(job.dataset), strict=True)
    if not isinstance(arch, MLCNSpec):
        raise SpecError(
            f"lane parallelism needs an MLCN; {arch.describe()} has no lanes "
            "(train it on one device, or data-parallel with --parallelism data)"
        )
    return arch


def _cuda_available() -> bool:
    import torch

    return bool(torch.cuda.is_available())


def run_placed_training(
    job: TrainJob,
    lane_devices: Sequence[str],
    *,
    head_device: str | None = None,
    assignment: Sequence[int] = (),
    streams: bool | None = None,
    callbacks: Sequence[Callback] = (),
) -> ParallelReport:
    """Trains ``job`` in this process with lane ``l`` on ``lane_devices[l]``.

    Args:
        job: The job (``job.config.device`` is not used).
        lane_devices: Torch device of every lane (``cuda:0``, ``cpu``).
        head_device: Where the head runs (default: ``lane_devices[0]``).
        assignment: The target-device placement, for the report.
        streams: One CUDA stream per lane (default: on when a lane is on CUDA).
        callbacks: Progress callbacks.

    Raises:
        SpecError: Not an MLCN, or not one device per lane.
        NasmlcnError: Missing data, an existing checkpoint, a bad device.
    """
    from nasmlcn.parallel._placed import PlacedMLCN, placer
    from nasmlcn.training import resolve_device, run_job

    arch = _mlcn(job)
    if len(lane_devices) != arch.num_lanes:
        raise SpecError(f"{len(lane_devices)} lane devices for {arch.num_lanes} lanes")
    for name in dict.fromkeys([*lane_devices, *([head_device] if head_device else [])]):
        resolve_device(name)  # a clear error for a device this machine lacks
    out, checkpoint = job_outputs(job, can_resume=True)
    check_training_memory(
        arch, step_batch_size(job), head_device or lane_devices[0], lane_devices=lane_devices
    )
    run = run_job(
        arch,
        load_job_splits(job),
        job.config,  # its device is the placed model's input device
        place=placer(lane_devices, head_device, streams=streams),
        callbacks=callbacks,
        checkpoint_path=checkpoint,
        resume=job.resume,
        out_dir=out,
        select=not job.refit,  # a refit validates on nothing
    )
    placed = run.module
    assert isinstance(placed, PlacedMLCN)
    result = ParallelReport(
        run.report(job.dataset, ",".join(str(d) for d in placed.devices), out),
        "lane-parallel",
        "in-process",
        1,
        tuple(str(d) for d in placed.lane_devices),
        tuple(assignment),
        {"head_device": str(placed.head_device), "streams": placed.streams},
    )
    write_result(out, result.to_dict())
    return result


def train_rank(
    ctx: RankContext,
    job: TrainJob,
    assignment: Sequence[int],
    parallelism: str = "lanes",
    callbacks: Sequence[Callback] = (),
) -> ParallelReport | None:
    """One rank of a multi-process job (every rank calls it with the same arguments).

    Args:
        ctx: This rank (from :func:`~nasmlcn.parallel.launch` or
            :func:`~nasmlcn.parallel.init_from_env`).
        job: The job; ``job.config.device`` is replaced by ``ctx.device``.
        assignment: Lane -> rank (``lanes``; ignored for ``data``).
        parallelism: ``lanes`` or ``data``.
        callbacks: Progress callbacks, called on rank 0 only.

    Returns:
        The report on rank 0 (which also writes the files), None elsewhere.

    Raises:
        DistributedError: A peer failed or timed out.
        NasmlcnError: Bad job (the same on every rank).
    """
    import torch

    from nasmlcn.data import DataSplits, normalization_record
    from nasmlcn.models import MLCN
    from nasmlcn.parallel._ddp import ShardedSplit, data_parallel
    from nasmlcn.parallel._distributed import DistributedMLCN
    from nasmlcn.training import run_job, save_checkpoint

    _check_parallelism(parallelism)
    if parallelism == "lanes":
        arch: ArchSpec = _mlcn(job)
    else:
        arch = arch_for_dataset(job.arch, DATASETS.get(job.dataset), strict=True)
    out, checkpoint = job_outputs(job, can_resume=False)
    splits = load_job_splits(job)
    config = replace(job.config, device=ctx.device)

    def place(model: nn.Module) -> nn.Module:
        if parallelism == "data":
            return data_parallel(model, ctx.device)
        assert isinstance(model, MLCN)
        return DistributedMLCN(model, assignment, device=ctx.device)

    if parallelism == "data":
        # Every rank trains on its share of each batch; validation and test are whole.
        shard = ShardedSplit.of(splits.train, ctx.rank, ctx.world_size)
        splits = DataSplits(shard, splits.val, splits.test)
    label = f"{ctx.world_size} ranks ({ctx.backend}), rank 0 on {ctx.device}"
    rank0 = ctx.rank == 0
    # No per-epoch checkpoint: each rank holds only its lanes, and gathering them
    # is a collective; the whole model is saved once, after the last epoch.
    run = run_job(
        arch,
        splits,
        config,
        place=place,
        callbacks=callbacks if rank0 else (),
        device_label=label,
        out_dir=out if rank0 else None,
        select=not job.refit,  # a refit validates on nothing
    )
    extra: dict[str, Any] = {"backend": ctx.backend, "threads": torch.get_num_threads()}
    module = run.module
    if isinstance(module, DistributedMLCN):
        assert isinstance(run.model, MLCN)
        extra["lanes_per_rank"] = [list(assignment).count(r) for r in range(ctx.world_size)]
        whole = run.model

        def gather() -> bool:
            return module.gather_full_state(whole)
    else:

        def gather() -> bool:
            return rank0

    selected = _selected_state(run, gather)
    if not gather():
        return None
    if checkpoint is not None:
        save_checkpoint(
            checkpoint,
            arch=arch,
            model=run.model,
            epoch=len(run.history),
            history=[h.to_dict() for h in run.history],
            train_config={
                **config.to_dict(),
                "normalization": normalization_record(splits.train.normalization),
            },
            selected=selected,
        )
    result = ParallelReport(
        run.report(job.dataset, label, out),
        "lane-parallel" if parallelism == "lanes" else "data-parallel",
        ctx.launcher,
        ctx.world_size,
        (ctx.device,),
        tuple(assignment) if parallelism == "lanes" else (),
        extra,
    )
    write_result(out, result.to_dict())
    return result


def _spawned_rank(
    ctx: RankContext,
    job: TrainJob,
    assignment: tuple[int, ...],
    parallelism: str,
    batches: bool = True,
) -> ParallelReport | None:
    """A rank started by :func:`launch`; rank 0 relays its events to the launcher."""
    return train_rank(ctx, job, assignment, parallelism, [Emit(ctx, batches)])


def run_multiprocess_training(
    job: TrainJob,
    processes: int,
    assignment: Sequence[int] = (),
    *,
    parallelism: str = "lanes",
    device: str = "auto",
    timeout_s: float | None = None,
    threads: int | None = None,
    callbacks: Sequence[Callback] = (),
) -> ParallelReport:
    """Trains ``job`` with ``processes`` local processes (see :func:`train_rank`).

    Args:
        job: The job.
        processes: Number of ranks.
        assignment: Lane -> rank (required for ``lanes``).
        parallelism: ``lanes`` or ``data``.
        device: ``cpu`` (gloo), ``cuda`` (one GPU per rank, NCCL) or ``auto``.
        timeout_s: Rendezvous and collective timeout (default
            :data:`~nasmlcn.parallel.DEFAULT_TIMEOUT_S`).
        threads: Torch threads per rank (default: this machine's cores shared
            evenly, at least 1).
        callbacks: Progress callbacks, run in this process with rank 0's events.

    Raises:
        DistributedError: A rank failed, died or timed out.
        NasmlcnError: A rank raised one (bad data, NaN loss).
    """
    from nasmlcn.hardware import usable_cores
    from nasmlcn.parallel._launch import DEFAULT_TIMEOUT_S, launch

    _check_parallelism(parallelism)
    if parallelism == "lanes":
        arch = _mlcn(job)
        if len(assignment) != arch.num_lanes:
            raise SpecError(
                f"the assignment has {len(assignment)} entries for {arch.num_lanes} lanes"
            )
    job_outputs(job, can_resume=False)  # fail here, not in every rank
    if device == "cpu" or (device == "auto" and not _cuda_available()):
        # The ranks share this machine's memory: together they hold at least one model.
        arch_spec = arch_for_dataset(job.arch, DATASETS.get(job.dataset), strict=True)
        check_training_memory(arch_spec, step_batch_size(job), "cpu")
    if threads is None:
        threads = max(1, usable_cores() // processes)

    hooks = CallbackList(callbacks)
    results = launch(
        _spawned_rank,
        processes,
        job,
        tuple(assignment),
        parallelism,
        hooks.wants_batches,
        device=device,
        timeout_s=DEFAULT_TIMEOUT_S if timeout_s is None else timeout_s,
        threads=threads,
        on_event=lambda event: replay(event, hooks),
    )
    result = results[0]
    assert isinstance(result, ParallelReport)
    return result


def plan_assignment(
    spec: MLCNSpec,
    devices: str | None,
    *,
    strategy: str = "greedy",
    processes: int = 1,
    batch_size: int = 100,
    seed: int = 0,
) -> tuple[tuple[int, ...], tuple[Any, ...]]:
    """Lane -> target device index, and the target devices.

    Args:
        spec: The model.
        devices: Target devices (``2xH100``, ``1xK80,1xV100``); None: ``processes``
            CPUs (a homogeneous pool, so the placement only balances lane costs).
        strategy: A registered placement strategy (``greedy``, ``random``, ``optimal``).
        processes: Used when ``devices`` is None.
        batch_size: Batch size the lane costs are predicted for.
        seed: Seed of the ``random`` strategy.

    Raises:
        DeviceError, PlacementError, UnknownNameError: Bad devices or strategy, or a
            lane that fits no device.
    """
    from nasmlcn.hardware import parse_devices
    from nasmlcn.planning import plan_model

    targets = parse_devices(devices if devices else f"{processes}xcpu")
    plan = plan_model(spec, targets, strategy=strategy, batch_size=batch_size, seed=seed)
    return tuple(plan.placement.assignment), targets


def run_parallel_job(
    job: TrainJob,
    *,
    devices: str | None = None,
    placement: str = "greedy",
    processes: int = 1,
    parallelism: str = "lanes",
    device: str = "auto",
    timeout_s: float | None = None,
    callbacks: Sequence[Callback] = (),
) -> ParallelReport | None:
    """What ``nasmlcn train`` runs when ``--devices``, ``--processes`` or torchrun ask
    for parallel training.

    - Started by ``torchrun`` (more than one rank): this process is one rank;
      rank 0 gets the callbacks and the report, the other ranks return None.
    - ``processes > 1``: that many local ranks (:func:`run_multiprocess_training`).
    - Otherwise: in-process lanes on the local devices that ``device`` maps the
      target ``devices`` to (:func:`run_placed_training`).

    The lanes follow the ``placement`` of the model on the target ``devices``
    (lanes of target device ``j`` go to rank ``j mod ranks`` in a multi-process job).

    Raises:
        SpecError: An option combination that cannot work.
        DeviceError: The target devices are not on this machine (in-process).
        DistributedError: A rank failed, died or timed out.
    """
    from nasmlcn.parallel._devices import lane_devices, map_targets
    from nasmlcn.parallel._launch import (
        DEFAULT_TIMEOUT_S,
        finish_group,
        init_from_env,
        under_torchrun,
    )

    _check_parallelism(parallelism)
    timeout = DEFAULT_TIMEOUT_S if timeout_s is None else timeout_s
    torchrun = under_torchrun()
    if torchrun and processes > 1:
        raise SpecError("under torchrun, set the processes with torchrun's --nproc-per-node")
    multi = torchrun or processes > 1
    if multi and device not in ("auto", "cpu", "cuda"):
        raise SpecError(
            f"--device {device!r}: with several processes use auto, cpu or cuda "
            "(each rank takes the GPU of its local rank)"
        )
    if parallelism == "data" and not multi:
        raise SpecError("data parallelism needs several processes: --processes N or torchrun")
    assignment: tuple[int, ...] = ()
    targets: tuple[Any, ...] = ()
    if parallelism == "lanes":
        world = int(os.environ.get("WORLD_SIZE", "1")) if torchrun else processes
        assignment, targets = plan_assignment(
            _mlcn(job),
            devices,
            strategy=placement,
            processes=world,
            batch_size=job.config.batch_size,
            seed=job.config.seed,
        )
    if assignment:
        logger.info(
            "lane placement (%s) on %s: %s",
            placement,
            devices or "the processes",
            ", ".join(f"lane {i} -> {j}" for i, j in enumerate(assignment)),
        )
    if torchrun:
        ctx = init_from_env(device, timeout)
        ranks = rank_assignment(assignment, ctx.world_size)
        result = train_rank(ctx, job, ranks, parallelism, callbacks)
        finish_group()
        return result
    if processes > 1:
        return run_multiprocess_training(
            job,
            processes,
            rank_assignment(assignment, processes),
            parallelism=parallelism,
            device=device,
            timeout_s=timeout,
            callbacks=callbacks,
        )
    device_map = map_targets(targets, device)
    if device_map is None:
        raise DeviceError(
            f"the target devices {devices} are not on this machine; choose where their lanes "
            "run with --device cpu or --device cuda:0,cuda:1 (target device j on entry j mod n), "
            "or use several CPU processes with --processes N"
        )
    return run_placed_training(
        job,
        lane_devices(assignment, device_map),
        head_device=device_map[0],
        assignment=assignment,
        callbacks=callbacks,
    )


def train_job(
    job: TrainJob, *, callbacks: Sequence[Callback] = (), **options: Any
) -> TrainReport | ParallelReport | None:
    """``nasmlcn train``'s run: :func:`~nasmlcn.training.run_training` in this
    process, unless the ``options`` of :func:`run_parallel_job` (``devices``,
    ``processes``, data ``parallelism``) or torchrun ask for parallel training.
    None on a torchrun rank other than 0 (rank 0 reports)."""
    from nasmlcn.parallel._launch import under_torchrun
    from nasmlcn.training import run_training

    parallel = (
        options.get("devices") is not None
        or options.get("processes", 1) > 1
        or options.get("parallelism", "lanes") != "lanes"
    )
    if not parallel and not under_torchrun():
        return run_training(job, list(callbacks))
    return run_parallel_job(job, callbacks=callbacks, **options)


def _selected_state(run: JobRun, gather: Callable[[], bool]) -> dict[str, Any] | None:
    """The selected epoch's whole model, as a checkpoint's ``selected``, where it is
    not the last epoch's; None elsewhere and on ranks other than 0.

    Every rank calls it (``gather`` is a collective that completes the whole model
    on rank 0): all ranks validated on the same images, so all selected one epoch.
    """
    selection = run.selection
    if selection is None or selection.state is None:
        return None
    final = {k: v.detach().clone() for k, v in run.module.state_dict().items()}
    run.module.load_state_dict(selection.state)
    state = None
    if gather():
        state = {k: v.detach().clone() for k, v in run.model.state_dict().items()}
    run.module.load_state_dict(final)
    if state is None:
        return None
    return {"epoch": selection.epoch, "val_accuracy": selection.val_accuracy, "model": state}
