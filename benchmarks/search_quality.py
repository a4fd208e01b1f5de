"""Does the search beat random? Best accuracy and hypervolume after n trials, real training.

The baseline is the thesis's own search: its random MLCN generator (Algorithms 4-5,
space ``mlcn-thesis``) sampled at random (Algorithm 6). Against it: our default space
``mlcn-buckets`` sampled at random (which separates the effect of the space from that
of the sampler), with multivariate TPE and with NSGA-II. Every run is a real search
(``run_search`` with the ``train`` evaluator, on this machine's CPU) at reduced scale:
``--devices 2xK80 --mem 12GB --flops 0.25x``, 3 epochs on 2,000 training / 500
validation images of Fashion-MNIST, 3 seeds x 30 trials per run, all in one
invocation. Pruning is off: every trial's accuracy is its full 3-epoch figure.

Runs (objectives: sampler on space):

- accuracy: random on mlcn-thesis (the baseline), random on mlcn-buckets, tpe and
  nsga2 on mlcn-buckets;
- accuracy + latency (latency: the predicted training step time, objective
  ``latency``): random on mlcn-thesis, random on mlcn-buckets, nsga2 on mlcn-buckets.

Printed per run, after n = 5, 10, 15, 20, 30 trials (mean ± sd over seeds, and how
many runs each figure rests on): the best validation accuracy so far and, for
accuracy + latency, the hypervolume of the front so far. The hypervolume uses ONE
reference point for all runs: accuracy = chance (1 / classes), latency = 1.1 x the
largest step time the devices' load limit (``--flops``) allows, which no model of
either space exceeds (checked on every trial); it is normalised by the box between
that point and (accuracy 1, latency 0), so 1.0 would be a perfect model at zero
latency. Then the two goals: "TPE reaches random's (thesis space) mean best-of-30
accuracy within 15 trials" and "NSGA-II's hypervolume after 30 trials >= random's".

A cache of trained results (a JSON file, ``--cache``, default
``~/.cache/nasmlcn/search-quality/cache.json``) is keyed by the architecture, the
training settings, the search seed and the trial number: the train evaluator seeds a
model's weights from the last two, so the cache serves exactly what training would
have returned. Runs share what their samplers propose alike: random sampling with a
seed proposes the same models whatever the objectives, and TPE's startup trials and
NSGA-II's first generation are Optuna's random sampler with that seed. A second
invocation trains nothing it trained before. The output says how many trials the
cache served.

The searches run on ``--workers`` processes (default 2, of cores / workers torch
threads each): these multi-lane models are many small operations, and two 1-thread
processes train 1.25x the images per second of one 2-thread process. A search
starts once the run it reuses has finished for its seed. Before any training, a dry
run of the whole plan with the ``proxy`` evaluator (about 40 s) counts the trainings
needed; with the seconds per training (the cache's, once it holds this setting, else
``SECONDS_PER_TRAINING_IMAGE``) that gives the estimate printed first: about 65 min
for the defaults on an otherwise idle 2-core machine (other load slows it in
proportion), 292 of the 630 trials trained.

Files in ``--out`` (default ``dashboards/exports/search-quality/``, git-ignored):
``search_quality.html`` and ``search_quality.png``, best-so-far accuracy and
hypervolume against trials, mean over seeds with the min-max band.

    python benchmarks/search_quality.py                  # the comparison (about 65 min)
    python benchmarks/search_quality.py --estimate       # the time estimate only (40 s)
    python benchmarks/search_quality.py --quick --json   # 2 seeds x 6 trials, 1 epoch, 300/100 images
    python benchmarks/search_quality.py --seeds 5 --trials 40 --cache /tmp/sq.json
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.metadata
import json
import os
import statistics
import sys
import tempfile
import time
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    import plotly.graph_objects as go

    from nasmlcn.search import EpochCallback, EvalRequest, Evaluation, Evaluator, TrialOutcome

DEFAULT_OUT = Path("dashboards/exports/search-quality")
DEFAULT_CACHE = Path.home() / ".cache" / "nasmlcn" / "search-quality" / "cache.json"
CACHE_SCHEMA_VERSION = 1
CHECKPOINTS = (5, 10, 15, 20, 30)
QUICK_CHECKPOINTS = (2, 4, 6)
LATENCY_MARGIN = 0.1
"""The reference latency lies this fraction above the largest step time the load
limit allows (a model at the limit still adds volume)."""

SECONDS_PER_TRAINING_IMAGE = {"mlcn-thesis": 5.2e-3, "mlcn-buckets": 2.3e-3}
"""Seconds of one trial per training image and epoch (validation and the inference
timing included), mean of 12 random proposals each, measured with this script at
the defaults (2xK80 12GB 0.25x, 3 epochs, 2,000/500 images; 2 workers of 1 torch
thread: 32 s and 14.5 s per trial) on the project's 2-core machine, otherwise
nearly idle. Only for the estimate, until the cache holds >= 5 trainings of a space
at the same settings and threads."""
SECONDS_PER_TRIAL_OVERHEAD = 1.0
"""Per trained trial on top of that: building the model, timing its inference."""
SECONDS_FIXED = 15.0
"""Starting the workers, loading each seed's data split, writing the plots."""
TWO_THREAD_SPEEDUP = 1.6
"""One process, 2 torch threads vs 1 (measured: 322 vs 202 images/s for a 9-lane
thesis model). Two processes of 1 thread each train 405 images/s together: the
default (``--workers 2``) gets 1.25x the throughput of one 2-thread process."""


class Run(NamedTuple):
    """One search setting, run once per seed.

    ``reuses``: the run whose proposals this one's first trials repeat with the same
    seed (so the cache serves them), which is therefore scheduled before it. Only a
    scheduling hint: a wrong one costs trainings, never correctness.
    """

    objectives: tuple[str, ...]
    sampler: str
    space: str
    reuses: str | None = None

    @property
    def key(self) -> str:
        return f"{'+'.join(self.objectives)}/{self.sampler}/{self.space}"

    @property
    def label(self) -> str:
        baseline = " (baseline)" if (self.sampler, self.space) == BASELINE else ""
        return f"{self.sampler} on {self.space}{baseline}"


BASELINE = ("random", "mlcn-thesis")
ACCURACY = ("accuracy",)
PARETO = ("accuracy", "latency")
_THESIS = "accuracy/random/mlcn-thesis"
_BUCKETS = "accuracy/random/mlcn-buckets"
_PARETO_BUCKETS = "accuracy+latency/random/mlcn-buckets"
RUNS = (
    Run(ACCURACY, "random", "mlcn-thesis"),
    Run(ACCURACY, "random", "mlcn-buckets"),
    # With a latency objective the buckets space also searches how full the buckets
    # are (accuracy alone fills them), so it proposes other models than _BUCKETS.
    Run(PARETO, "random", "mlcn-buckets"),
    # TPE's startup trials and NSGA-II's first generation are Optuna's random sampler
    # with the same seed, and random sampling ignores the objectives (not the space).
    Run(ACCURACY, "tpe", "mlcn-buckets", reuses=_BUCKETS),
    Run(ACCURACY, "nsga2", "mlcn-buckets", reuses=_BUCKETS),
    Run(PARETO, "random", "mlcn-thesis", reuses=_THESIS),
    Run(PARETO, "nsga2", "mlcn-buckets", reuses=_PARETO_BUCKETS),
)


def _default_lr_policy() -> str:
    """The trainer's default lr policy (a cache key part: it decides the results)."""
    from nasmlcn.training import TrainConfig

    return TrainConfig().lr_policy


@dataclass(frozen=True)
class Settings:
    """What every run of one invocation shares."""

    devices: str
    mem: str
    flops: str
    epochs: int
    train_limit: int
    val_limit: int
    seeds: tuple[int, ...]
    trials: int
    checkpoints: tuple[int, ...]
    run_on: str = "cpu"
    dataset: str = "fashion-mnist"

    @property
    def half(self) -> int:
        """The TPE goal's budget: half the trials (15 of 30)."""
        return max(self.trials // 2, 1)

    def search_config(self, seed: int) -> Any:
        """The settings every search and trainer of this benchmark shares, for ``seed``."""
        from nasmlcn.search import SearchConfig

        return SearchConfig(
            devices=self.devices,
            mem=self.mem,
            dataset=self.dataset,
            train_limit=self.train_limit,
            val_limit=self.val_limit,
            seed=seed,
            run_on=self.run_on,
            prune=False,  # every trial's accuracy is a full-length figure
        )

    def training(self) -> dict[str, Any]:
        """Everything besides the job that decides a trained result (the cache key)."""
        return {
            "dataset": self.dataset,
            "train_limit": self.train_limit,
            "val_limit": self.val_limit,
            "run_on": self.run_on,
            # The trainer's defaults decide the result too (the lr policy changed once).
            "lr_policy": _default_lr_policy(),
            "nasmlcn": importlib.metadata.version("nasmlcn"),
            "torch": importlib.metadata.version("torch"),
        }

    def scale(self) -> dict[str, Any]:
        """The settings a training's duration depends on (for the estimate)."""
        return {
            "devices": self.devices,
            "mem": self.mem,
            "flops": self.flops,
            "epochs": self.epochs,
            "train_limit": self.train_limit,
            "val_limit": self.val_limit,
        }


class TrialRecord(NamedTuple):
    """One finished trial as the figures need it."""

    number: int
    state: str
    accuracy: float | None
    latency: float | None
    cached: bool
    seconds: float
    lanes: str


# -- the cache ------------------------------------------------------------------------


class ResultCache:
    """Trained results in a JSON file (``path`` None: in memory only)."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.entries: dict[str, dict[str, Any]] = {}
        if path is not None and path.is_file():
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError) as err:
                raise SystemExit(f"--cache {str(path)!r} is not readable JSON: {err}") from None
            if not isinstance(data, dict) or data.get("schema_version") != CACHE_SCHEMA_VERSION:
                raise SystemExit(
                    f"--cache {str(path)!r} is not a search-quality cache of schema "
                    f"{CACHE_SCHEMA_VERSION}; delete it or give another path"
                )
            self.entries = dict(data["entries"])

    @staticmethod
    def key(job: EvalRequest, training: Mapping[str, Any]) -> str:
        """The job's model, seed, trial and training settings, hashed."""
        data = {
            "arch": job.spec.to_dict(),
            "assignment": list(job.assignment),
            "seed": job.seed,
            "trial": job.trial,
            "epochs": job.epochs,
            "batch_size": job.batch_size,
            "lr": job.lr,
            **training,
        }
        return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:32]

    def detached(self) -> ResultCache:
        """A copy in memory only (what a worker process gets)."""
        copy = ResultCache(None)
        copy.entries = dict(self.entries)
        return copy

    def put(self, key: str, entry: dict[str, Any]) -> None:
        self.update({key: entry})

    def update(self, entries: Mapping[str, dict[str, Any]]) -> None:
        """Adds ``entries`` and rewrites the file, atomically: an interrupted run keeps
        what it trained, and a reader never sees half a file."""
        self.entries.update(entries)
        if self.path is None or not entries:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(self.path.name + ".tmp")
        data = {"schema_version": CACHE_SCHEMA_VERSION, "entries": self.entries}
        tmp.write_text(json.dumps(data), encoding="utf-8")
        os.replace(tmp, self.path)


class CachedEvaluator:
    """An evaluator that asks the cache first and stores what ``inner`` trains."""

    def __init__(
        self,
        inner: Evaluator,
        cache: ResultCache,
        training: Mapping[str, Any],
        meta: Mapping[str, Any],
    ) -> None:
        self.inner = inner
        self.name = inner.name
        self.measured = inner.measured
        self.cache = cache
        self.training = dict(training)
        self.meta = dict(meta)
        self.last_hit: bool | None = None
        self.trained: list[str] = []

    def evaluate(self, job: EvalRequest, on_epoch: EpochCallback) -> Evaluation:
        from nasmlcn.search import EpochReport, Evaluation

        key = ResultCache.key(job, self.training)
        entry = self.cache.entries.get(key)
        if entry is not None:
            self.last_hit = True
            data = dict(entry["evaluation"])
            for epoch, accuracy in enumerate(data["val_accuracy_per_epoch"], start=1):
                on_epoch(EpochReport(epoch, accuracy, 0.0))  # nothing was spent on it
            data["val_accuracy_per_epoch"] = tuple(data["val_accuracy_per_epoch"])
            data["extra"] = {**data["extra"], "served_by_cache": key}
            return Evaluation(**data)
        self.last_hit = False
        tick = time.perf_counter()
        evaluation = self.inner.evaluate(job, on_epoch)
        self.trained.append(key)
        self.cache.put(
            key,
            {
                "evaluation": evaluation.to_dict(),
                "evaluate_seconds": time.perf_counter() - tick,
                "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                **self.meta,
            },
        )
        return evaluation


# -- the searches ---------------------------------------------------------------------


def make_observer(
    label: str, seed: int, trials: int, evaluator: CachedEvaluator, started: float
) -> Any:
    """A progress line per trial on stderr; remembers which trials the cache served."""
    from nasmlcn.search import SearchObserver

    class Progress(SearchObserver):
        def __init__(self) -> None:
            self.cached: dict[int, bool] = {}

        def on_trial_end(self, outcome: TrialOutcome) -> None:
            hit = bool(evaluator.last_hit)
            evaluator.last_hit = None
            self.cached[outcome.number] = hit
            if outcome.values:
                what = f"accuracy {outcome.values[0]:.4f}"
                if len(outcome.values) > 1:
                    what += f", latency {outcome.values[1] * 1e3:.3f} ms"
            else:
                what = f"{outcome.state}: {outcome.reason}"
            how = "from the cache" if hit else f"{outcome.seconds:.1f} s"
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
        epochs=settings.epochs,
        trials=settings.trials,
        storage=storage,
        study=f"{run.key}/seed-{seed}",
    )
    observer = (
        make_observer(run.key, seed, settings.trials, evaluator, started)
        if started is not None
        else SearchObserver()
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = run_search(config, observer, evaluator=evaluator)
    if result.stopped == "interrupted":  # run_search took the Ctrl-C: stop it all
        raise KeyboardInterrupt
    cached = getattr(observer, "cached", {})
    return [
        TrialRecord(
            t.number,
            t.state,
            t.values[0] if t.values else None,
            t.values[1] if t.values and len(t.values) > 1 else None,
            cached.get(t.number, False),
            t.seconds,
            t.lanes,
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
        "scale": settings.scale(),
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
    from nasmlcn.search import EVALUATORS

    tick = time.perf_counter()
    dry = cache.detached()  # real results where known: the searches follow them
    training = settings.training()
    need: dict[str, int] = {}
    for task in schedule(settings):
        evaluator = CachedEvaluator(EVALUATORS.get("proxy")(), dry, training, {})
        search(task, settings, storage_url(tmp, task, "dry"), evaluator, proxy=True)
        need[task.run.key] = need.get(task.run.key, 0) + len(evaluator.trained)
    dry_run = time.perf_counter() - tick
    per_space = {
        space: seconds_per_training(space, settings, cache, threads)
        for space in sorted({r.space for r in RUNS})
    }
    guided = max(per_space.values())  # TPE and NSGA-II drift to full buckets
    per_run = {r.key: per_space[r.space] if r.sampler == "random" else guided for r in RUNS}
    return {
        "trials": len(settings.seeds) * len(RUNS) * settings.trials,
        "trainings": need,
        "seconds_per_training": {k: v[0] for k, v in per_run.items()},
        "seconds_per_training_from": {k: v[1] for k, v in per_run.items()},
        "workers": workers,
        "threads_per_worker": threads,
        "seconds": dry_run + SECONDS_FIXED + sum(need[k] * per_run[k][0] for k in need) / workers,
        "dry_run_seconds": dry_run,
    }


def seconds_per_training(
    space: str, settings: Settings, cache: ResultCache, threads: int
) -> tuple[float, str]:
    """Mean seconds of one training of ``space`` at these settings, and its source:
    the cache's trainings at the same settings and torch threads, else the built-in
    figures."""
    same = [
        e["evaluate_seconds"]
        for e in cache.entries.values()
        if e.get("space") == space
        and e.get("scale") == settings.scale()
        and e.get("threads") == threads
    ]
    if len(same) >= 5:
        return statistics.fmean(same), f"mean of {len(same)} in the cache"
    per_image = SECONDS_PER_TRAINING_IMAGE.get(space, max(SECONDS_PER_TRAINING_IMAGE.values()))
    seconds = SECONDS_PER_TRIAL_OVERHEAD + per_image * settings.epochs * settings.train_limit
    if threads > 1:
        return seconds / TWO_THREAD_SPEEDUP, "built in, for 2 torch threads"
    return seconds, "built in"


# -- figures from the trials ----------------------------------------------------------


def best_so_far(records: Sequence[TrialRecord]) -> list[float | None]:
    """After each trial (any state), the best accuracy of the completed ones so far."""
    out: list[float | None] = []
    best: float | None = None
    for r in records:
        if r.state == "COMPLETE" and r.accuracy is not None:
            best = r.accuracy if best is None else max(best, r.accuracy)
        out.append(best)
    return out


def _hypervolume(points: Sequence[tuple[float, float]], reference: tuple[float, float]) -> float:
    """Exact hypervolume of minimisation ``points`` that dominate ``reference``.

    The one private import of this benchmark: Optuna 5 has no public hypervolume
    function; its own ``plot_hypervolume_history`` uses this one (exact WFG), as
    does nasmlcn's dashboard.
    """
    import numpy as np
    from optuna._hypervolume import compute_hypervolume

    inside = [p for p in points if p[0] < reference[0] and p[1] < reference[1]]
    if not inside:
        return 0.0
    return float(compute_hypervolume(np.asarray(inside, dtype=float), np.asarray(reference)))


def hypervolume_so_far(
    records: Sequence[TrialRecord], accuracy_floor: float, latency_ref: float
) -> list[float]:
    """After each trial, the normalised hypervolume of the completed ones so far."""
    box = (1.0 - accuracy_floor) * latency_ref
    points: list[tuple[float, float]] = []
    out: list[float] = []
    for r in records:
        if r.state == "COMPLETE" and r.accuracy is not None and r.latency is not None:
            points.append((-r.accuracy, r.latency))
        out.append(_hypervolume(points, (-accuracy_floor, latency_ref)) / box if points else 0.0)
    return out


def at(curves: Sequence[Sequence[float | None]], n: int) -> dict[str, Any]:
    """Mean, sd and count over the runs (seeds) that have a value after ``n`` trials."""
    values = [v for c in curves if len(c) >= n and (v := c[n - 1]) is not None]
    return {
        "mean": statistics.fmean(values) if values else None,
        "sd": statistics.stdev(values) if len(values) > 1 else None,
        "runs": len(values),
        "values": values,
    }


def mean_curve(curves: Sequence[Sequence[float | None]]) -> list[float | None]:
    n = max((len(c) for c in curves), default=0)
    return [at(curves, i)["mean"] for i in range(1, n + 1)]


def goals(runs: Mapping[str, Any], settings: Settings) -> dict[str, Any]:
    """The two goals, from the per-seed curves."""
    t, half = settings.trials, settings.half
    base = runs[Run(ACCURACY, *BASELINE).key]["curves"]["best_accuracy"]
    tpe = runs[Run(ACCURACY, "tpe", "mlcn-buckets").key]["curves"]["best_accuracy"]
    target = at(base, t)
    tpe_half = at(tpe, half)
    reached = next(
        (
            i + 1
            for i, v in enumerate(mean_curve(tpe))
            if v is not None and target["mean"] is not None and v >= target["mean"]
        ),
        None,
    )
    out: dict[str, Any] = {
        "tpe_vs_random": {
            "goal": f"TPE reaches random's (thesis space) mean best-of-{t} accuracy "
            f"within {half} trials",
            "target": target,
            "tpe_at_half": tpe_half,
            "tpe_reaches_at": reached,
            "holds": reached is not None and reached <= half,
        }
    }
    hv = {
        key: at(runs[Run(PARETO, *key.split("/")).key]["curves"]["hypervolume"], t)
        for key in ("random/mlcn-thesis", "random/mlcn-buckets", "nsga2/mlcn-buckets")
    }
    nsga2, random_thesis = hv["nsga2/mlcn-buckets"], hv["random/mlcn-thesis"]
    out["nsga2_vs_random"] = {
        "goal": f"NSGA-II's hypervolume after {t} trials >= random's (thesis space)",
        "hypervolume": hv,
        "holds": None
        if nsga2["mean"] is None or random_thesis["mean"] is None
        else nsga2["mean"] >= random_thesis["mean"],
        "also_vs_random_buckets": None
        if nsga2["mean"] is None or hv["random/mlcn-buckets"]["mean"] is None
        else nsga2["mean"] >= hv["random/mlcn-buckets"]["mean"],
    }
    return out


# -- the plot -------------------------------------------------------------------------


class Curve(NamedTuple):
    """One run's figure against trials: the mean over seeds and the min-max band."""

    panel: str  # "accuracy" or "hypervolume"
    key: str
    label: str
    n: tuple[int, ...]
    mean: tuple[float, ...]
    low: tuple[float, ...]
    high: tuple[float, ...]
    runs: int


def plot_curves(runs: Mapping[str, Any]) -> list[Curve]:
    out = []
    for key, run in runs.items():
        panel = "hypervolume" if "latency" in run["objectives"] else "accuracy"
        curves = run["curves"]["hypervolume" if panel == "hypervolume" else "best_accuracy"]
        n, mean, low, high = [], [], [], []
        for i in range(1, max(len(c) for c in curves) + 1):
            values = [c[i - 1] for c in curves if len(c) >= i and c[i - 1] is not None]
            if values:
                n.append(i)
                mean.append(statistics.fmean(values))
                low.append(min(values))
                high.append(max(values))
        out.append(
            Curve(
                panel,
                key,
                run["label"],
                tuple(n),
                tuple(mean),
                tuple(low),
                tuple(high),
                len(curves),
            )
        )
    return out


COLORS = {
    "random/mlcn-thesis": "#444444",
    "random/mlcn-buckets": "#1f77b4",
    "tpe/mlcn-buckets": "#d62728",
    "nsga2/mlcn-buckets": "#2ca02c",
}


def figure(curves: Sequence[Curve], title: str) -> go.Figure:
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    fig = make_subplots(
        rows=1,
        cols=2,
        subplot_titles=(
            "best validation accuracy so far (objective: accuracy)",
            "hypervolume so far (objectives: accuracy, latency)",
        ),
    )
    shown: set[str] = set()
    for c in curves:
        col = 1 if c.panel == "accuracy" else 2
        sampler_space = "/".join(c.key.split("/")[1:])
        color = COLORS.get(sampler_space, "#9467bd")
        r, g, b = (int(color[i : i + 2], 16) for i in (1, 3, 5))
        fig.add_trace(
            go.Scatter(
                x=[*c.n, *reversed(c.n)],
                y=[*c.high, *reversed(c.low)],
                mode="lines",
                fill="toself",
                fillcolor=f"rgba({r},{g},{b},0.15)",
                line={"width": 0},
                hoverinfo="skip",
                showlegend=False,
                legendgroup=sampler_space,
            ),
            row=1,
            col=col,
        )
        fig.add_trace(
            go.Scatter(
                x=list(c.n),
                y=list(c.mean),
                mode="lines+markers",
                name=f"{c.label} ({c.runs} seeds)",
                line={
                    "color": color,
                    "dash": "dash" if "thesis" in sampler_space else "solid",
                    # wide, under the others: NSGA-II's first generation is its trials
                    "width": 6 if sampler_space == "random/mlcn-buckets" else 2,
                },
                opacity=0.6 if sampler_space == "random/mlcn-buckets" else 1.0,
                marker={"size": 4},
                legendgroup=sampler_space,
                showlegend=sampler_space not in shown,
            ),
            row=1,
            col=col,
        )
        shown.add(sampler_space)
    fig.update_xaxes(title_text="trials")
    fig.update_yaxes(title_text="validation accuracy", row=1, col=1)
    fig.update_yaxes(title_text="normalised hypervolume", row=1, col=2)
    fig.update_layout(
        title=title, height=520, template="plotly_white", legend={"orientation": "h", "y": -0.2}
    )
    return fig


def write_plots(fig: go.Figure, out: Path) -> list[Path]:
    """``search_quality.html`` (plotly.js inlined: opens offline) and ``.png``."""
    # nasmlcn's one Kaleido path (one Chromium session, MathJax off, a clear error
    # without Chromium); a public-named helper of the export module.
    from nasmlcn.dashboard._export import write_images
    from nasmlcn.errors import ExportError

    out.mkdir(parents=True, exist_ok=True)
    html = out / "search_quality.html"
    fig.write_html(html, include_plotlyjs=True, full_html=True)
    files = [html]
    try:
        files += write_images({"search_quality": fig}, out, ("png",))
    except ExportError as err:
        print(f"warning: no PNG: {err}", file=sys.stderr)
    return files


# -- the report -----------------------------------------------------------------------


def _clock(seconds: float) -> str:
    minutes, secs = divmod(round(seconds), 60)
    return f"{minutes}:{secs:02d}"


def _cell(stat: Mapping[str, Any], digits: int) -> str:
    if stat["mean"] is None:
        return "-"
    sd = f" ± {stat['sd']:.{digits}f}" if stat["sd"] is not None else ""
    return f"{stat['mean']:.{digits}f}{sd} [{stat['runs']}]"


def render(report: Mapping[str, Any]) -> str:
    s = report["settings"]
    ref = report["reference_point"]
    cache = report["cache"]
    lines = [
        f"Search quality: {s['devices']} {s['mem']} --flops {s['flops']}, {s['epochs']} epoch(s) "
        f"on {s['train_limit']:,} training / {s['val_limit']:,} validation images, "
        f"seeds {', '.join(map(str, s['seeds']))}, {s['trials']} trials per run, real "
        f"training on {s['run_on']} ({report['workers']} worker(s) of "
        f"{report['threads_per_worker']} torch thread(s)); no pruning: every accuracy is a "
        f"full {s['epochs']}-epoch figure.",
        f"Cache: {cache['trials_served']} of {cache['trials_evaluated']} evaluated trials "
        f"served by the cache (same model, seed and trial trained before, in this "
        f"invocation or an earlier one), {cache['trained']} trained; {cache['path']} "
        f"({cache['entries']} entries).",
        "Figures: mean ± sd over seeds [runs it rests on]; n counts every trial.",
    ]
    for objectives, what, field, digits in (
        (list(ACCURACY), "Best validation accuracy after n trials", "best_accuracy", 4),
        (list(PARETO), "Hypervolume after n trials (accuracy + latency)", "hypervolume", 4),
    ):
        runs = {k: r for k, r in report["runs"].items() if r["objectives"] == objectives}
        lines += ["", f"{what} (objectives: {', '.join(objectives)})"]
        width = max(len(r["label"]) for r in runs.values()) + 2
        lines.append("run".ljust(width) + "".join(f"n={n}".ljust(24) for n in s["checkpoints"]))
        for r in runs.values():
            cells = "".join(
                _cell(r["at"][str(n)][field], digits).ljust(24) for n in s["checkpoints"]
            )
            lines.append(r["label"].ljust(width) + cells)
    lines.append(
        f"(hypervolume reference point: accuracy {ref['accuracy']:g} (chance), latency "
        f"{ref['latency'] * 1e3:.4g} ms = {1 + LATENCY_MARGIN:g} x the load limit's largest "
        f"step time {ref['latency_bound'] * 1e3:.4g} ms; largest latency seen "
        f"{ref['max_latency_seen'] * 1e3:.4g} ms; normalised by the box up to accuracy 1, latency 0)"
    )
    lines.append("")
    repeats = []
    for r in report["runs"].values():
        distinct = [v["distinct_models"] for v in r["seeds"].values()]
        failed = sum(v["failed"] for v in r["seeds"].values())
        if failed or any(d < s["trials"] for d in distinct):
            repeats.append(
                f"{r['key']}: distinct models per seed {distinct} of {s['trials']} trials"
                + (f", {failed} trial(s) not complete" if failed else "")
            )
    lines += repeats or ["Every trial of every run trained a distinct model; none failed."]
    g = report["goals"]
    tpe = g["tpe_vs_random"]
    reached = tpe["tpe_reaches_at"]
    lines += [
        "",
        f"Goal: {tpe['goal']}: {'HOLDS' if tpe['holds'] else 'does not hold'} "
        f"(random's best-of-{s['trials']} {_cell(tpe['target'], 4)}; TPE's best after "
        f"{s['half']} {_cell(tpe['tpe_at_half'], 4)}; TPE's mean reaches it "
        + (f"after {reached} trials)" if reached else f"in none of its {s['trials']} trials)"),
    ]
    nsga = g["nsga2_vs_random"]
    hv = nsga["hypervolume"]
    verdict = {True: "HOLDS", False: "does not hold", None: "no data"}[nsga["holds"]]
    lines.append(
        f"Goal: {nsga['goal']}: {verdict} (NSGA-II {_cell(hv['nsga2/mlcn-buckets'], 4)}, random "
        f"on mlcn-thesis {_cell(hv['random/mlcn-thesis'], 4)}; random on mlcn-buckets "
        f"{_cell(hv['random/mlcn-buckets'], 4)})"
    )
    est = report["estimate"]
    lines += [
        "",
        f"Took {_clock(report['seconds'])} (estimated {_clock(est['seconds'])} for "
        f"{sum(est['trainings'].values())} trainings; trained {cache['trained']}).",
        "Files: " + ", ".join(report["files"]),
    ]
    return "\n".join(lines)


# -- main -----------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None) -> tuple[argparse.Namespace, Settings]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--devices", default="2xK80")
    parser.add_argument("--mem", default="12GB")
    parser.add_argument("--flops", default="0.25x")
    parser.add_argument("--seeds", type=int, help="seeds 0..N-1 per run [3; --quick 2]")
    parser.add_argument("--trials", type=int, help="trials per run and seed [30; --quick 6]")
    parser.add_argument("--epochs", type=int, help="epochs per trial [3; --quick 1]")
    parser.add_argument("--train-limit", type=int, help="training images [2000; --quick 300]")
    parser.add_argument("--val-limit", type=int, help="validation images [500; --quick 100]")
    parser.add_argument("--quick", action="store_true", help="a smoke run of a few minutes")
    parser.add_argument(
        "--workers",
        type=int,
        default=min(2, os.cpu_count() or 1),
        help="processes training at once, each with cores/workers torch threads [2]",
    )
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help="cache of trainings")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="folder of the plots")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--estimate", action="store_true", help="print the estimate and stop")
    args = parser.parse_args(argv)
    quick = args.quick
    seeds = args.seeds if args.seeds is not None else (2 if quick else 3)
    trials = args.trials if args.trials is not None else (6 if quick else 30)
    for name, value in (("seeds", seeds), ("trials", trials), ("workers", args.workers)):
        if value < 1:
            parser.error(f"--{name} must be >= 1")
    base = QUICK_CHECKPOINTS if quick else CHECKPOINTS
    half = max(trials // 2, 1)
    settings = Settings(
        devices=args.devices,
        mem=args.mem,
        flops=args.flops,
        epochs=args.epochs or (1 if quick else 3),
        train_limit=args.train_limit or (300 if quick else 2000),
        val_limit=args.val_limit or (100 if quick else 500),
        seeds=tuple(range(seeds)),
        trials=trials,
        checkpoints=tuple(sorted({n for n in base if n <= trials} | {half, trials})),
    )
    return args, settings


def main(argv: Sequence[str] | None = None) -> int:
    args, settings = parse_args(argv)
    import optuna

    from nasmlcn.data import DATASETS
    from nasmlcn.errors import NasmlcnError

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    started = time.time()
    cache = ResultCache(args.cache)
    floor = 1.0 / DATASETS.get(settings.dataset).num_classes
    workers = args.workers
    if workers > 1:
        threads = max((os.cpu_count() or 1) // workers, 1)
    else:
        import torch

        threads = torch.get_num_threads()
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        try:
            bound, latency_ref = latency_reference(settings)
            est = estimate(settings, cache, tmp, workers, threads)
        except NasmlcnError as err:
            print(f"error: {err}", file=sys.stderr)
            return 2
        per_run = ", ".join(
            f"{key} {n} x {est['seconds_per_training'][key]:.0f} s"
            for key, n in est["trainings"].items()
            if n
        )
        sources = sorted(set(est["seconds_per_training_from"].values()))
        print(
            f"estimate: {est['trials']} trials, {sum(est['trainings'].values())} to train, "
            f"the rest served by the cache (counted by a dry run with the proxy evaluator, "
            f"{est['dry_run_seconds']:.0f} s): {per_run or 'nothing'}; seconds per training: "
            f"{'; '.join(sources)}; on {workers} worker(s) of {threads} torch thread(s): about "
            f"{_clock(est['seconds'])} (m:s) on an otherwise idle machine",
            file=sys.stderr,
            flush=True,
        )
        if args.estimate:
            if args.json:
                print(json.dumps({"settings": asdict(settings), "estimate": est}, indent=1))
            return 0
        try:
            results = run_all(settings, cache, tmp, workers, threads, started)
        except KeyboardInterrupt:
            print(
                f"interrupted; {args.cache} keeps the trainings of every finished search",
                file=sys.stderr,
            )
            return 130

    runs: dict[str, dict[str, Any]] = {}
    for run in RUNS:
        mine = sorted((r for r in results if r.task.run == run), key=lambda r: r.task.seed)
        runs[run.key] = {
            "key": run.key,
            "objectives": list(run.objectives),
            "sampler": run.sampler,
            "space": run.space,
            "label": run.label,
            "seeds": {
                str(r.task.seed): {
                    "trials": [t._asdict() for t in r.records],
                    "seconds": r.seconds,
                    "trained": len(r.trained),
                    "served_by_cache": sum(1 for t in r.records if t.cached),
                    "failed": sum(1 for t in r.records if t.state != "COMPLETE"),
                    "distinct_models": len({t.lanes for t in r.records if t.state == "COMPLETE"}),
                }
                for r in mine
            },
        }
    max_latency = 0.0
    for run_data in runs.values():
        per_seed = [[TrialRecord(**t) for t in v["trials"]] for v in run_data["seeds"].values()]
        curves: dict[str, list[list[Any]]] = {"best_accuracy": [best_so_far(r) for r in per_seed]}
        if "latency" in run_data["objectives"]:
            curves["hypervolume"] = [hypervolume_so_far(r, floor, latency_ref) for r in per_seed]
            max_latency = max([max_latency, *(t.latency or 0.0 for r in per_seed for t in r)])
        run_data["curves"] = curves
        run_data["at"] = {
            str(n): {name: at(c, n) for name, c in curves.items()} for n in settings.checkpoints
        }
    if max_latency > latency_ref:
        print(
            f"warning: a latency of {max_latency:.4g} s lies beyond the reference point "
            f"{latency_ref:.4g} s; those trials add no hypervolume",
            file=sys.stderr,
        )
    fig = figure(
        plot_curves(runs),
        f"Does the search beat random? {settings.devices} {settings.flops}, "
        f"{settings.epochs} epoch(s), {settings.train_limit} images, "
        f"{len(settings.seeds)} seeds (band: min-max over seeds)",
    )
    files = write_plots(fig, args.out)
    served = sum(v["served_by_cache"] for r in runs.values() for v in r["seeds"].values())
    trained = sum(v["trained"] for r in runs.values() for v in r["seeds"].values())
    report: dict[str, Any] = {
        "benchmark": "search_quality",
        "settings": {**asdict(settings), "half": settings.half},
        "pruning": False,
        "workers": workers,
        "threads_per_worker": threads,
        "reference_point": {
            "accuracy": floor,
            "latency": latency_ref,
            "latency_bound": bound,
            "max_latency_seen": max_latency,
            "normalised_by": "(1 - accuracy) x latency of the reference point",
        },
        "runs": runs,
        "goals": goals(runs, settings),
        "cache": {
            "path": str(args.cache),
            "entries": len(cache.entries),
            "trials_evaluated": served + trained,
            "trials_served": served,
            "trained": trained,
        },
        "estimate": est,
        "files": [str(f) for f in files],
        "seconds": time.time() - started,
    }
    if args.json:
        print(json.dumps(report, indent=1))
    else:
        print(render(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
