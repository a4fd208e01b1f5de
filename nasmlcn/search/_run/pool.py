"""``--workers N``: N worker processes on one study, on this machine.

The parent process creates (or checks) the study, then starts N workers (fresh
interpreters, ``multiprocessing`` spawn) that each run :func:`run_search` on it;
the study's lock and trial claiming (:mod:`nasmlcn.study._claim`) share the
trials out, exactly as with workers started by hand or on other machines.

Each worker's GPUs and CPU threads: :mod:`~nasmlcn.search._run.shares`.

The parent relays each worker's finished trials to the observer (the CLI's live
display) and returns one :class:`SearchResult` for the whole run. Ctrl-C and
SIGTERM reach every worker (:class:`StopRelay`), even one still starting: each fails
and queues its running trial, and the run stops.

Ctrl-C and SIGTERM in a pool of workers: the parent passes each on to every worker and notes it for those still starting
(:class:`StopRelay`); a worker takes them once it can stop cleanly
(:func:`take_stop_signals`); a worker whose parent is gone stops as on SIGTERM
(:func:`stop_with_parent`).
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import os
import queue
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from typing import Any

from nasmlcn._exit import before_exit
from nasmlcn._signals import Terminated, raising, stop_kind, stopped_by_sigterm, took_parent_gone
from nasmlcn.errors import SearchError
from nasmlcn.search._config import WORKERS_PER_GPU_ENV, SearchConfig
from nasmlcn.search._prepare.open_study import (
    open_search,
    quiet_optuna,
    require_storage,
    require_tracker,
)
from nasmlcn.search._prepare.setup import setup_search
from nasmlcn.search._run.loop import run_in_process, start_run, summarize_study
from nasmlcn.search._run.observer import Observers, SearchObserver, SearchResult, TrialOutcome
from nasmlcn.search._run.shares import WorkerSlot, check_gpu_sharing, plan_workers
from nasmlcn.search.evaluators._base import EpochReport
from nasmlcn.study import Noise, Replicate, finished


class _ToParent(SearchObserver):
    """A worker's observer: sends finished trials, every epoch and the replicate to
    the parent."""

    def __init__(self, channel: Any, index: int) -> None:
        self.channel = channel
        self.index = index

    def on_epoch(self, number: int, report: EpochReport, epochs: int) -> None:
        self.channel.put(("epoch", self.index, (number, report, epochs)))

    def on_trial_end(self, outcome: TrialOutcome) -> None:
        self.channel.put(("trial", self.index, outcome))

    def on_replicate_start(self, number: int, lanes: str, epochs: int) -> None:
        self.channel.put(("replicate_start", self.index, (number, lanes, epochs)))

    def on_replicate_end(self, replicate: Replicate, noise: Noise) -> None:
        self.channel.put(("replicate_end", self.index, (replicate, noise)))


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
        result = run_in_process(
            config, [_ToParent(channel, slot.index), *observers], forecast=False
        )
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
    done = finished(study, config.count_repeats)
    result = start_run(config, setup, study, opened.resumed, done, observer, workers=len(slots))
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
        elif kind == "replicate_start":
            observer.on_replicate_start(*payload)
        elif kind == "replicate_end":
            observer.on_replicate_end(*payload)
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


_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class StopRelay:
    """Ctrl-C and SIGTERM for a pool's parent, in the main thread (elsewhere only
    :attr:`stop` is made: a shared integer, the number of the first signal that
    came, 0 before).

    Each signal is noted, set in :attr:`stop` and passed on to every worker started
    (:attr:`processes`), never raised, so the parent always waits for its workers to
    write their trials down. A worker starts with the signals ignored (the parent
    ignores them for the instant of each start, :meth:`starting`, and the worker
    inherits that): one half started would die of a Ctrl-C with a traceback. It
    takes them once it can stop cleanly (:func:`take_stop_signals`), after looking
    at :attr:`stop` for one that came before. A terminal's Ctrl-C reaches the workers
    twice (from the terminal and from here); a worker takes it once
    (:data:`~nasmlcn._signals.SIGNAL_ECHO_S`). A SIGINT sent to the parent alone
    (``kill -INT``) stops the workers too. (Blocking the signals instead would not
    hold them: a native thread of a library (likely OpenBLAS) takes a signal the main
    thread blocks, and ``multiprocessing`` unblocks them when it starts its
    resource tracker.)"""

    def __init__(self) -> None:
        self.stop = multiprocessing.get_context("spawn").RawValue("i", 0)
        self.processes: list[Any] = []
        self.interrupted = False  # a Ctrl-C (SIGINT) came
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> StopRelay:
        if threading.current_thread() is threading.main_thread():
            self._previous = {s: signal.signal(s, self._relay) for s in _STOP_SIGNALS}
        return self

    @contextlib.contextmanager
    def starting(self, process: Any) -> Iterator[None]:
        """Starts ``process`` (in the block) with the signals ignored, then passes
        them on to it too."""
        if self._previous:
            for sig in _STOP_SIGNALS:
                signal.signal(sig, signal.SIG_IGN)
        try:
            yield
        finally:
            if self._previous:
                for sig in _STOP_SIGNALS:
                    signal.signal(sig, self._relay)
        self.processes.append(process)

    def _relay(self, signum: int, frame: Any) -> None:
        self.interrupted = self.interrupted or signum == signal.SIGINT
        if not self.stop.value:  # before the signal: a worker not yet taking it looks here
            self.stop.value = signum
        for process in self.processes:
            if process.is_alive() and process.pid is not None:
                with contextlib.suppress(OSError):
                    os.kill(process.pid, signum)

    def __exit__(self, *exc: object) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)


def take_stop_signals(stop: Any) -> None:
    """A worker's Ctrl-C and SIGTERM, taken once it can stop cleanly: each raises
    (a SIGTERM as :class:`~nasmlcn._signals.Terminated`), but not its
    echo (:func:`~nasmlcn._signals.raising`). One that came while the
    worker started (``stop``, set by its parent's :class:`StopRelay`) raises here."""
    signal.signal(signal.SIGINT, raising(KeyboardInterrupt))
    signal.signal(signal.SIGTERM, raising(stopped_by_sigterm))
    if hasattr(signal, "pthread_sigmask"):  # a worker may inherit its parent's block
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOP_SIGNALS)
    if stop.value == signal.SIGTERM:
        raise Terminated()
    if stop.value:
        raise KeyboardInterrupt


def stop_with_parent() -> None:
    """Sends this worker a SIGTERM once its parent process has ended (``kill -9``, an
    out-of-memory kill, a test driver's timeout): it stops as a scheduler's stop
    stops it, its running trial failed and queued again, where it used to run the
    study to its ``--trials`` with no one to show its trials. A daemon thread waits
    on the parent's sentinel (``multiprocessing.parent_process``), which needs no
    polling; nothing is started in a process that is not a ``multiprocessing``
    child."""
    parent = multiprocessing.parent_process()
    if parent is None:
        return

    def watch() -> None:
        parent.join()  # returns once the parent is gone
        took_parent_gone()
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, name="nasmlcn-parent-watch", daemon=True).start()


def parent_alive() -> bool:
    """Whether this process's ``multiprocessing`` parent still runs (True where it
    has none)."""
    parent = multiprocessing.parent_process()
    return parent is None or parent.is_alive()
