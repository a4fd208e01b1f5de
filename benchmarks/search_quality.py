"""Does the search beat random? Best accuracy after n trials and c compute-seconds,
hypervolume, and multi-fidelity, real training, with paired intervals over seeds.

The baseline is the thesis's own search: its random MLCN generator (Algorithms 4-5,
space ``mlcn-thesis``) sampled at random (Algorithm 6). Against it: our default space
``mlcn-buckets`` sampled at random (which separates the effect of the space from that
of the sampler), and with multivariate TPE, Gaussian-process Bayesian optimisation
(``gp``) and NSGA-II. Every run is a real search (``run_search`` with the ``train``
evaluator, on this machine's CPU) at reduced scale: ``--devices 2xK80 --mem 12GB
--flops 0.25x``, at the fidelity ``benchmarks/fidelity_signal.py`` chose: 1 epoch on
1,000 training / 1,000 validation images of Fashion-MNIST (between-architecture sd
3.9 x the seed sd, Spearman 0.95 with 3 epochs on 6,000, 2.3 s per training), 5
seeds x 30 trials per run, all in one invocation. No pruning in these runs: every
trial's accuracy is a full-length figure.

Runs (objectives: sampler on space):

- accuracy: random on mlcn-thesis (the baseline), random, tpe, gp and nsga2 on
  mlcn-buckets;
- accuracy + latency (latency: the predicted training step time, objective
  ``latency``): the same five;
- multi-fidelity (accuracy, ``--long-epochs`` 3 on the same images): TPE without
  pruning, 30 trials, and TPE with successive halving (``--pruner halving``, rate 3:
  a rung at epoch 1 keeps the best third), 60 trials, compared at equal training
  compute.

Printed: the best validation accuracy after n = 5, 10, 15, 20, 30 trials and within
c CPU seconds of training, the hypervolume of the accuracy + latency runs after n
trials (mean ± sd over seeds, and how many runs each figure rests on); each sampler's
difference from the baseline (and from random on the same space) after 30 trials,
paired by seed (the same data split and weight seeds), with a 95 % t interval and
its verdict (ahead, behind, or a tie when the interval holds 0); the multi-fidelity
pair's best 3-epoch accuracy within a quarter, half, three quarters and all of the
plain run's compute, paired likewise; then the issue's three goals: the best sampler
reaches the baseline's mean best-of-30 within 10 trials, it is ahead of the baseline
after 30 outside the interval, and the best multi-objective sampler's hypervolume
after 30 is above random's on the same space outside the interval.

Compute is CPU seconds (``time.process_time`` of the worker, 1 torch thread) spent
in the evaluator: training, validation and the inference timing; a trial the cache
serves counts what its training took (for the epochs it ran), so a figure does not
depend on what was cached or on other load on the machine.

The hypervolume uses ONE reference point for all runs: accuracy = chance (1 /
classes), latency = 1.1 x the largest step time the devices' load limit
(``--flops``) allows, which no model of either space exceeds (checked on every
trial); it is normalised by the box between that point and (accuracy 1, latency 0),
so 1.0 would be a perfect model at zero latency.

A cache of trained results (a JSON file, ``--cache``, default
``~/.cache/nasmlcn/search-quality/cache.json``) is keyed by the architecture, the
training settings, the search seed and the model's training seed
(``EvalRequest.training_seed``, drawn from the model, not the trial number): the
train evaluator seeds a model's weights from the last two, so the cache serves
exactly what training would have returned (a training the pruner stopped is kept with the epochs it ran). Runs
share what their samplers propose alike: random sampling with a seed proposes the
same models whatever the objectives, and the startup trials of TPE and GP and
NSGA-II's first generation are Optuna's random sampler with that seed. A second
invocation trains nothing it trained before. The output says how many trials the
cache served.

The searches run on ``--workers`` processes (default 2, of cores / workers torch
threads each). A search starts once the run it reuses has finished for its seed.
Before any training, a dry run of the whole plan with the ``proxy`` evaluator
(about 2.5 min) counts the trainings needed and prints an estimate.

Files in ``--out`` (default ``dashboards/exports/search-quality/``, git-ignored):
``search_quality.html`` and ``search_quality.png``: best-so-far accuracy and
hypervolume against trials, and the multi-fidelity pair against compute, mean over
seeds with the min-max band.

    python benchmarks/search_quality.py                  # the comparison (about 75 min)
    python benchmarks/search_quality.py --estimate       # the time estimate only
    python benchmarks/search_quality.py --quick --json   # 2 seeds x 6 trials, 300/100 images
    python benchmarks/search_quality.py --seeds 8 --trials 40 --cache /tmp/sq.json
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.metadata
import itertools
import json
import math
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

from _common import running_best
from _plots import write_plot

if TYPE_CHECKING:
    import plotly.graph_objects as go

    from nasmlcn.search import (
        EpochCallback,
        EpochReport,
        EvalRequest,
        Evaluation,
        Evaluator,
        TrialOutcome,
    )

DEFAULT_OUT = Path("dashboards/exports/search-quality")
DEFAULT_CACHE = Path.home() / ".cache" / "nasmlcn" / "search-quality" / "cache.json"
CACHE_SCHEMA_VERSION = 2
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
    scheduling hint: a wrong one costs trainings, never correctness. ``long``: at the
    multi-fidelity comparison's length (``Settings.long_epochs``) instead of the
    search fidelity; ``pruner``: ``halving`` for successive halving over those epochs
    (with ``HALVING_TRIALS`` x the trials: it spends less per trial).
    """

    objectives: tuple[str, ...]
    sampler: str
    space: str
    reuses: str | None = None
    long: bool = False
    pruner: str | None = None

    @property
    def key(self) -> str:
        key = f"{'+'.join(self.objectives)}/{self.sampler}/{self.space}"
        return key + ("/long" if self.long else "") + (f"+{self.pruner}" if self.pruner else "")

    @property
    def label(self) -> str:
        baseline = " (baseline)" if (self.sampler, self.space) == BASELINE and not self.long else ""
        halving = " + successive halving" if self.pruner == "halving" else ""
        return f"{self.sampler} on {self.space}{halving}{baseline}"

    def trials(self, settings: Settings) -> int:
        return settings.trials * (HALVING_TRIALS if self.pruner == "halving" else 1)

    def epochs(self, settings: Settings) -> int:
        return settings.long_epochs if self.long else settings.epochs


BASELINE = ("random", "mlcn-thesis")
ACCURACY = ("accuracy",)
PARETO = ("accuracy", "latency")
GUIDED = ("tpe", "gp", "nsga2")
HALVING_TRIALS = 2
"""The halving run gets this many times the trials: with about two in three trials
stopped after one of 3 epochs it spends about what the full-length run spends."""
_THESIS = "accuracy/random/mlcn-thesis"
_BUCKETS = "accuracy/random/mlcn-buckets"
_PARETO_BUCKETS = "accuracy+latency/random/mlcn-buckets"
_LONG_TPE = "accuracy/tpe/mlcn-buckets/long"
RUNS = (
    Run(ACCURACY, "random", "mlcn-thesis"),
    Run(ACCURACY, "random", "mlcn-buckets"),
    # With a latency objective the buckets space also searches how full the buckets
    # are (accuracy alone fills them), so it proposes other models than _BUCKETS.
    Run(PARETO, "random", "mlcn-buckets"),
    # The multi-fidelity pair: TPE at the long length, without and with halving.
    Run(ACCURACY, "tpe", "mlcn-buckets", long=True),
    # TPE's and GP's startup trials and NSGA-II's first generation are Optuna's random
    # sampler with the same seed, and random sampling ignores the objectives (not the
    # space).
    *(Run(ACCURACY, s, "mlcn-buckets", reuses=_BUCKETS) for s in GUIDED),
    Run(PARETO, "random", "mlcn-thesis", reuses=_THESIS),
    *(Run(PARETO, s, "mlcn-buckets", reuses=_PARETO_BUCKETS) for s in GUIDED),
    Run(ACCURACY, "tpe", "mlcn-buckets", reuses=_LONG_TPE, long=True, pruner="halving"),
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
    long_epochs: int = 3
    run_on: str = "cpu"
    dataset: str = "fashion-mnist"

    @property
    def goal_trials(self) -> int:
        """The goal's budget: a third of the trials (10 of 30)."""
        return max(self.trials // 3, 1)

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
            prune=False,  # every trial's accuracy is a full-length figure (but halving's)
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

    def scale(self, epochs: int) -> dict[str, Any]:
        """The settings a training's duration depends on (for the estimate)."""
        return {
            "devices": self.devices,
            "mem": self.mem,
            "flops": self.flops,
            "epochs": epochs,
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
    compute: float = 0.0
    """CPU seconds its training took (from the cache: the cached training's, for the
    epochs this trial ran)."""


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
            # what seeds the training with the search seed: the model's own seed
            # (search/_repeats.py), so one model is one entry whatever its trial
            "training_seed": job.training_seed,
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
        self.last_compute = 0.0
        self.trained: list[str] = []

    def evaluate(self, job: EvalRequest, on_epoch: EpochCallback) -> Evaluation:
        """The cached result, else ``inner``'s. ``last_compute``: the CPU seconds the
        job took, or (from the cache) would have taken for the epochs it ran: a
        pruner may stop it after any epoch. A training the pruner stopped is cached
        too, with the epochs it ran (served again only to a trial stopped there)."""
        from nasmlcn.search import PruneTrial

        key = ResultCache.key(job, self.training)
        entry = self.cache.entries.get(key)
        self.last_hit = entry is not None
        replayed = 0
        if entry is not None:
            served = self._replay(key, entry, on_epoch)
            if served is not None:
                return served
            # a stopped training this trial goes past: train it, reporting only the
            # epochs after those replayed (training is seeded: they are the same)
            self.last_hit = False
            replayed = len(entry["stopped"])
        seen: list[float] = []

        def recording(report: EpochReport) -> None:
            seen.append(report.val_accuracy)
            if report.epoch > replayed:
                on_epoch(report)

        tick, cpu = time.perf_counter(), time.process_time()
        meta = {"created": time.strftime("%Y-%m-%dT%H:%M:%S%z"), **self.meta}
        try:
            evaluation = self.inner.evaluate(job, recording)
        except PruneTrial:
            self.last_compute = time.process_time() - cpu
            self._store(key, {"stopped": seen, "cpu_seconds": self.last_compute, **meta})
            raise
        self.last_compute = time.process_time() - cpu
        self._store(
            key,
            {
                "evaluation": evaluation.to_dict(),
                "evaluate_seconds": time.perf_counter() - tick,
                "cpu_seconds": self.last_compute,
                **meta,
            },
        )
        return evaluation

    def _store(self, key: str, entry: dict[str, Any]) -> None:
        old = self.cache.entries.get(key)
        if old is not None and "evaluation" in old:  # never replace a full training
            return
        self.trained.append(key)
        self.cache.put(key, entry)

    def _replay(
        self, key: str, entry: Mapping[str, Any], on_epoch: EpochCallback
    ) -> Evaluation | None:
        """Serves ``entry``; None when it is a stopped training this trial goes past."""
        from nasmlcn.search import EpochReport, Evaluation

        if "evaluation" not in entry:  # stopped by the pruner after these epochs
            curve = list(entry["stopped"])
            spent = float(entry["cpu_seconds"])
            for epoch, accuracy in enumerate(curve, start=1):
                self.last_compute = spent * epoch / len(curve)
                on_epoch(EpochReport(epoch, accuracy, 0.0))  # raises PruneTrial at the end
            return None
        data = dict(entry["evaluation"])
        curve = data["val_accuracy_per_epoch"]
        spent = float(entry.get("cpu_seconds", entry["evaluate_seconds"]))
        for epoch, accuracy in enumerate(curve, start=1):
            self.last_compute = spent * epoch / len(curve)
            on_epoch(EpochReport(epoch, accuracy, 0.0))  # nothing was spent on it
        self.last_compute = spent
        data["val_accuracy_per_epoch"] = tuple(curve)
        data["extra"] = {**data["extra"], "served_by_cache": key}
        return Evaluation(**data)


# -- the searches ---------------------------------------------------------------------


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


# -- figures from the trials ----------------------------------------------------------


def best_so_far(records: Sequence[TrialRecord]) -> list[float | None]:
    """After each trial (any state), the best accuracy of the completed ones so far."""
    return running_best([r.accuracy if r.state == "COMPLETE" else None for r in records])


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


def best_within(records: Sequence[TrialRecord], budget: float) -> float | None:
    """The best accuracy of the completed trials among those run before ``budget`` CPU
    seconds of training were spent (a run that finished sooner keeps its best)."""
    spent, best = 0.0, None
    for r in records:
        spent += r.compute
        if spent > budget:
            break
        if r.state == "COMPLETE" and r.accuracy is not None:
            best = r.accuracy if best is None else max(best, r.accuracy)
    return best


def compute_so_far(records: Sequence[TrialRecord]) -> list[float]:
    """After each trial, the CPU seconds of training spent so far."""
    return list(itertools.accumulate(r.compute for r in records))


def paired(
    curves: Sequence[Sequence[float | None]], baseline: Sequence[Sequence[float | None]], n: int
) -> dict[str, Any] | None:
    """Paired by seed (the same data split and weight seeds): the mean difference of
    the figure after ``n`` trials with its 95 % t interval; None below 2 pairs."""
    pairs: list[tuple[float, float]] = [
        (x, y)
        for c, b in zip(curves, baseline, strict=True)
        if len(c) >= n
        and len(b) >= n
        and (x := c[n - 1]) is not None
        and (y := b[n - 1]) is not None
    ]
    if len(pairs) < 2:
        return None
    return paired_values([a for a, _ in pairs], [b for _, b in pairs])


def paired_values(a: Sequence[float], b: Sequence[float]) -> dict[str, Any]:
    from nasmlcn.stats import paired_interval

    return paired_interval(a, b).to_dict()


def reaches(curves: Sequence[Sequence[float | None]], target: float | None) -> int | None:
    """The first n at which the mean over seeds reaches ``target`` (None: never)."""
    if target is None:
        return None
    return next(
        (i + 1 for i, v in enumerate(mean_curve(curves)) if v is not None and v >= target), None
    )


def goals(runs: Mapping[str, Any], settings: Settings) -> dict[str, Any]:
    """The issue's three goals for every guided sampler, and the multi-fidelity figures."""
    t, n = settings.trials, settings.goal_trials
    base = runs[_THESIS]["curves"]["best_accuracy"]
    target = at(base, t)
    random_buckets = runs[_BUCKETS]["curves"]["best_accuracy"]
    accuracy: dict[str, Any] = {}
    for sampler in ("random", *GUIDED):
        curves = runs[f"accuracy/{sampler}/mlcn-buckets"]["curves"]["best_accuracy"]
        accuracy[sampler] = {
            "at_goal_trials": at(curves, n),
            "at_trials": at(curves, t),
            "reaches_baseline_best_at": reaches(curves, target["mean"]),
            "vs_baseline": paired(curves, base, t),
            "vs_random_same_space": paired(curves, random_buckets, t),
        }
    hv_random = runs[_PARETO_BUCKETS]["curves"]["hypervolume"]
    hv_thesis = runs["accuracy+latency/random/mlcn-thesis"]["curves"]["hypervolume"]
    hypervolume: dict[str, Any] = {"random/mlcn-thesis": {"at_trials": at(hv_thesis, t)}}
    for sampler in ("random", *GUIDED):
        curves = runs[f"accuracy+latency/{sampler}/mlcn-buckets"]["curves"]["hypervolume"]
        hypervolume[f"{sampler}/mlcn-buckets"] = {
            "at_trials": at(curves, t),
            "vs_random_same_space": paired(curves, hv_random, t),
            "vs_baseline": paired(curves, hv_thesis, t),
        }

    def mean_of(stat: Mapping[str, Any]) -> float:
        return stat["mean"] if stat["mean"] is not None else -math.inf

    best = max(GUIDED, key=lambda s: mean_of(accuracy[s]["at_trials"]))
    best_hv = max(GUIDED, key=lambda s: mean_of(hypervolume[f"{s}/mlcn-buckets"]["at_trials"]))
    reached = accuracy[best]["reaches_baseline_best_at"]
    ahead = accuracy[best]["vs_baseline"]
    hv_ahead = hypervolume[f"{best_hv}/mlcn-buckets"]["vs_random_same_space"]
    return {
        "target": target,
        "accuracy": accuracy,
        "hypervolume": hypervolume,
        "best_sampler": best,
        "best_hypervolume_sampler": best_hv,
        "reaches_within_goal_trials": {
            "goal": f"the best sampler ({best}) reaches random's (thesis space) mean "
            f"best-of-{t} within {n} trials",
            "holds": reached is not None and reached <= n,
        },
        "ahead_at_trials": {
            "goal": f"the best sampler ({best}) is ahead of random (thesis space) after {t} "
            "trials, outside the 95 % interval",
            "holds": ahead is not None and ahead["verdict"] == "ahead",
        },
        "hypervolume_ahead": {
            "goal": f"the best multi-objective sampler ({best_hv})'s hypervolume after {t} "
            "trials is above random's on the same space, outside the 95 % interval",
            "holds": hv_ahead is not None and hv_ahead["verdict"] == "ahead",
        },
        "multi_fidelity": multi_fidelity(runs),
    }


COMPUTE_BUDGETS = (0.25, 0.5, 1.0)
"""Budgets of "best accuracy within c seconds": fractions of the mean training compute
of random on mlcn-buckets over all its trials."""
MF_BUDGETS = (0.25, 0.5, 0.75, 1.0)
"""The multi-fidelity comparison's budgets: fractions of the full-length TPE run's
mean training compute for all its trials."""


def multi_fidelity(runs: Mapping[str, Any]) -> dict[str, Any]:
    """Successive halving vs the same sampler at full length: the best full-length
    accuracy within the same training compute, paired by seed."""
    plain = runs[_LONG_TPE]
    halving = runs[_LONG_TPE + "+halving"]

    def records(run: Mapping[str, Any]) -> list[list[TrialRecord]]:
        return [[TrialRecord(**t) for t in v["trials"]] for v in run["seeds"].values()]

    plain_r, halving_r = records(plain), records(halving)
    totals = [sum(r.compute for r in seed) for seed in plain_r]
    full = statistics.fmean(totals) if totals else 0.0
    out: dict[str, Any] = {"full_compute": full, "budgets": {}}
    for fraction in MF_BUDGETS:
        budget = fraction * full
        a = [best_within(seed, budget) for seed in halving_r]
        b = [best_within(seed, budget) for seed in plain_r]
        both = [(x, y) for x, y in zip(a, b, strict=True) if x is not None and y is not None]
        out["budgets"][f"{fraction:g}"] = {
            "seconds": budget,
            "halving": _stat([x for x in a if x is not None]),
            "plain": _stat([y for y in b if y is not None]),
            "halving_trials": trials_within(halving_r, budget),
            "plain_trials": trials_within(plain_r, budget),
            "difference": paired_values([x for x, _ in both], [y for _, y in both])
            if len(both) >= 2
            else None,
        }
    pruned = [sum(1 for r in seed if r.state == "PRUNED") for seed in halving_r]
    out["halving_pruned_per_seed"] = pruned
    return out


def trials_within(runs: Sequence[Sequence[TrialRecord]], budget: float) -> float | None:
    """Mean over seeds of the trials that ended within ``budget`` CPU seconds."""
    if not runs:
        return None
    return statistics.fmean(
        sum(1 for spent in compute_so_far(seed) if spent <= budget) for seed in runs
    )


def _stat(values: Sequence[float]) -> dict[str, Any]:
    return {
        "mean": statistics.fmean(values) if values else None,
        "sd": statistics.stdev(values) if len(values) > 1 else None,
        "runs": len(values),
        "values": list(values),
    }


# -- the plot -------------------------------------------------------------------------


class Curve(NamedTuple):
    """One run's figure against trials (or compute): the mean over seeds and the
    min-max band."""

    panel: str  # "accuracy", "hypervolume" or "fidelity"
    key: str
    label: str
    n: tuple[float, ...]
    mean: tuple[float, ...]
    low: tuple[float, ...]
    high: tuple[float, ...]
    runs: int


def _band(x: float, values: Sequence[float | None]) -> tuple[float, float, float, float] | None:
    present = [v for v in values if v is not None]
    if not present:
        return None
    return x, statistics.fmean(present), min(present), max(present)


def plot_curves(runs: Mapping[str, Any]) -> list[Curve]:
    out = []
    longest = max(  # the multi-fidelity panel's x range: the dearer long run's
        (
            sum(t["compute"] for t in v["trials"])
            for r in runs.values()
            if r["long"]
            for v in r["seeds"].values()
        ),
        default=0.0,
    )
    for key, run in runs.items():
        points: list[tuple[float, float, float, float]] = []
        if run["long"]:  # best full-length accuracy against training compute
            panel = "fidelity"
            per_seed = [[TrialRecord(**t) for t in v["trials"]] for v in run["seeds"].values()]
            for i in range(1, 41):
                budget = longest * i / 40
                band = _band(budget, [best_within(seed, budget) for seed in per_seed])
                if band:
                    points.append(band)
        else:
            panel = "hypervolume" if "latency" in run["objectives"] else "accuracy"
            curves = run["curves"]["hypervolume" if panel == "hypervolume" else "best_accuracy"]
            for i in range(1, max(len(c) for c in curves) + 1):
                band = _band(i, [c[i - 1] if len(c) >= i else None for c in curves])
                if band:
                    points.append(band)
        n, mean, low, high = (tuple(column) for column in zip(*points, strict=True))
        out.append(Curve(panel, key, run["label"], n, mean, low, high, len(run["seeds"])))
    return out


COLORS = {
    "random/mlcn-thesis": "#444444",
    "random/mlcn-buckets": "#1f77b4",
    "tpe/mlcn-buckets": "#d62728",
    "gp/mlcn-buckets": "#ff7f0e",
    "nsga2/mlcn-buckets": "#2ca02c",
    "tpe/mlcn-buckets/long": "#d62728",
    "tpe/mlcn-buckets/long+halving": "#9467bd",
}
PANELS = ("accuracy", "hypervolume", "fidelity")


def figure(curves: Sequence[Curve], title: str, long_epochs: int) -> go.Figure:
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    fig = make_subplots(
        rows=1,
        cols=3,
        subplot_titles=(
            "best accuracy so far (accuracy)",
            "hypervolume so far (accuracy, latency)",
            f"TPE, {long_epochs} epochs, +- halving",
        ),
    )
    shown: set[str] = set()
    for c in curves:
        col = PANELS.index(c.panel) + 1
        sampler_space = "/".join(c.key.split("/")[1:])
        color = COLORS.get(sampler_space, "#8c564b")
        r, g, b = (int(color[i : i + 2], 16) for i in (1, 3, 5))
        fig.add_trace(
            go.Scatter(
                x=[*c.n, *reversed(c.n)],
                y=[*c.high, *reversed(c.low)],
                mode="lines",
                fill="toself",
                fillcolor=f"rgba({r},{g},{b},0.12)",
                line={"width": 0},
                hoverinfo="skip",
                showlegend=False,
                legendgroup=sampler_space,
            ),
            row=1,
            col=col,
        )
        label = c.label + (f", {long_epochs} epochs" if c.panel == "fidelity" else "")
        fig.add_trace(
            go.Scatter(
                x=list(c.n),
                y=list(c.mean),
                mode="lines+markers",
                name=f"{label} ({c.runs} seeds)",
                line={
                    "color": color,
                    "dash": "dash" if "thesis" in sampler_space else "solid",
                    "width": 3 if sampler_space.startswith("random/") else 2,
                },
                marker={"size": 4},
                legendgroup=sampler_space,
                showlegend=sampler_space not in shown,
            ),
            row=1,
            col=col,
        )
        shown.add(sampler_space)
    fig.update_xaxes(title_text="trials", row=1, col=1)
    fig.update_xaxes(title_text="trials", row=1, col=2)
    fig.update_xaxes(title_text="CPU seconds of training", row=1, col=3)
    fig.update_yaxes(title_text="validation accuracy", row=1, col=1)
    fig.update_yaxes(title_text="normalised hypervolume", row=1, col=2)
    fig.update_yaxes(title_text="validation accuracy", row=1, col=3)
    fig.update_layout(
        title=title,
        height=540,
        width=1500,
        template="plotly_white",
        legend={"orientation": "h", "y": -0.2},
    )
    return fig


# -- the report -----------------------------------------------------------------------


def _clock(seconds: float) -> str:
    minutes, secs = divmod(round(seconds), 60)
    return f"{minutes}:{secs:02d}"


def _cell(stat: Mapping[str, Any], digits: int) -> str:
    if stat["mean"] is None:
        return "-"
    sd = f" ± {stat['sd']:.{digits}f}" if stat["sd"] is not None else ""
    return f"{stat['mean']:.{digits}f}{sd} [{stat['runs']}]"


def _interval(d: Mapping[str, Any] | None, digits: int) -> str:
    if d is None:
        return "-"
    return (
        f"{d['mean']:+.{digits}f} [{d['low']:+.{digits}f}, {d['high']:+.{digits}f}] "
        f"{d['verdict']} ({d['pairs']} pairs)"
    )


def render(report: Mapping[str, Any]) -> str:
    s = report["settings"]
    ref = report["reference_point"]
    cache = report["cache"]
    t = s["trials"]
    lines = [
        f"Search quality: {s['devices']} {s['mem']} --flops {s['flops']}, {s['epochs']} epoch(s) "
        f"on {s['train_limit']:,} training / {s['val_limit']:,} validation images, "
        f"seeds {', '.join(map(str, s['seeds']))}, {t} trials per run, real "
        f"training on {s['run_on']} ({report['workers']} worker(s) of "
        f"{report['threads_per_worker']} torch thread(s)); no pruning but in the "
        f"multi-fidelity runs ({s['long_epochs']} epochs).",
        f"Cache: {cache['trials_served']} of {cache['trials_evaluated']} evaluated trials "
        f"served by the cache (same model, seed and trial trained before, in this "
        f"invocation or an earlier one), {cache['trained']} trained; {cache['path']} "
        f"({cache['entries']} entries).",
        "Figures: mean ± sd over seeds [runs it rests on]; n counts every trial; compute is "
        "CPU seconds of training (a cached trial counts what its training took).",
    ]
    main = {k: r for k, r in report["runs"].items() if not r["long"]}
    for objectives, what, field in (
        (list(ACCURACY), "Best validation accuracy after n trials", "best_accuracy"),
        (list(PARETO), "Hypervolume after n trials (accuracy + latency)", "hypervolume"),
    ):
        runs = {k: r for k, r in main.items() if r["objectives"] == objectives}
        lines += ["", f"{what} (objectives: {', '.join(objectives)})"]
        width = max(len(r["label"]) for r in runs.values()) + 2
        lines.append("run".ljust(width) + "".join(f"n={n}".ljust(24) for n in s["checkpoints"]))
        for r in runs.values():
            cells = "".join(_cell(r["at"][str(n)][field], 4).ljust(24) for n in s["checkpoints"])
            lines.append(r["label"].ljust(width) + cells)
    lines.append(
        f"(hypervolume reference point: accuracy {ref['accuracy']:g} (chance), latency "
        f"{ref['latency'] * 1e3:.4g} ms = {1 + LATENCY_MARGIN:g} x the load limit's largest "
        f"step time {ref['latency_bound'] * 1e3:.4g} ms; largest latency seen "
        f"{ref['max_latency_seen'] * 1e3:.4g} ms; normalised by the box up to accuracy 1, latency 0)"
    )
    runs = {k: r for k, r in main.items() if r["objectives"] == list(ACCURACY)}
    width = max(len(r["label"]) for r in runs.values()) + 2
    budgets = list(next(iter(runs.values()))["within"])
    lines += [
        "",
        "Best validation accuracy within c CPU seconds of training (c: a quarter, half and "
        "all of random on mlcn-buckets' mean compute; a run that finished sooner keeps its "
        "best; total: the run's mean compute for all its trials)",
        "run".ljust(width) + "".join(f"c={b} s".ljust(24) for b in budgets) + "total",
    ]
    for r in runs.values():
        cells = "".join(_cell(r["within"][b], 4).ljust(24) for b in budgets)
        total = statistics.fmean(v["compute"] for v in r["seeds"].values())
        lines.append(r["label"].ljust(width) + cells + f"{total:.0f} s")

    g = report["goals"]
    n = s["goal_trials"]
    lines += [
        "",
        f"Paired by seed against random on mlcn-thesis (the baseline, best-of-{t} "
        f"{_cell(g['target'], 4)}): difference in best accuracy after {t} trials, 95 % t "
        "interval; and against random on the same space",
    ]
    for sampler, a in g["accuracy"].items():
        reached = a["reaches_baseline_best_at"]
        lines.append(
            f"  {sampler:<7} vs baseline {_interval(a['vs_baseline'], 4)}; vs random on "
            f"mlcn-buckets {_interval(a['vs_random_same_space'], 4) if sampler != 'random' else '-'}"
            f"; after {n}: {_cell(a['at_goal_trials'], 4)}; mean reaches the baseline's "
            + (f"after {reached} trials" if reached else f"in none of {t} trials")
        )
    lines.append(f"Hypervolume after {t} trials, paired by seed against random on mlcn-buckets:")
    for key, h in g["hypervolume"].items():
        if key.startswith("random/mlcn-buckets") or "vs_random_same_space" not in h:
            continue
        lines.append(f"  {key:<20} {_interval(h['vs_random_same_space'], 4)}")
    mf = g["multi_fidelity"]
    lines += [
        "",
        f"Multi-fidelity: TPE at {s['long_epochs']} epochs without and with successive halving "
        f"(rate 3: rung at epoch 1; {HALVING_TRIALS} x the trials), best {s['long_epochs']}-epoch "
        f"accuracy within c CPU seconds of training (c: fractions of the plain run's "
        f"{mf['full_compute']:.0f} s); trials: mean trials started within c; pruned per seed "
        f"{mf['halving_pruned_per_seed']}",
    ]
    for fraction, b in mf["budgets"].items():
        lines.append(
            f"  c={b['seconds']:.0f} s ({fraction}): halving {_cell(b['halving'], 4)} "
            f"({b['halving_trials'] or 0:.1f} trials), plain {_cell(b['plain'], 4)} "
            f"({b['plain_trials'] or 0:.1f} trials); difference {_interval(b['difference'], 4)}"
        )
    lines.append("")
    for name in ("reaches_within_goal_trials", "ahead_at_trials", "hypervolume_ahead"):
        goal = g[name]
        lines.append(f"Goal: {goal['goal']}: {'HOLDS' if goal['holds'] else 'does not hold'}")
    repeats = []
    for r in report["runs"].values():
        distinct = [v["distinct_models"] for v in r["seeds"].values()]
        failed = sum(v["failed"] for v in r["seeds"].values())
        complete = [r["trials"] - v["pruned"] - v["failed"] for v in r["seeds"].values()]
        if failed or any(d < c for d, c in zip(distinct, complete, strict=True)):
            repeats.append(
                f"{r['key']}: distinct models per seed {distinct} of {r['trials']} trials"
                + (f", {failed} trial(s) failed" if failed else "")
            )
    lines += [""] + (repeats or ["Every complete trial of every run trained a distinct model."])
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
    parser.add_argument("--seeds", type=int, help="seeds 0..N-1 per run [5; --quick 2]")
    parser.add_argument("--trials", type=int, help="trials per run and seed [30; --quick 6]")
    parser.add_argument("--epochs", type=int, help="epochs per trial [1; --quick 1]")
    parser.add_argument(
        "--long-epochs", type=int, help="epochs of the multi-fidelity runs [3; --quick 2]"
    )
    parser.add_argument("--train-limit", type=int, help="training images [1000; --quick 300]")
    parser.add_argument("--val-limit", type=int, help="validation images [1000; --quick 100]")
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
    seeds = args.seeds if args.seeds is not None else (2 if quick else 5)
    trials = args.trials if args.trials is not None else (6 if quick else 30)
    long_epochs = args.long_epochs if args.long_epochs is not None else (2 if quick else 3)
    for name, value in (("seeds", seeds), ("trials", trials), ("workers", args.workers)):
        if value < 1:
            parser.error(f"--{name} must be >= 1")
    if seeds < 2:
        parser.error("--seeds must be >= 2: the intervals pair runs by seed")
    if long_epochs < 2:
        parser.error("--long-epochs must be >= 2: successive halving needs a rung below it")
    base = QUICK_CHECKPOINTS if quick else CHECKPOINTS
    goal = max(trials // 3, 1)
    settings = Settings(
        devices=args.devices,
        mem=args.mem,
        flops=args.flops,
        epochs=args.epochs or 1,
        train_limit=args.train_limit or (300 if quick else 1000),
        val_limit=args.val_limit or (100 if quick else 1000),
        seeds=tuple(range(seeds)),
        trials=trials,
        checkpoints=tuple(sorted({n for n in base if n <= trials} | {goal, trials})),
        long_epochs=long_epochs,
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
            "long": run.long,
            "pruner": run.pruner,
            "epochs": run.epochs(settings),
            "trials": run.trials(settings),
            "seeds": {
                str(r.task.seed): {
                    "trials": [t._asdict() for t in r.records],
                    "seconds": r.seconds,
                    "trained": len(r.trained),
                    "served_by_cache": sum(1 for t in r.records if t.cached),
                    "failed": sum(1 for t in r.records if t.state not in ("COMPLETE", "PRUNED")),
                    "pruned": sum(1 for t in r.records if t.state == "PRUNED"),
                    "compute": sum(t.compute for t in r.records),
                    "distinct_models": len({t.lanes for t in r.records if t.state == "COMPLETE"}),
                }
                for r in mine
            },
        }
    max_latency = 0.0
    for run_data in runs.values():
        per_seed = [[TrialRecord(**t) for t in v["trials"]] for v in run_data["seeds"].values()]
        curves: dict[str, list[list[Any]]] = {
            "best_accuracy": [best_so_far(r) for r in per_seed],
            "compute": [compute_so_far(r) for r in per_seed],
        }
        if "latency" in run_data["objectives"]:
            curves["hypervolume"] = [hypervolume_so_far(r, floor, latency_ref) for r in per_seed]
            max_latency = max([max_latency, *(t.latency or 0.0 for r in per_seed for t in r)])
        run_data["curves"] = curves
        run_data["at"] = {
            str(n): {name: at(c, n) for name, c in curves.items()} for n in settings.checkpoints
        }
    reference = statistics.fmean(v["compute"] for v in runs[_BUCKETS]["seeds"].values())
    budgets = [f * reference for f in COMPUTE_BUDGETS]
    for run_data in runs.values():
        per_seed = [[TrialRecord(**t) for t in v["trials"]] for v in run_data["seeds"].values()]
        run_data["within"] = {
            f"{b:.0f}": _stat([v for r in per_seed if (v := best_within(r, b)) is not None])
            for b in budgets
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
        settings.long_epochs,
    )
    files = write_plot(fig, args.out, "search_quality")
    served = sum(v["served_by_cache"] for r in runs.values() for v in r["seeds"].values())
    trained = sum(v["trained"] for r in runs.values() for v in r["seeds"].values())
    report: dict[str, Any] = {
        "benchmark": "search_quality",
        "settings": {**asdict(settings), "goal_trials": settings.goal_trials},
        "pruning": "halving runs only",
        "compute_budgets": budgets,
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
