"""The one verb that trains a model, wherever it runs: a
:class:`~nasmlcn.training.TrainJob` on one device in this process, with lanes placed
on several local devices, with N local processes (lane-parallel or DDP), or as one
rank that ``torchrun`` started; an :class:`~nasmlcn.training.InMemoryJob` (data held
by the caller, the model placed by it) where its ``place`` puts it.

``nasmlcn train`` is a thin wrapper over :func:`train`; so are a retrain, the
search's trials and the reproduce engines. The ways it dispatches to live in
``_run`` (one device, in-memory jobs) and ``_parallel`` (the rest), which use
:mod:`nasmlcn.parallel` for the models spread over devices and processes.
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, overload

from nasmlcn.errors import DeviceError, SpecError, option
from nasmlcn.hardware import DeviceSpec, format_devices
from nasmlcn.training._callbacks import Callback
from nasmlcn.training._job import InMemoryJob, TrainJob

if TYPE_CHECKING:
    from nasmlcn.training._job import TrainReport
    from nasmlcn.training._report import ParallelReport
    from nasmlcn.training._run import JobRun

logger = logging.getLogger(__name__)


@overload
def train(
    job: TrainJob,
    callbacks: Sequence[Callback] = (),
    *,
    devices: str | Sequence[DeviceSpec] | None = None,
    placement: str = "greedy",
    processes: int = 1,
    parallelism: str = "lanes",
    device: str = "auto",
    timeout_s: float | None = None,
) -> TrainReport: ...


@overload
def train(job: InMemoryJob, callbacks: Sequence[Callback] = ()) -> JobRun: ...


def train(
    job: TrainJob | InMemoryJob,
    callbacks: Sequence[Callback] = (),
    *,
    devices: str | Sequence[DeviceSpec] | None = None,
    placement: str = "greedy",
    processes: int = 1,
    parallelism: str = "lanes",
    device: str = "auto",
    timeout_s: float | None = None,
) -> TrainReport | JobRun:
    """Loads the data, builds and trains the model, tests it and writes the files.

    An :class:`~nasmlcn.training.InMemoryJob` (data held by the caller) trains where
    its ``place`` puts it, tests and writes as its ``options`` say, and returns a
    :class:`~nasmlcn.training.JobRun` with the trained module; the options below
    are a ``TrainJob``'s. Where a ``TrainJob`` trains:

    - By default, on ``job.config.device`` in this process.
    - Started by ``torchrun`` (more than one rank): this process is one rank; rank
      0 gets the callbacks and writes the files, every rank returns the report.
    - ``processes > 1``: that many local ranks, lane-parallel or, with
      ``parallelism="data"``, data-parallel (DDP).
    - ``devices`` alone: in-process lanes on the local devices that ``device`` maps
      the target ``devices`` to.

    A parallel job's report is a :class:`ParallelReport`. Its lanes follow the
    ``placement`` of the model on the target ``devices`` (lanes of target device
    ``j`` go to rank ``j mod ranks`` in a multi-process job).

    Args:
        job: What to train, on which data, and where the files go.
        callbacks: Receive progress; ``on_epoch_end`` may raise to stop.
        devices: Target devices (``2xH100``, ``1xK80,1xV100``) to place the lanes on,
            as text or parsed (``parse_devices`` with a device file's catalog).
        placement: A registered placement strategy (``greedy``, ``random``, ``optimal``).
        processes: Local processes (ranks) to train with.
        parallelism: ``lanes`` (each rank owns some lanes) or ``data`` (DDP).
        device: Where a parallel job runs (a one-device job runs on
            ``job.config.device``): ``cpu``, ``cuda`` or ``auto``, and in-process
            also the local devices of the target devices (``cuda:0,cuda:1``).
        timeout_s: Rendezvous and collective timeout of a multi-process job
            (default :data:`~nasmlcn.parallel.DEFAULT_TIMEOUT_S`).

    Raises:
        SpecError: An option combination that cannot work.
        DeviceError: The target devices are not on this machine (in-process).
        DistributedError: A rank failed, died or timed out.
        TrainingError: The loss became NaN or infinite.
        CheckpointError: ``job.resume`` and the checkpoint belongs to another model.
    """
    from nasmlcn.parallel import under_torchrun

    if isinstance(job, InMemoryJob):
        given: dict[str, Any] = dict(
            devices=devices,
            processes=processes,
            parallelism=parallelism,
            placement=placement,
            device=device,
            timeout_s=timeout_s,
        )
        defaults = train.__kwdefaults__ or {}  # the TrainJob options' own defaults
        return _train_in_memory(job, callbacks, [k for k, v in given.items() if v != defaults[k]])
    _check_parallel_options(devices, processes, timeout_s)
    parallel = devices is not None or processes > 1 or parallelism != "lanes"
    if not parallel and not under_torchrun():
        from nasmlcn.training._run import train_on_one_device

        return train_on_one_device(job, list(callbacks))
    return _train_parallel(
        job,
        devices=devices,
        placement=placement,
        processes=processes,
        parallelism=parallelism,
        device=device,
        timeout_s=timeout_s,
        callbacks=callbacks,
    )


def _check_parallel_options(devices: Any, processes: Any, timeout_s: Any) -> None:
    """Where the job trains, refused in one line before any work (``processes=0``
    trained on one device, ``timeout_s=-1`` ended in torch's C++ error)."""
    if isinstance(processes, bool) or not isinstance(processes, int) or processes < 1:
        raise SpecError(f"processes must be an integer >= 1, got {processes!r}")
    parsed = isinstance(devices, (tuple, list)) and all(isinstance(d, DeviceSpec) for d in devices)
    named = isinstance(devices, str) and devices.strip()
    if devices is not None and not (named or (parsed and devices)):
        raise SpecError(
            "devices must name target devices (e.g. '2xH100') or be DeviceSpecs "
            f"(parse_devices), got {devices!r}"
        )
    if timeout_s is not None and not (
        isinstance(timeout_s, int | float)
        and not isinstance(timeout_s, bool)
        and 0 < timeout_s < math.inf
    ):
        raise SpecError(f"timeout_s must be a number of seconds > 0, got {timeout_s!r}")


def _train_in_memory(job: InMemoryJob, callbacks: Sequence[Callback], given: list[str]) -> JobRun:
    if given:
        raise SpecError(
            f"an InMemoryJob trains where its place puts it; {', '.join(given)} apply to a TrainJob"
        )
    from nasmlcn.training._run import run_in_memory

    return run_in_memory(job, callbacks)


def run_job(arch: Any, splits: Any, config: Any, **options: Any) -> JobRun:
    """The old name of ``train(InMemoryJob(...))``: kept one release, with a warning.
    ``callbacks`` go to :func:`train`, the other keywords to the job."""
    import warnings

    warnings.warn(
        "nasmlcn.training.run_job(arch, splits, config, ...) is now "
        "train(InMemoryJob(arch, splits, config, ...), callbacks)",
        DeprecationWarning,
        stacklevel=2,
    )
    callbacks = options.pop("callbacks", ())
    return train(InMemoryJob(arch, splits, config, **options), callbacks)


def _train_parallel(
    job: TrainJob,
    *,
    devices: str | Sequence[DeviceSpec] | None,
    placement: str,
    processes: int,
    parallelism: str,
    device: str,
    timeout_s: float | None,
    callbacks: Sequence[Callback],
) -> ParallelReport:
    """:func:`train` where ``devices``, ``processes``, data ``parallelism`` or
    torchrun ask for parallel training."""
    from nasmlcn.parallel import (
        DEFAULT_TIMEOUT_S,
        finish_group,
        init_from_env,
        rank_assignment,
        under_torchrun,
    )
    from nasmlcn.training._parallel import (
        check_parallelism,
        train_processes,
        train_rank,
    )

    check_parallelism(parallelism)
    timeout = DEFAULT_TIMEOUT_S if timeout_s is None else timeout_s
    torchrun = under_torchrun()
    _check_processes(parallelism, processes, device, torchrun)
    assignment: tuple[int, ...] = ()
    targets: tuple[Any, ...] = ()
    if parallelism == "lanes":
        world = int(os.environ.get("WORLD_SIZE", "1")) if torchrun else processes
        assignment, targets = _plan_lanes(job, devices, placement, world)
    if torchrun:
        ctx = init_from_env(device, timeout)
        ranks = rank_assignment(assignment, ctx.world_size)
        result = train_rank(ctx, job, ranks, parallelism, callbacks)
        finish_group()
        return result
    if processes > 1:
        return train_processes(
            job,
            processes,
            rank_assignment(assignment, processes),
            parallelism=parallelism,
            device=device,
            timeout_s=timeout,
            callbacks=callbacks,
        )
    return _train_on_targets(job, devices, targets, assignment, device, callbacks)


def _check_processes(parallelism: str, processes: int, device: str, torchrun: bool) -> None:
    """Refuses processes, devices and parallelism that do not go together.

    Raises:
        SpecError: Processes under torchrun, a named device for several processes,
            or data parallelism in one process.
    """
    if torchrun and processes > 1:
        raise SpecError("under torchrun, set the processes with torchrun's --nproc-per-node")
    multi = torchrun or processes > 1
    if multi and device not in ("auto", "cpu", "cuda"):
        raise SpecError(
            f"{option('device')} {device!r}: with several processes use auto, cpu or cuda "
            "(each rank takes the GPU of its local rank)"
        )
    if parallelism == "data" and not multi:
        raise SpecError(
            f"data parallelism needs several processes: {option('processes')} N or torchrun"
        )


def _plan_lanes(
    job: TrainJob, devices: str | Sequence[DeviceSpec] | None, placement: str, world: int
) -> tuple[tuple[int, ...], tuple[Any, ...]]:
    """The lanes' placement on ``devices`` (or ``world`` processes), logged: lane ->
    target, and the targets."""
    from nasmlcn.parallel import plan_assignment
    from nasmlcn.training._parallel import lane_parallel_arch

    assignment, targets = plan_assignment(
        lane_parallel_arch(job),
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
            _shown(devices) or "the processes",
            ", ".join(f"lane {i} -> {j}" for i, j in enumerate(assignment)),
        )
    return assignment, targets


def _train_on_targets(
    job: TrainJob,
    devices: str | Sequence[DeviceSpec] | None,
    targets: tuple[Any, ...],
    assignment: tuple[int, ...],
    device: str,
    callbacks: Sequence[Callback],
) -> ParallelReport:
    """Trains the lanes in this process, each target device's on the local device
    it maps to (``device``).

    Raises:
        DeviceError: The targets are not on this machine.
    """
    from nasmlcn.parallel import lane_devices, map_targets
    from nasmlcn.training._parallel import train_placed

    device_map = map_targets(targets, device)
    if device_map is None:
        raise DeviceError(
            f"the target devices {_shown(devices)} are not on this machine; choose where their "
            f"lanes run with {option('device')} cpu or {option('device')} cuda:0,cuda:1 (target "
            f"device j on entry j mod n), or use several CPU processes with "
            f"{option('processes')} N"
        )
    return train_placed(
        job,
        lane_devices(assignment, device_map),
        head_device=device_map[0],
        assignment=assignment,
        callbacks=callbacks,
    )


def _shown(devices: str | Sequence[DeviceSpec] | None) -> str:
    """Target devices as ``--devices`` writes them."""
    if devices is None or isinstance(devices, str):
        return devices or ""
    return format_devices(devices)
