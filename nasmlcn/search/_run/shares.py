"""How ``--workers`` shares this machine out: each worker's GPUs (``--gpus-per-trial``,
``--workers-per-gpu``) and CPU threads (:func:`plan_workers`), and the check, before
any worker starts, that workers sharing a GPU can each train there
(:func:`check_gpu_sharing`). :mod:`~nasmlcn.search._run.pool` starts them.

Devices: with ``--gpus-per-trial K``, worker ``i`` sees only GPUs ``iK .. iK+K-1``
(``CUDA_VISIBLE_DEVICES``), so 8 GPUs run 8 one-GPU trials or 2 four-GPU
lane-parallel trials at once. With ``--workers-per-gpu K`` (one GPU per trial),
worker ``i`` sees GPU ``i // K``: 2 GPUs and K = 4 run 8 workers, 0-3 on the first
GPU and 4-7 on the second; each worker's trials must fit its share of its GPU's
memory (1/K; :func:`check_gpu_sharing` refuses up front a search whose largest
model cannot fit K times). Without either, the workers split this machine's CPU
cores (``torch.set_num_threads`` and ``OMP_NUM_THREADS``); GPU workers split them
too.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

from nasmlcn.errors import SearchError
from nasmlcn.search._prepare.setup import SearchSetup
from nasmlcn.search.evaluators._base import EVALUATORS


@dataclass(frozen=True)
class WorkerSlot:
    """What one worker process gets: its index, its GPUs (None: leave
    ``CUDA_VISIBLE_DEVICES`` as it is), its CPU threads, and how many workers share
    its GPU (itself included; 1: the GPU is its own)."""

    index: int
    gpus: tuple[str, ...] | None
    threads: int
    workers_on_gpu: int = 1


def plan_workers(
    workers: int | None, gpus_per_trial: int | None, workers_per_gpu: int | None = None
) -> list[WorkerSlot]:
    """Splits this machine's GPUs or CPU cores over the workers.

    Args:
        workers: Worker processes (None: one per ``gpus_per_trial`` GPUs, or
            ``workers_per_gpu`` per GPU, else 1).
        gpus_per_trial: GPUs of each worker (None: none, unless ``workers_per_gpu``).
        workers_per_gpu: Workers on each GPU (implies one GPU per worker): worker
            ``i`` gets GPU ``i // workers_per_gpu``. None: each GPU has one worker.

    Raises:
        SearchError: More GPUs asked for than this machine has, none at all, or
            GPUs shared by workers of several GPUs each.
    """
    if workers is not None and workers < 1:
        raise SearchError(f"‹workers› must be >= 1, got {workers}")
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    cores = max(1, cores or 1)
    if workers_per_gpu is not None:
        return _share_gpus(workers, gpus_per_trial, workers_per_gpu, cores)
    if gpus_per_trial is None:
        n = workers or 1
        return [WorkerSlot(i, None, max(1, cores // n)) for i in range(n)]
    if gpus_per_trial < 1:
        raise SearchError(f"‹gpus_per_trial› must be >= 1, got {gpus_per_trial}")
    gpus = visible_gpus()
    if len(gpus) < gpus_per_trial:
        raise SearchError(
            f"‹gpus_per_trial› {gpus_per_trial}: this machine has {len(gpus)} GPU(s)"
            + (f" ({','.join(gpus)})" if gpus else "")
            + "; use fewer, or leave the option out to run on the CPU"
        )
    n = workers or len(gpus) // gpus_per_trial
    if n * gpus_per_trial > len(gpus):
        raise SearchError(
            f"‹workers› {n} x ‹gpus_per_trial› {gpus_per_trial} needs {n * gpus_per_trial} "
            f"GPUs; this machine has {len(gpus)}: use ‹workers› {len(gpus) // gpus_per_trial}"
        )
    return [
        WorkerSlot(
            i,
            tuple(gpus[i * gpus_per_trial : (i + 1) * gpus_per_trial]),
            max(1, cores // n),
        )
        for i in range(n)
    ]


def _share_gpus(
    workers: int | None, gpus_per_trial: int | None, per_gpu: int, cores: int
) -> list[WorkerSlot]:
    """``--workers-per-gpu``: worker ``i`` on GPU ``i // per_gpu`` (see :func:`plan_workers`)."""
    if per_gpu < 1:
        raise SearchError(f"‹workers_per_gpu› must be >= 1, got {per_gpu}")
    if gpus_per_trial is not None and gpus_per_trial < 1:
        raise SearchError(f"‹gpus_per_trial› must be >= 1, got {gpus_per_trial}")
    if gpus_per_trial is not None and gpus_per_trial > 1 and per_gpu > 1:
        raise SearchError(
            f"‹workers_per_gpu› {per_gpu} puts several one-GPU workers on each GPU; it "
            f"cannot give them ‹gpus_per_trial› {gpus_per_trial}: leave ‹gpus_per_trial› "
            "out (or 1), or leave ‹workers_per_gpu› out"
        )
    if gpus_per_trial is not None and gpus_per_trial > 1:  # one worker per GPU group
        return plan_workers(workers, gpus_per_trial)
    gpus = visible_gpus()
    if not gpus:
        hidden = os.environ.get("CUDA_VISIBLE_DEVICES")
        raise SearchError(
            f"‹workers_per_gpu› {per_gpu} puts workers on GPUs, and this machine has none"
            + (f" (CUDA_VISIBLE_DEVICES={hidden!r})" if hidden is not None else "")
            + "; leave the option out to run on the CPU"
        )
    n = workers or len(gpus) * per_gpu
    if n > len(gpus) * per_gpu:
        needed = -(-n // per_gpu)
        raise SearchError(
            f"‹workers› {n} at ‹workers_per_gpu› {per_gpu} need {needed} GPUs; this machine "
            f"has {len(gpus)} ({','.join(gpus)}): use at most ‹workers› {len(gpus) * per_gpu}"
        )
    on_gpu = [min(per_gpu, n - g * per_gpu) for g in range(-(-n // per_gpu))]
    return [
        WorkerSlot(i, (gpus[i // per_gpu],), max(1, cores // n), on_gpu[i // per_gpu])
        for i in range(n)
    ]


def check_gpu_sharing(setup: SearchSetup, slots: Sequence[WorkerSlot]) -> None:
    """Refuses, before any worker starts, workers that share a GPU but cannot train
    there: a ‹run_on› other than the worker's GPU, or a search whose largest model
    (:func:`largest_model_memory`) does not fit as many times as workers share the
    GPU. Nothing to check for an evaluator that trains nothing (the proxy), or a GPU
    whose memory this process cannot read (then each trial's own check guards it).

    Raises:
        SearchError: The first GPU that cannot hold its workers' models, naming the
            numbers.
    """
    shared = {s.gpus[0]: s.workers_on_gpu for s in slots if s.gpus and len(s.gpus) == 1}
    if max(shared.values(), default=1) == 1:
        return
    config = setup.config
    if config.run_on not in ("auto", "cuda", "cuda:0"):
        raise SearchError(
            "‹workers_per_gpu› gives each worker one GPU (its cuda:0), so ‹run_on› must be "
            f"auto or cuda:0, got {config.run_on!r}"
        )
    trains = EVALUATORS.get(config.evaluator).measured
    if not (trains and setup.needs_training):
        return
    from nasmlcn.hardware import format_bytes

    largest = largest_model_memory(setup)
    sizes = gpu_memory()
    for gpu, count in shared.items():
        size = sizes.get(gpu)
        if size is None or largest * count <= size:
            continue
        fit = size // largest  # largest > 0 here
        advice = (
            f"use ‹workers_per_gpu› {fit} at most"
            if fit >= 1
            else "run one worker per GPU (leave ‹workers_per_gpu› out)"
        )
        raise SearchError(
            f"GPU {gpu} cannot hold {count} workers: the largest of {LARGEST_MODEL_DRAWS} models "
            f"drawn from this search needs about {format_bytes(largest)} to train, and "
            f"{count} of them need more than the GPU's {format_bytes(size)}; {advice}, or "
            "lower ‹flops› or ‹batch_size›"
        )


LARGEST_MODEL_DRAWS = 64
"""Models drawn from a search's space to find its largest (:func:`largest_model_memory`)."""


def largest_model_memory(setup: SearchSetup, draws: int = LARGEST_MODEL_DRAWS) -> int:
    """Training memory (bytes) of the largest of ``draws`` models drawn at random
    (seeded, so always the same ones) from ``setup``'s search space, as each trial's
    own memory check predicts it: the analytic cost model at the largest batch the
    trial trains at (:func:`nasmlcn.training.check_training_memory`).

    An estimate of the largest model the search trains, not a bound: the bound the
    search guarantees, its target devices' memory (every model fits its buckets),
    is far above what the bucket spaces build, whose load limits fill long before
    their memory (``--devices 8xK80 --flops 1x``: 89.4 GiB, the largest model 2.8
    GiB), and would refuse almost every sharing. A trial whose model is larger than
    the estimate is refused by its own memory check. Models the space marks
    infeasible (never trained) are left out.
    """
    import optuna

    from nasmlcn.costs import get_cost_model
    from nasmlcn.training import largest_batch_size

    config = setup.config
    model = get_cost_model("analytic")
    distributions = setup.space.distributions()
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    largest = 0
    for _ in range(draws):
        params = study.ask(distributions).params
        candidate = setup.space.build(params, setup.space_context)
        if not candidate.feasible:
            continue
        batch = largest_batch_size(
            str(params.get("batch_policy", "fixed")),
            int(params.get("batch_size", config.batch_size)),
            config.epochs,
        )
        if config.train_limit is not None:  # a batch holds at most the training images
            batch = min(batch, config.train_limit)
        largest = max(largest, model.model_cost(candidate.spec, batch).memory_bytes)
    return largest


def gpu_memory() -> dict[str, int]:
    """Total memory of each GPU this process may use, by its ``visible_gpus`` name
    (none if torch cannot see them)."""
    from nasmlcn.hardware import detect_devices

    local = {d.name: d.memory_bytes for d in detect_devices() if d.name.startswith("cuda:")}
    return {gpu: local[f"cuda:{j}"] for j, gpu in enumerate(visible_gpus()) if f"cuda:{j}" in local}


def visible_gpus() -> list[str]:
    """The GPUs this process may use: ``CUDA_VISIBLE_DEVICES`` if set, else all."""
    given = os.environ.get("CUDA_VISIBLE_DEVICES")
    if given is not None:
        return [g.strip() for g in given.split(",") if g.strip() and g.strip() != "-1"]
    try:
        import torch

        return [str(i) for i in range(torch.cuda.device_count())]
    except Exception:  # pragma: no cover - torch missing
        return []
