"""The searches: one per run and seed, on worker processes, with real training
through the cache; the time estimate from a proxy dry run."""

from __future__ import annotations

import statistics
import sys
import time
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from nasmlcn.search import (
        Evaluator,
        TrialOutcome,
    )

from _search_quality.cache import CachedEvaluator, ResultCache
from _search_quality.report import _clock
from _search_quality.settings import (
    LATENCY_MARGIN,
    RUNS,
    SECONDS_FIXED,
    SECONDS_PER_TRAINING_IMAGE,
    SECONDS_PER_TRIAL_OVERHEAD,
    TWO_THREAD_SPEEDUP,
    Run,
    Settings,
    TrialRecord,
)


def make_observer(
    label: str, seed: int, trials: int, evaluator: CachedEvaluator, started: float
) -> Any:
    """A progress line per trial on stderr; remembers which trials the cache served."""
    from nasmlcn.search import SearchObserver

    class Progress(SearchObserver):
        def __init__(self) -> None:
            self.cached: dict[int, bool] = {}
            self.compute: dict[int, float] = {}

        def on_trial_end(self, outcome: TrialOutcome) -> None:
            hit = bool(evaluator.last_hit)
            evaluator.last_hit = None
            self.cached[outcome.number] = hit
            self.compute[outcome.number] = evaluator.last_compute
            evaluator.last_compute = 0.0
            if outcome.values:
                what = f"accuracy {outcome.values[0]:.4f}"
                if len(outcome.values) > 1:
                    what += f", latency {outcome.values[1] * 1e3:.3f} ms"
            else:
                what = f"{outcome.state}: {outcome.reason}"
            how = "from the cache" if hit else f"{outcome.seconds:.1f} s"
            if outcome.repeat_of is not None:
                how = f"a repeat of trial {outcome.repeat_of + 1}: not trained"
            print(
                f"[{label}, seed {seed}] trial {outcome.number + 1}/{trials}: {what} ({how}); "
                f"elapsed {_clock(time.time() - started)}",
                file=sys.stderr,
                flush=True,
            )

    return Progress()


class Task(NamedTuple):
    """One search: a run with one seed."""

    run: Run
    seed: int


class TaskResult(NamedTuple):
    task: Task
    records: list[TrialRecord]
    trained: dict[str, dict[str, Any]]  # the cache entries it added
    seconds: float


def schedule(settings: Settings) -> list[Task]:
    """Every task, in the order to start them: the runs others reuse first (the
    thesis space first: its models are the largest), seed by seed."""
    first = [r for r in RUNS if r.reuses is None]
    then = [r for r in RUNS if r.reuses is not None]
    return [Task(r, s) for s in settings.seeds for r in first] + [
        Task(r, s) for s in settings.seeds for r in then
    ]


def storage_url(tmp: Path, task: Task, kind: str) -> str:
    """One SQLite file per search: worker processes never share one."""
    name = task.run.key.replace("/", "_").replace("+", "_")
    return f"sqlite:///{tmp / f'{kind}-{name}-seed{task.seed}.db'}"


def search(
    task: Task,
    settings: Settings,
    storage: str,
    evaluator: CachedEvaluator,
    *,
    proxy: bool = False,
    started: float | None = None,
) -> list[TrialRecord]:
    """One search; its trials in order. Progress on stderr when ``started`` is given."""
    from nasmlcn.search import SearchObserver, run_search

    run, seed = task
    config = settings.search_config(seed).with_overrides(
        flops=settings.flops,
        space=run.space,
        sampler=run.sampler,
        objectives=run.objectives,
        evaluator="proxy" if proxy else "train",
        epochs=run.epochs(settings),
        trials=run.trials(settings),
        storage=storage,
        study=f"{run.key}/seed-{seed}",
        **({"prune": True, "pruner": run.pruner} if run.pruner else {}),
    )
    observer = (
        make_observer(run.key, seed, run.trials(settings), evaluator, started)
        if started is not None
        else SearchObserver()
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = run_search(config, [observer], evaluator=evaluator)
    if result.stopped == "interrupted":  # run_search took the Ctrl-C: stop it all
        raise KeyboardInterrupt
    cached = getattr(observer, "cached", {})
    compute = getattr(observer, "compute", {})
    return [
        TrialRecord(
            t.number,
            t.state,
            t.values[0] if t.values else None,
            t.values[1] if t.values and len(t.values) > 1 else None,
            cached.get(t.number, False),
            t.seconds,
            t.lanes,
            compute.get(t.number, 0.0),
            t.repeat_of,
        )
        for t in sorted(result.run_trials, key=lambda t: t.number)
    ]


_TRAINERS: dict[int, Evaluator] = {}
"""Per process and seed, the train evaluator: it loads the seed's data split once."""


def init_worker(threads: int) -> None:
    """A worker process: ``threads`` torch threads, Optuna and warnings quiet."""
    import optuna
    import torch

    torch.set_num_threads(threads)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    warnings.simplefilter("ignore")


def run_task(
    task: Task, settings: Settings, storage: str, cache: ResultCache, started: float
) -> TaskResult:
    """One search with real training, through ``cache`` (in a worker: a copy)."""
    import torch

    from nasmlcn.data import DATASETS
    from nasmlcn.search import EVALUATORS

    if task.seed not in _TRAINERS:
        _TRAINERS[task.seed] = EVALUATORS.get("train")(
            config=settings.search_config(task.seed),
            dataset=DATASETS.get(settings.dataset),
        )
    meta = {
        "space": task.run.space,
        "sampler": task.run.sampler,
        "scale": settings.scale(task.run.epochs(settings)),
        "threads": torch.get_num_threads(),
    }
    evaluator = CachedEvaluator(_TRAINERS[task.seed], cache, settings.training(), meta)
    tick = time.time()
    records = search(task, settings, storage, evaluator, started=started)
    trained = {key: cache.entries[key] for key in evaluator.trained}
    return TaskResult(task, records, trained, time.time() - tick)


def run_all(
    settings: Settings, cache: ResultCache, tmp: Path, workers: int, threads: int, started: float
) -> list[TaskResult]:
    """Every task, on ``workers`` processes (1: here, one after the other).

    A task starts once the run it reuses has finished for its seed, with the cache
    as it is then; its trainings join the cache (and its file) when it ends.
    """
    tasks = schedule(settings)
    results: list[TaskResult] = []
    if workers == 1:
        for task in tasks:  # the schedule's order already has every reused run first
            result = run_task(task, settings, storage_url(tmp, task, "run"), cache, started)
            cache.update(result.trained)
            results.append(result)
        return results

    import multiprocessing
    from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait

    finished: set[tuple[str, int]] = set()
    running: dict[Future[TaskResult], Task] = {}
    context = multiprocessing.get_context("spawn")  # no fork of a process holding torch
    with ProcessPoolExecutor(
        workers, mp_context=context, initializer=init_worker, initargs=(threads,)
    ) as pool:
        while tasks or running:
            while len(running) < workers:
                ready: Task | None = next(
                    (
                        t
                        for t in tasks
                        if t.run.reuses is None or (t.run.reuses, t.seed) in finished
                    ),
                    None,
                )
                if ready is None:
                    break
                tasks.remove(ready)
                url = storage_url(tmp, ready, "run")
                future = pool.submit(run_task, ready, settings, url, cache.detached(), started)
                running[future] = ready
            assert running, f"no task can start: {tasks}"
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in done:
                task = running.pop(future)
                result = future.result()
                cache.update(result.trained)
                finished.add((task.run.key, task.seed))
                results.append(result)
    return results


def latency_reference(settings: Settings) -> tuple[float, float]:
    """The largest step time the load limit allows, and the reference latency.

    Both spaces fill per-device buckets whose load limit (``--flops``, scaled by
    device speed) bounds each device's time, so no model's makespan exceeds the
    largest ``load_limit / speed``.
    """
    from nasmlcn.planning import load_limits
    from nasmlcn.search import SearchConfig, setup_search

    bound = 0.0
    for space in sorted({r.space for r in RUNS}):
        setup = setup_search(
            SearchConfig(
                devices=settings.devices,
                mem=settings.mem,
                flops=settings.flops,
                space=space,
                evaluator="proxy",
            )
        )
        ctx = setup.space_context.cost_context
        limits = load_limits(setup.devices, setup.flops, setup.cost_model, ctx)
        bound = max([bound, *(lim / d.speed for lim, d in zip(limits, setup.devices, strict=True))])
    return bound, bound * (1.0 + LATENCY_MARGIN)


def estimate(
    settings: Settings, cache: ResultCache, tmp: Path, workers: int, threads: int
) -> dict[str, Any]:
    """The trainings the real runs need and about how long they take.

    A dry run of every run and seed through a copy of the cache: a trial the real
    cache holds gets its real result, any other one the proxy evaluator's (and is
    counted). The count is exact for random proposals and for whatever the cache
    holds; TPE's and NSGA-II's later proposals after a proxy result differ from the
    real run's, but share a model with another run about as rarely, so their count
    is close. Time: the dry run, ``SECONDS_FIXED``, and trainings x seconds per
    training (:func:`seconds_per_training`) / workers; the tail of the schedule (one
    worker idle) is left out.
    """
    from nasmlcn.search import ProxyEvaluator

    tick = time.perf_counter()
    dry = cache.detached()  # real results where known: the searches follow them
    training = settings.training()
    need: dict[str, int] = {}
    for task in schedule(settings):
        evaluator = CachedEvaluator(ProxyEvaluator(), dry, training, {})
        search(task, settings, storage_url(tmp, task, "dry"), evaluator, proxy=True)
        need[task.run.key] = need.get(task.run.key, 0) + len(evaluator.trained)
    dry_run = time.perf_counter() - tick
    per_run = {}
    for r in RUNS:  # guided samplers drift to full buckets: the dearer space's figure
        spaces = [r.space] if r.sampler == "random" else sorted({x.space for x in RUNS})
        options = [
            seconds_per_training(space, settings, cache, threads, r.epochs(settings))
            for space in spaces
        ]
        per_run[r.key] = max(options)
    return {
        "trials": len(settings.seeds) * sum(r.trials(settings) for r in RUNS),
        "trainings": need,
        "seconds_per_training": {k: v[0] for k, v in per_run.items()},
        "seconds_per_training_from": {k: v[1] for k, v in per_run.items()},
        "workers": workers,
        "threads_per_worker": threads,
        "seconds": dry_run + SECONDS_FIXED + sum(need[k] * per_run[k][0] for k in need) / workers,
        "dry_run_seconds": dry_run,
    }


def seconds_per_training(
    space: str, settings: Settings, cache: ResultCache, threads: int, epochs: int
) -> tuple[float, str]:
    """Mean seconds of one training of ``space`` at these settings and ``epochs``, and
    its source: the cache's trainings at the same settings and torch threads, else the
    built-in figures."""
    same = [
        e["evaluate_seconds"]
        for e in cache.entries.values()
        if "evaluate_seconds" in e  # not a training the pruner stopped
        and e.get("space") == space
        and e.get("scale") == settings.scale(epochs)
        and e.get("threads") == threads
    ]
    if len(same) >= 5:
        return statistics.fmean(same), f"mean of {len(same)} in the cache"
    per_image = SECONDS_PER_TRAINING_IMAGE.get(space, max(SECONDS_PER_TRAINING_IMAGE.values()))
    seconds = SECONDS_PER_TRIAL_OVERHEAD + per_image * epochs * settings.train_limit
    if threads > 1:
        return seconds / TWO_THREAD_SPEEDUP, "built in, for 2 torch threads"
    return seconds, "built in"
