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
training settings, the search seed and the trial number: the train evaluator seeds a
model's weights from the search seed and the model (schema 2: before repeats, from the
trial number, so older entries are refused), so the cache serves exactly what training
would have returned (a training the pruner stopped is kept with the epochs it ran). Runs
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

The parts live in ``benchmarks/_search_quality/`` (settings, cache, searches, figures,
plot, report); this script parses the arguments and runs them.

    python benchmarks/search_quality.py                  # the comparison (about 75 min)
    python benchmarks/search_quality.py --estimate       # the time estimate only
    python benchmarks/search_quality.py --quick --json   # 2 seeds x 6 trials, 300/100 images
    python benchmarks/search_quality.py --seeds 8 --trials 40 --cache /tmp/sq.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from _plots import write_plot

if TYPE_CHECKING:
    pass

from _search_quality.cache import ResultCache
from _search_quality.figures import (
    COMPUTE_BUDGETS,
    _stat,
    at,
    best_so_far,
    best_within,
    compute_so_far,
    goals,
    hypervolume_so_far,
)
from _search_quality.plot import figure, plot_curves
from _search_quality.report import _clock, render
from _search_quality.searches import (
    estimate,
    latency_reference,
    run_all,
)
from _search_quality.settings import (
    _BUCKETS,
    CHECKPOINTS,
    DEFAULT_CACHE,
    DEFAULT_OUT,
    QUICK_CHECKPOINTS,
    RUNS,
    Settings,
    TrialRecord,
)


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
    from nasmlcn.reproduce.engines.common import exit_with

    exit_with(main())
