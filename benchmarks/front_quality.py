"""Where does the search beat random? The accuracy-latency front each sampler finds
at equal trials, over seeds, with bootstrap intervals.

Every run is a real two-objective search (accuracy, and the predicted training step
of the lanes on the target devices: objective ``latency``), one per sampler and seed:

- ``random`` on ``mlcn-thesis``: the thesis's own generator (Algorithms 4-6), the
  baseline;
- ``random``, ``tpe``, ``nsga2`` and ``gp`` on ``mlcn-buckets`` (the default space).

The figure is the hypervolume of each search's completed trials after ``--trials``
trials (30), normalised to the box between one reference point for all runs (accuracy
= chance, latency = 1.1 x the largest step the devices' load limit allows, which no
model of either space exceeds) and (accuracy 1, latency 0). Each sampler's mean over
the seeds comes with a 95 % percentile-bootstrap interval over the seeds, and its
difference from the baseline is paired by seed (the same data split and the same
random startup trials) with a bootstrap interval and a Student t interval: ahead or
behind only where both intervals exclude 0, else a tie; each guided sampler is also
compared with random on the same space, which it must beat to be the default.

Fidelities (``--fidelity``):

- ``quickstart``: the quickstart's search, ``--devices 8xK80 --mem 12GB --flops 0.5x``,
  1 epoch on 5,000 training and 1,000 validation images: minutes a trial on 2 CPU
  cores, a run for a GPU;
- ``reduced``: ``benchmarks/search_quality.py``'s, ``--devices 2xK80 --flops 0.25x``,
  1 epoch on 1,000 and 1,000 images (its fidelity check: between-architecture sd 3.9x
  the seed sd): seconds a trial.

``--proxy`` gives the same table with the proxy evaluator (an analytic stand-in for
accuracy, nothing trained; labelled so): how the samplers move on the latency axis
and the space's shape, in seconds. Trained results go through the cache of
``benchmarks/search_quality.py`` (``--cache``), so samplers share their random
startup trials and a second invocation trains nothing twice. ``--quick`` is CI's
path: 2 seeds, 6 trials, proxy, reduced.

    python benchmarks/front_quality.py [--fidelity reduced] [--seeds 100,101,102,103,104]
        [--trials 30] [--proxy] [--workers 2] [--json]
"""

from __future__ import annotations

import argparse
import json
import math
import random
import statistics
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from _search_quality.cache import CachedEvaluator, ResultCache
from _search_quality.figures import hypervolume_so_far
from _search_quality.searches import Task, latency_reference, search, storage_url
from _search_quality.settings import PARETO, Run, Settings

RUNS = (
    Run(PARETO, "random", "mlcn-thesis"),
    Run(PARETO, "random", "mlcn-buckets"),
    Run(PARETO, "tpe", "mlcn-buckets"),
    Run(PARETO, "nsga2", "mlcn-buckets"),
    Run(PARETO, "gp", "mlcn-buckets"),
)
BASELINE = RUNS[0]
SAME_SPACE = RUNS[1]
"""Random on the default space: what a guided sampler must beat to be the default."""
FIDELITIES = {
    "quickstart": {
        "devices": "8xK80",
        "flops": "0.5x",
        "train_limit": 5000,
        "val_limit": 1000,
    },
    "reduced": {"devices": "2xK80", "flops": "0.25x", "train_limit": 1000, "val_limit": 1000},
}
RESAMPLES = 10_000


def bootstrap(values: Sequence[float], seed: int = 0) -> tuple[float, float]:
    """The 95 % percentile-bootstrap interval of the mean of ``values`` (seeds)."""
    rng = random.Random(seed)
    n = len(values)
    means = sorted(statistics.fmean(rng.choices(values, k=n)) for _ in range(RESAMPLES))
    return means[int(0.025 * RESAMPLES)], means[int(0.975 * RESAMPLES) - 1]


def t_interval(values: Sequence[float]) -> tuple[float, float] | None:
    """The mean's 95 % Student t interval (None below 2 values)."""
    if len(values) < 2:
        return None
    from scipy.stats import t

    half = t.ppf(0.975, len(values) - 1) * statistics.stdev(values) / math.sqrt(len(values))
    mean = statistics.fmean(values)
    return mean - half, mean + half


def paired(values: Sequence[float], base: Sequence[float], seed: int) -> dict[str, Any]:
    """``values`` minus ``base``, paired by seed: the mean, its bootstrap and t
    intervals, and the verdict: ahead or behind only where both intervals exclude 0
    (a percentile bootstrap over 5 seeds is too narrow on its own), else a tie."""
    diffs = [a - b for a, b in zip(values, base, strict=True)]
    low, high = bootstrap(diffs, seed=seed)
    t = t_interval(diffs)
    said = verdict(low, high)
    if t is not None and verdict(*t) != said:
        said = "tie"
    return {
        "mean": statistics.fmean(diffs),
        "bootstrap_95": [low, high],
        "t_95": None if t is None else [float(t[0]), float(t[1])],
        "verdict": said,
    }


def verdict(low: float, high: float) -> str:
    return "ahead" if low > 0 else "behind" if high < 0 else "tie"


def settings_for(args: argparse.Namespace) -> Settings:
    return Settings(
        mem="12GB",
        epochs=1,
        seeds=tuple(args.seeds),
        trials=args.trials,
        checkpoints=(args.trials,),
        **FIDELITIES[args.fidelity],  # type: ignore[arg-type]
    )


def run_searches(
    settings: Settings, cache: ResultCache, proxy: bool, tmp: Path
) -> dict[tuple[Run, int], list[Any]]:
    """Every run and seed, one after the other (the random runs first: the guided
    samplers' startup trials are theirs, served by the cache)."""
    import torch

    from nasmlcn.data import DATASETS
    from nasmlcn.search import EVALUATORS, ProxyEvaluator

    started = time.time()
    out: dict[tuple[Run, int], list[Any]] = {}
    trainers: dict[int, Any] = {}
    for run in sorted(RUNS, key=lambda r: r.sampler != "random"):
        for seed in settings.seeds:
            if proxy:
                inner: Any = ProxyEvaluator()
            else:
                if seed not in trainers:
                    trainers[seed] = EVALUATORS.get("train")(
                        config=settings.search_config(seed),
                        dataset=DATASETS.get(settings.dataset),
                    )
                inner = trainers[seed]
            meta = {
                "space": run.space,
                "sampler": run.sampler,
                "scale": settings.scale(1),
                "threads": torch.get_num_threads(),
            }
            evaluator = CachedEvaluator(inner, cache, settings.training(), meta)
            task = Task(run, seed)
            records = search(
                task,
                settings,
                storage_url(tmp, task, "proxy" if proxy else "run"),
                evaluator,
                proxy=proxy,
                started=None if proxy else started,
            )
            out[(run, seed)] = records  # (what it trained is in the cache's file already)
    return out


def summarize(
    results: dict[tuple[Run, int], list[Any]], settings: Settings, floor: float, reference: float
) -> dict[str, Any]:
    """Each run's hypervolume after the trials, with intervals, against the baseline."""
    n = settings.trials
    volumes = {
        run: [
            hypervolume_so_far(results[(run, s)], floor, reference)[:n][-1] for s in settings.seeds
        ]
        for run in RUNS
    }
    base = volumes[BASELINE]
    rows = []
    for i, run in enumerate(RUNS):
        values = volumes[run]
        low, high = bootstrap(values, seed=i)
        row: dict[str, Any] = {
            "run": run.label,
            "sampler": run.sampler,
            "space": run.space,
            "hypervolume": statistics.fmean(values),
            "bootstrap_95": [low, high],
            "per_seed": values,
            "runs": len(values),
        }
        if run != BASELINE:
            row["minus_baseline"] = paired(values, base, seed=100 + i)
        if run.space == SAME_SPACE.space and run != SAME_SPACE:
            row["minus_random"] = paired(values, volumes[SAME_SPACE], seed=200 + i)
        rows.append(row)
    return {"trials": n, "seeds": list(settings.seeds), "rows": rows}


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fidelity", choices=sorted(FIDELITIES), default="reduced")
    parser.add_argument(
        "--seeds", type=lambda s: [int(x) for x in s.split(",")], default=[100, 101, 102, 103, 104]
    )
    parser.add_argument("--trials", type=int, default=30)
    parser.add_argument("--proxy", action="store_true", help="the proxy evaluator: nothing trained")
    parser.add_argument(
        "--cache",
        type=Path,
        default=Path.home() / ".cache" / "nasmlcn" / "search-quality" / "cache.json",
    )
    parser.add_argument("--quick", action="store_true", help="CI: 2 seeds, 6 trials, proxy")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if args.quick:
        args.seeds, args.trials, args.proxy, args.fidelity = [100, 101], 6, True, "reduced"
    if len(args.seeds) < 2 or len(set(args.seeds)) != len(args.seeds) or args.trials < 2:
        parser.error("give at least 2 different seeds and 2 trials")
    return args


def _print(summary: dict[str, Any], args: argparse.Namespace) -> None:
    what = (
        "PROXY evaluator (accuracy an analytic stand-in, nothing trained)"
        if args.proxy
        else ("trained")
    )
    print(
        f"hypervolume of the accuracy-latency front after {summary['trials']} trials, "
        f"{args.fidelity} fidelity, {what}; mean over {len(summary['seeds'])} seeds "
        f"{summary['seeds']} with a 95 % bootstrap interval; paired by seed against the baseline"
    )
    heads = ("minus baseline (bootstrap 95 %)", "minus random on the same space")
    print(f"{'run':<36} {'hypervolume':>24} {heads[0]:>36} {heads[1]:>36}")
    for row in summary["rows"]:
        low, high = row["bootstrap_95"]
        hv = f"{row['hypervolume']:.4f} [{low:.4f}, {high:.4f}]"
        diffs = [_diff(row.get(k)) for k in ("minus_baseline", "minus_random")]
        print(f"{row['run']:<36} {hv:>24} {diffs[0]:>36} {diffs[1]:>36}")


def _diff(d: dict[str, Any] | None) -> str:
    if d is None:
        return ""
    low, high = d["bootstrap_95"]
    return f"{d['mean']:+.4f} [{low:+.4f}, {high:+.4f}] {d['verdict']}"


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    import optuna

    from nasmlcn.data import DATASETS

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    settings = settings_for(args)
    cache = ResultCache(None if args.proxy else args.cache)
    floor = 1.0 / DATASETS.get(settings.dataset).num_classes
    started = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        _, reference = latency_reference(settings)
        results = run_searches(settings, cache, args.proxy, Path(tmp))
    summary = summarize(results, settings, floor, reference)
    summary |= {
        "fidelity": args.fidelity,
        "evaluator": "proxy" if args.proxy else "train",
        "settings": FIDELITIES[args.fidelity],
        "seconds": time.time() - started,
    }
    if args.json:
        print(json.dumps(summary))
    else:
        _print(summary, args)
    return 0


if __name__ == "__main__":
    from nasmlcn.reproduce.engines.common import exit_with

    exit_with(main())
