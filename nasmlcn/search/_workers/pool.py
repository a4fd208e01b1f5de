"""``--workers N``: N worker processes on one study, on this machine.

The parent process creates (or checks) the study, then starts N workers (fresh
interpreters, ``multiprocessing`` spawn) that each run :func:`run_search` on it;
the study's lock and trial claiming (:mod:`nasmlcn.study._claim`) share the
trials out, exactly as with workers started by hand or on other machines.

Devices: with ``--gpus-per-trial K``, worker ``i`` sees only GPUs ``iK .. iK+K-1``
(``CUDA_VISIBLE_DEVICES``), so 8 GPUs run 8 one-GPU trials or 2 four-GPU
lane-parallel trials at once. With ``--workers-per-gpu K`` (one GPU per trial),
worker ``i`` sees GPU ``i // K``: 2 GPUs and K = 4 run 8 workers, 0-3 on the first
GPU and 4-7 on the second; each worker's trials must fit its share of its GPU's
memory (1/K; :func:`check_gpu_sharing` refuses up front a search whose largest
model cannot fit K times). Without either, the workers split this machine's CPU
cores (``torch.set_num_threads`` and ``OMP_NUM_THREADS``); GPU workers split them
too.

The parent relays each worker's finished trials to the observer (the CLI's live
display) and returns one :class:`SearchResult` for the whole run. Ctrl-C and
SIGTERM reach every worker (:class:`StopRelay`), even one still starting: each fails
and queues its running trial, and the run stops.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import queue
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from nasmlcn._exit import before_exit
from nasmlcn._signals import stop_kind
from nasmlcn.errors import SearchError
from nasmlcn.search._config.config import WORKERS_PER_GPU_ENV, SearchConfig
from nasmlcn.search._loop.runner import run_in_process, start_run, summarize_study
from nasmlcn.search._prepare.entry import quiet_optuna, require_storage, require_tracker
from nasmlcn.search._prepare.open_study import open_search
from nasmlcn.search._prepare.setup import setup_search
from nasmlcn.search._registries.evaluators import EVALUATORS
from nasmlcn.search._types.evaluation import EpochReport
from nasmlcn.search._types.observer import Observers, SearchObserver
from nasmlcn.search._types.outcome import SearchResult, TrialOutcome
from nasmlcn.search._types.setup import SearchSetup
from nasmlcn.search._workers.signals import (
    StopRelay,
    parent_alive,
    stop_with_parent,
    take_stop_signals,
)
from nasmlcn.study import finished


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


class _ToParent(SearchObserver):
    """A worker's observer: sends finished trials, and every epoch, to the parent."""

    def __init__(self, channel: Any, index: int) -> None:
        self.channel = channel
        self.index = index

    def on_epoch(self, number: int, report: EpochReport, epochs: int) -> None:
        self.channel.put(("epoch", self.index, (number, report, epochs)))

    def on_trial_end(self, outcome: TrialOutcome) -> None:
        self.channel.put(("trial", self.index, outcome))


def _worker(
    config: SearchConfig,
    slot: WorkerSlot,
    channel: Any,
    observer_factories: Sequence[Callable[[], SearchObserver]],
    log: bool,
    stop: Any,
) -> None:
    """One worker process (a fresh interpreter: the environment is set before torch
    is imported). ``log``: the parent configured logging (the CLI does), so the
    worker's warnings go to stderr too; a library caller's workers print nothing.
    ``stop``: set when a Ctrl-C or SIGTERM came before it could take one."""
    if log:
        logging.basicConfig(level=logging.WARNING, format="%(message)s")
    if slot.gpus is not None:
        os.environ["CUDA_VISIBLE_DEVICES"] = ",".join(slot.gpus)
        os.environ[WORKERS_PER_GPU_ENV] = str(slot.workers_on_gpu)  # its memory share
    # torch takes its threads from this when the train evaluator imports it; a worker
    # whose evaluator needs no torch (the proxy) never imports it (1.5 s a worker)
    os.environ["OMP_NUM_THREADS"] = str(slot.threads)
    if "torch" in sys.modules:  # imported already, by what unpickled the arguments
        import torch

        torch.set_num_threads(slot.threads)
    try:  # run_search keeps Optuna quiet (quiet_optuna)
        take_stop_signals(stop)  # ignored since the parent started it (StopRelay)
        stop_with_parent()
        observers = [make() for make in observer_factories]
        result = run_in_process(config, [_ToParent(channel, slot.index), *observers])
    except KeyboardInterrupt as stop:  # Ctrl-C or SIGTERM, the first while it started too
        if parent_alive():  # no one to tell, and a broken pipe's traceback
            channel.put(("done", slot.index, stop_kind(stop)))
        _leave(channel)
        return
    except Exception as err:
        channel.put(("error", slot.index, f"{type(err).__name__}: {err}"))
        return
    channel.put(("done", slot.index, result.stopped))
    _leave(channel)
    before_exit()  # the worker process ends here


def _leave(channel: Any) -> None:
    """Where the worker's parent is gone, what it sent (its trials' epochs) is read by
    no one: its exit does not wait to write it. A parent that stopped reading before
    it was killed left the pipe full, and the worker waited at its exit for ever
    (``multiprocessing``'s queue joins its feeder thread then)."""
    if not parent_alive():
        channel.cancel_join_thread()


@quiet_optuna()
def run_workers(
    config: SearchConfig,
    observers: Sequence[SearchObserver] = (),
    *,
    workers: int | None = None,
    gpus_per_trial: int | None = None,
    workers_per_gpu: int | None = None,
    worker_observers: Sequence[Callable[[], SearchObserver]] = (),
) -> SearchResult:
    """Runs the search of ``config`` with a pool of worker processes (see the module
    docstring); one result for the whole run.

    Args:
        config: The search.
        observers: What watches the run in this process: its start, every worker's
            finished trials and its end (``DashboardObserver(notes=False)`` writes
            the figures once; ``MlflowObserver(config.mlflow, trials=False)`` opens
            and closes the study's parent run).
        workers: Worker processes (None: one per ``gpus_per_trial`` GPUs, or
            ``workers_per_gpu`` per GPU, else 1).
        gpus_per_trial: GPUs of each worker (None: no GPUs assigned; CPU cores split).
        workers_per_gpu: Workers sharing each GPU, one GPU each (implies
            ``gpus_per_trial`` 1): worker ``i`` on GPU ``i // workers_per_gpu``, its
            trials held to that share of the GPU's memory.
        worker_observers: Picklable factories of observers each worker attaches
            (``nasmlcn.dashboard.DashboardObserver``: the dashboard's notes;
            ``functools.partial(MlflowObserver, config.mlflow, end_parent=False)``:
            each worker logs its own trials under the one parent run).

    Raises:
        NasmlcnError: Invalid configuration, storage or device request (before any
            worker starts), or every worker failed.
    """
    started = time.perf_counter()
    require_storage(config)
    require_tracker(config, observers)
    slots = plan_workers(workers, gpus_per_trial, workers_per_gpu)
    observer = Observers(observers)
    setup = setup_search(config)
    check_gpu_sharing(setup, slots)
    # errors here, before any worker; a new study is warm-started here, once
    opened = open_search(setup, observer)
    setup, study = opened.setup, opened.study
    result = start_run(
        config, setup, study, opened.resumed, finished(study, config.count_repeats), observer
    )
    result.warm_start = opened.warmed.to_dict() if opened.warmed is not None else None
    with StopRelay() as relay:  # Ctrl-C and SIGTERM noted and passed on to the workers
        processes, channel = _start_workers(config, slots, worker_observers, relay)
        stops, errors = _listen(observer, processes, channel, result)
        for process in processes:
            process.join()
    _close_result(result, slots, stops, errors, relay.interrupted)
    summarize_study(study, setup, result)
    result.seconds = time.perf_counter() - started
    observer.on_end(result)
    return result


def _start_workers(
    config: SearchConfig,
    slots: list[WorkerSlot],
    worker_observers: Sequence[Callable[[], SearchObserver]],
    relay: StopRelay,
) -> tuple[list[Any], Any]:
    """Starts one spawned process per slot; they report on the returned channel and
    stop before their first trial once ``relay`` noted a Ctrl-C or SIGTERM."""
    context = multiprocessing.get_context("spawn")
    channel = context.Queue()
    processes = [
        context.Process(
            target=_worker,
            # the workers' trackers come from worker_observers, not the config; the
            # study is made and warm-started here: a worker only opens it
            args=(
                replace(config, mlflow=None, warm_start=None),
                slot,
                channel,
                tuple(worker_observers),
                logging.getLogger().hasHandlers(),
                relay.stop,
            ),
            name=f"worker-{slot.index}",
        )
        for slot in slots
    ]
    for process in processes:
        with relay.starting(process):
            process.start()
    return processes, channel


def _listen(
    observer: SearchObserver, processes: list[Any], channel: Any, result: SearchResult
) -> tuple[dict[int, str], list[str]]:
    """Relays the workers' trials and epochs to ``observer`` until every worker has
    stopped; how each stopped, and the errors."""
    stops: dict[int, str] = {}
    errors: list[str] = []
    while len(stops) < len(processes):  # every way a worker stops is one entry in stops
        try:
            kind, index, payload = channel.get(timeout=0.5)
        except queue.Empty:
            dead = [
                i
                for i, p in enumerate(processes)
                if not p.is_alive() and i not in stops and p.exitcode not in (0, None)
            ]
            for i in dead:
                # killed (-9, out of memory): its trial goes stale and is retried
                stops[i] = f"exit code {processes[i].exitcode}"
                errors.append(f"worker {i} died (exit code {processes[i].exitcode})")
            continue
        if kind == "trial":
            result.run_trials.append(payload)
            observer.on_trial_end(payload)
        elif kind == "epoch":  # a log's line per epoch (the CLI's display)
            observer.on_epoch(*payload)
        elif kind == "done":
            stops[index] = payload
        else:
            errors.append(f"worker {index}: {payload}")
            stops[index] = "error"
    return stops, errors


def _close_result(
    result: SearchResult,
    slots: list[WorkerSlot],
    stops: dict[int, str],
    errors: list[str],
    interrupted: bool,
) -> None:
    """Why the run stopped and how each worker did (every worker failing is an error)."""
    if errors and all(s in ("error",) or s.startswith("exit code") for s in stops.values()):
        raise SearchError("every worker failed: " + "; ".join(errors))
    values = set(stops.values())
    if interrupted or "interrupted" in values:
        result.stopped = "interrupted"
    elif "terminated" in values:
        result.stopped = "terminated"
    elif "timeout" in values:
        result.stopped = "timeout"
    elif "failures" in values and "trials" not in values:
        result.stopped = "failures"
    else:
        result.stopped = "trials"
    result.workers = [
        {
            "index": s.index,
            "gpus": list(s.gpus) if s.gpus is not None else None,
            "threads": s.threads,
            "workers_on_gpu": s.workers_on_gpu,
            "stopped": stops.get(s.index),
        }
        for s in slots
    ]
    result.errors = errors
