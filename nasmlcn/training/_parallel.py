"""The parallel ways to train a :class:`~nasmlcn.training.TrainJob`, which
:func:`~nasmlcn.training.train` chooses between:

- :func:`train_placed`: one process, lanes on several local devices
  (:class:`~nasmlcn.parallel.PlacedMLCN`);
- :func:`train_processes`: N local processes started here, lane-parallel
  (:class:`~nasmlcn.parallel.DistributedMLCN`) or data-parallel (DDP);
- :func:`train_rank`: the body of one rank, also what ``nasmlcn train`` runs in each
  process ``torchrun`` starts (one or many nodes).

Each writes the same files as a one-device run (``arch.json``, ``checkpoint.pt``,
``result.json``, the last with a ``parallel`` section) and returns a
:class:`ParallelReport`. Multi-process jobs checkpoint once, after the last
epoch, on rank 0 (the lanes gathered from every rank, no optimizer state), so
they cannot ``--resume``, nor can a one-process run go on from their checkpoint
(:func:`~nasmlcn.training._checkpoint.check_resumable`); it can test or export it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from nasmlcn.errors import SpecError, option
from nasmlcn.parallel import PARALLELISMS
from nasmlcn.specs import ArchSpec, MLCNSpec
from nasmlcn.training._callbacks import Callback, CallbackList
from nasmlcn.training._config import RunOptions
from nasmlcn.training._job import (
    InMemoryJob,
    TrainJob,
    arch_for_dataset,
    job_dataset,
    job_outputs,
    job_run_options,
    load_job_splits,
    step_batch_size,
)
from nasmlcn.training._memory import check_training_memory
from nasmlcn.training._relay import Agreed, Emit, replay
from nasmlcn.training._report import ParallelReport
from nasmlcn.training._run_folder import write_result

if TYPE_CHECKING:
    from pathlib import Path

    from torch import nn

    from nasmlcn.data import DataSplits
    from nasmlcn.parallel import RankContext
    from nasmlcn.training._config import TrainConfig
    from nasmlcn.training._run import JobRun


def check_parallelism(parallelism: str) -> None:
    if parallelism not in PARALLELISMS:
        raise SpecError(
            f"{option('parallelism')} must be one of {', '.join(PARALLELISMS)}, got {parallelism!r}"
        )


def lane_parallel_arch(job: TrainJob) -> MLCNSpec:
    arch = arch_for_dataset(job.arch, job_dataset(job), strict=True)
    if not isinstance(arch, MLCNSpec):
        raise SpecError(
            f"lane parallelism needs an MLCN; {arch.describe()} has no lanes "
            f"(train it on one device, or data-parallel with {option('parallelism')} data)"
        )
    return arch


def _cuda_available() -> bool:
    import torch

    return bool(torch.cuda.is_available())


def train_placed(
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
    from nasmlcn.parallel import PlacedMLCN, placer
    from nasmlcn.training._run import run_in_memory
    from nasmlcn.training._trainer import resolve_device

    arch = lane_parallel_arch(job)
    if len(lane_devices) != arch.num_lanes:
        raise SpecError(f"{len(lane_devices)} lane devices for {arch.num_lanes} lanes")
    for name in dict.fromkeys([*lane_devices, *([head_device] if head_device else [])]):
        resolve_device(name)  # a clear error for a device this machine lacks
    out, checkpoint = job_outputs(job, can_resume=True)
    check_training_memory(
        arch, step_batch_size(job), head_device or lane_devices[0], lane_devices=lane_devices
    )
    run = run_in_memory(
        InMemoryJob(
            arch,
            load_job_splits(job),
            job.config,  # its device is the placed model's input device
            job_run_options(job, out, checkpoint),
            place=placer(lane_devices, head_device, streams=streams),
        ),
        callbacks,
    )
    placed = run.module
    assert isinstance(placed, PlacedMLCN)
    result = ParallelReport.of(
        run.report(job_dataset(job), ",".join(str(d) for d in placed.devices), out),
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
) -> ParallelReport:
    """One rank of a multi-process job (every rank calls it with the same arguments).

    Args:
        ctx: This rank (from :func:`~nasmlcn.parallel.launch` or
            :func:`~nasmlcn.parallel.init_from_env`).
        job: The job; ``job.config.device`` is replaced by ``ctx.device``.
        assignment: Lane -> rank (``lanes``; ignored for ``data``).
        parallelism: ``lanes`` or ``data``.
        callbacks: Progress callbacks, called on rank 0 only; a reason to stop
            that one returns after an epoch stops every rank there.

    Returns:
        The job's report, on every rank (they validated and tested the same model on
        the same images); rank 0 alone writes the files.

    Raises:
        DistributedError: A peer failed or timed out.
        NasmlcnError: Bad job (the same on every rank).
    """
    import torch

    from nasmlcn.data import DataSplits
    from nasmlcn.parallel import ShardedSplit
    from nasmlcn.training._run import run_in_memory

    check_parallelism(parallelism)
    if parallelism == "lanes":
        arch: ArchSpec = lane_parallel_arch(job)
    else:
        arch = arch_for_dataset(job.arch, job_dataset(job), strict=True)
    out, checkpoint = job_outputs(job, can_resume=False)
    splits = load_job_splits(job)
    config = replace(job.config, device=ctx.device)
    if parallelism == "data":
        # Every rank trains on its share of each batch; validation and test are whole.
        shard = ShardedSplit.of(splits.train, ctx.rank, ctx.world_size)
        splits = DataSplits(shard, splits.val, splits.test)
    label = f"{ctx.world_size} ranks ({ctx.backend}), rank 0 on {ctx.device}"
    rank0 = ctx.rank == 0
    # No per-epoch checkpoint: each rank holds only its lanes, and gathering them
    # is a collective; the whole model is saved once, after the last epoch.
    options = RunOptions(
        out_dir=out if rank0 else None,
        select=not job.refit,  # a refit validates on nothing
    )
    run = run_in_memory(
        InMemoryJob(
            arch,
            splits,
            config,
            options,
            place=_rank_placer(ctx, assignment, parallelism),
            device_label=label,
        ),
        [Agreed(ctx, callbacks if rank0 else ())],  # every rank stops where rank 0 does
    )
    extra: dict[str, Any] = {"backend": ctx.backend, "threads": torch.get_num_threads()}
    writes = _gather_and_save(ctx, run, splits, config, checkpoint)
    if parallelism == "lanes":
        extra["lanes_per_rank"] = [list(assignment).count(r) for r in range(ctx.world_size)]
    result = ParallelReport.of(
        run.report(job_dataset(job), label, out),
        "lane-parallel" if parallelism == "lanes" else "data-parallel",
        ctx.launcher,
        ctx.world_size,
        (ctx.device,),
        tuple(assignment) if parallelism == "lanes" else (),
        extra,
    )
    if writes:
        write_result(out, result.to_dict())
    return result


def _rank_placer(
    ctx: RankContext, assignment: Sequence[int], parallelism: str
) -> Callable[[nn.Module], nn.Module]:
    """What a rank trains of the model: its lanes (``lanes``) or a DDP replica (``data``)."""
    from nasmlcn.models import MLCN
    from nasmlcn.parallel import DistributedMLCN, data_parallel

    def place(model: nn.Module) -> nn.Module:
        if parallelism == "data":
            return data_parallel(model, ctx.device)
        assert isinstance(model, MLCN)
        return DistributedMLCN(model, assignment, device=ctx.device)

    return place


def _gather_and_save(
    ctx: RankContext,
    run: JobRun,
    splits: DataSplits,
    config: TrainConfig,
    checkpoint: Path | None,
) -> bool:
    """Gathers the whole model (and the selected epoch's) on rank 0, which writes the
    checkpoint; whether this rank writes the run's files.

    Every rank calls it: gathering a lane-parallel model's lanes is a collective.
    """
    from nasmlcn.data import normalization_record
    from nasmlcn.models import MLCN
    from nasmlcn.parallel import DistributedMLCN
    from nasmlcn.training._checkpoint import save_checkpoint

    module = run.module
    if isinstance(module, DistributedMLCN):
        assert isinstance(run.model, MLCN)
        whole = run.model

        def gather() -> bool:
            return module.gather_full_state(whole)
    else:

        def gather() -> bool:
            return ctx.rank == 0

    selected = _selected_state(run, gather)
    writes = gather()  # rank 0, which now holds the whole model
    if writes and checkpoint is not None:
        save_checkpoint(
            checkpoint,
            arch=run.arch,
            model=run.model,
            epoch=len(run.history),
            history=[h.to_dict() for h in run.history],
            train_config={
                **config.to_dict(),
                "normalization": normalization_record(splits.train.normalization),
            },
            selected=selected,
        )
    return writes


def _spawned_rank(
    ctx: RankContext,
    job: TrainJob,
    assignment: tuple[int, ...],
    parallelism: str,
    batches: bool = True,
) -> ParallelReport:
    """A rank started by :func:`launch`; rank 0 relays its events to the launcher."""
    return train_rank(ctx, job, assignment, parallelism, [Emit(ctx, batches)])


def train_processes(
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
        callbacks: Progress callbacks, run in this process with rank 0's events;
            a reason to stop that one returns after an epoch stops every rank there
            (rank 0 waits for their answer at each epoch's end).

    Raises:
        DistributedError: A rank failed, died or timed out.
        NasmlcnError: A rank raised one (bad data, NaN loss).
    """
    from nasmlcn.hardware import usable_cores
    from nasmlcn.parallel import DEFAULT_TIMEOUT_S, launch

    check_parallelism(parallelism)
    if parallelism == "lanes":
        arch = lane_parallel_arch(job)
        if len(assignment) != arch.num_lanes:
            raise SpecError(
                f"the assignment has {len(assignment)} entries for {arch.num_lanes} lanes"
            )
    job_outputs(job, can_resume=False)  # fail here, not in every rank
    if device == "cpu" or (device == "auto" and not _cuda_available()):
        # The ranks share this machine's memory: together they hold at least one model.
        arch_spec = arch_for_dataset(job.arch, job_dataset(job), strict=True)
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
