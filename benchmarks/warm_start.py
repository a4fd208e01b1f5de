"""Does a warm start pay? Compute to reach random's best-of-30 on a new device pool,
with and without ``--warm-start``, real training, paired over seeds.

The story: a user searched ``2xK80 12GB`` (the source: TPE, 30 trials) and now has
``4xK80`` (the target). On the target, per seed:

- ``random``: random sampling, 30 trials: its mean best-of-30 over seeds is the
  target accuracy (as in the issue: "compute to reach random's best-of-30");
- ``tpe``: TPE from nothing, 30 trials;
- ``tpe+warm``: TPE with ``--warm-start`` from the source study of the same seed
  (its best 5 architectures refit to 4 devices first; no trial can be added as data,
  as 4 devices build every model differently), 30 trials.

Printed per run: the CPU seconds of training until its best-so-far reaches the
target (mean over the seeds that reach it, and how many do), the best after 5, 10
and 30 trials, and the paired difference (``tpe+warm`` - ``tpe``) with a 95 % t
interval; a difference whose interval holds 0 is a tie. The source's compute is
reported apart: a warm start reuses work already done.

Fidelity, scale and the cache are those of ``benchmarks/search_quality.py`` (1 epoch
on 1,000 / 1,000 images, ``--flops 0.25x``; the same cache file, whose TPE runs on
2xK80 are exactly the sources, so with its cache this trains only the target runs).
Compute is the workers' CPU seconds in the evaluator, as there.

    python benchmarks/warm_start.py                 # 5 seeds (about 25 min)
    python benchmarks/warm_start.py --quick --json  # 2 seeds x 6 trials, 1,000/200 images
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
import warnings
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any, NamedTuple

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _search_quality.cache import CachedEvaluator, ResultCache
from _search_quality.figures import at, best_so_far, compute_so_far, paired
from _search_quality.report import _cell, _clock, _interval
from _search_quality.searches import init_worker, make_observer
from _search_quality.settings import DEFAULT_CACHE, Settings, TrialRecord

SOURCE_DEVICES = "2xK80"
TARGET_DEVICES = "4xK80"
RUNS = ("random", "tpe", "tpe+warm")
WARM_TOP = 5
CHECKPOINTS = (5, 10, 30)


class Outcome(NamedTuple):
    seed: int
    records: dict[str, list[TrialRecord]]
    source: list[TrialRecord]
    trained: dict[str, dict[str, Any]]
    warm: dict[str, Any] | None


def _search(
    settings: Settings,
    seed: int,
    devices: str,
    sampler: str,
    study: str,
    storage: str,
    evaluator: CachedEvaluator,
    started: float,
    warm_start: str | None = None,
) -> tuple[list[TrialRecord], dict[str, Any] | None]:
    from nasmlcn.search import run_search

    config = settings.search_config(seed).with_overrides(
        devices=devices,
        flops=settings.flops,
        space="mlcn-buckets",
        sampler=sampler,
        evaluator="train",
        epochs=settings.epochs,
        trials=settings.trials,
        storage=storage,
        study=study,
        warm_start=warm_start,
        warm_start_top=WARM_TOP,
    )
    observer = make_observer(study, seed, settings.trials, evaluator, started)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = run_search(config, [observer], evaluator=evaluator)
    if result.stopped == "interrupted":
        raise KeyboardInterrupt
    records = [
        TrialRecord(
            t.number,
            t.state,
            t.values[0] if t.values else None,
            None,
            observer.cached.get(t.number, False),
            t.seconds,
            t.lanes,
            observer.compute.get(t.number, 0.0),
            t.repeat_of,
        )
        for t in sorted(result.run_trials, key=lambda t: t.number)
    ]
    return records, result.warm_start


_TRAINERS: dict[int, Any] = {}


def run_seed(
    seed: int, settings: Settings, cache: ResultCache, tmp: str, started: float
) -> Outcome:
    """The source search and the three target searches of one seed."""
    import torch

    from nasmlcn.data import DATASETS
    from nasmlcn.search import EVALUATORS

    if seed not in _TRAINERS:
        _TRAINERS[seed] = EVALUATORS.get("train")(
            config=settings.search_config(seed), dataset=DATASETS.get(settings.dataset)
        )
    storage = f"sqlite:///{Path(tmp) / f'warm-seed{seed}.db'}"
    trained: dict[str, dict[str, Any]] = {}

    def evaluator(space_sampler: str) -> CachedEvaluator:
        meta = {
            "space": "mlcn-buckets",
            "sampler": space_sampler,
            "scale": settings.scale(settings.epochs),
            "threads": torch.get_num_threads(),
        }
        return CachedEvaluator(_TRAINERS[seed], cache, settings.training(), meta)

    # the source: search_quality's "accuracy/tpe/mlcn-buckets" run of this seed
    source_eval = evaluator("tpe")
    source, _ = _search(
        settings, seed, SOURCE_DEVICES, "tpe", "source", storage, source_eval, started
    )
    records: dict[str, list[TrialRecord]] = {}
    warm: dict[str, Any] | None = None
    for run in RUNS:
        ev = evaluator(run)
        sampler = run.split("+")[0]
        records[run], info = _search(
            settings,
            seed,
            TARGET_DEVICES,
            sampler,
            f"target-{run}",
            storage,
            ev,
            started,
            warm_start="source" if run.endswith("+warm") else None,
        )
        warm = info or warm
        trained.update({k: cache.entries[k] for k in ev.trained})
    trained.update({k: cache.entries[k] for k in source_eval.trained})
    return Outcome(seed, records, source, trained, warm)


def compute_to_reach(records: Sequence[TrialRecord], target: float) -> float | None:
    """CPU seconds of training until the best-so-far reaches ``target`` (None: never)."""
    for best, spent in zip(best_so_far(records), compute_so_far(records), strict=True):
        if best is not None and best >= target:
            return spent
    return None


def censored(reach: Sequence[float | None], totals: Sequence[float]) -> list[float]:
    """Compute to reach per seed, a run that never reached counted at all its compute
    (a lower bound of what it would need: it favours that run)."""
    return [r if r is not None else t for r, t in zip(reach, totals, strict=True)]


def parse_args(argv: Sequence[str] | None) -> tuple[argparse.Namespace, Settings]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, help="seeds 0..N-1 [5; --quick 2]")
    parser.add_argument("--trials", type=int, help="trials per search [30; --quick 6]")
    parser.add_argument("--quick", action="store_true", help="a smoke run of a few minutes")
    parser.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1))
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help="cache of trainings")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    quick = args.quick
    seeds = args.seeds if args.seeds is not None else (2 if quick else 5)
    trials = args.trials if args.trials is not None else (6 if quick else 30)
    if seeds < 2:
        parser.error("--seeds must be >= 2: the intervals pair runs by seed")
    if trials < 2:
        parser.error("--trials must be >= 2")
    settings = Settings(
        devices=SOURCE_DEVICES,
        mem="12GB",
        flops="0.25x",
        epochs=1,
        train_limit=1000,  # fewer and the quick sources learn nothing to start from
        val_limit=200 if quick else 1000,
        seeds=tuple(range(seeds)),
        trials=trials,
        checkpoints=tuple(sorted({n for n in CHECKPOINTS if n < trials} | {trials})),
    )
    return args, settings


def report(outcomes: Sequence[Outcome], settings: Settings) -> dict[str, Any]:
    outcomes = sorted(outcomes, key=lambda o: o.seed)
    t = settings.trials
    curves = {run: [best_so_far(o.records[run]) for o in outcomes] for run in RUNS}
    target = at(curves["random"], t)["mean"]
    runs: dict[str, Any] = {}
    for run in RUNS:
        reach = [compute_to_reach(o.records[run], target) for o in outcomes]
        reached = [r for r in reach if r is not None]
        runs[run] = {
            "compute_to_reach": reach,
            "reached": len(reached),
            "mean_compute_to_reach": statistics.fmean(reached) if reached else None,
            "total_compute": [sum(r.compute for r in o.records[run]) for o in outcomes],
            "at": {str(n): at(curves[run], n) for n in settings.checkpoints},
            "seeds": {str(o.seed): [r._asdict() for r in o.records[run]] for o in outcomes},
        }
    both = [
        (w, p)
        for w, p in zip(
            runs["tpe+warm"]["compute_to_reach"], runs["tpe"]["compute_to_reach"], strict=True
        )
        if w is not None and p is not None
    ]
    from nasmlcn.stats import paired_interval

    warm_c = censored(runs["tpe+warm"]["compute_to_reach"], runs["tpe+warm"]["total_compute"])
    cold_c = censored(runs["tpe"]["compute_to_reach"], runs["tpe"]["total_compute"])
    return {
        "benchmark": "warm_start",
        "settings": asdict(settings),
        "source_devices": SOURCE_DEVICES,
        "target_devices": TARGET_DEVICES,
        "target_accuracy": target,
        "runs": runs,
        "source_compute": [sum(r.compute for r in o.source) for o in outcomes],
        "warm_start": [o.warm for o in outcomes],
        "compute_difference": paired_interval([w for w, _ in both], [p for _, p in both]).to_dict()
        if len(both) >= 2
        else None,
        "compute_difference_censored": paired_interval(warm_c, cold_c).to_dict()
        if len(warm_c) >= 2
        else None,
        "best_difference": {
            str(n): paired(curves["tpe+warm"], curves["tpe"], n) for n in settings.checkpoints
        },
    }


def _compute(d: dict[str, Any] | None) -> str:
    """A compute difference: below 0 outside the interval is *less* compute."""
    if d is None:
        return "-"
    word = {"ahead": "more compute", "behind": "less compute", "tie": "tie"}[d["verdict"]]
    return f"{d['mean']:+.1f} s [{d['low']:+.1f}, {d['high']:+.1f}] {word} ({d['pairs']} pairs)"


def render(data: dict[str, Any]) -> str:
    s = data["settings"]
    seeds = len(s["seeds"])
    lines = [
        f"Warm start: source {data['source_devices']} (TPE, {s['trials']} trials) -> target "
        f"{data['target_devices']} 12GB --flops {s['flops']}, {s['epochs']} epoch on "
        f"{s['train_limit']:,} / {s['val_limit']:,} images, {seeds} seeds; target accuracy: "
        f"random's mean best-of-{s['trials']} on the target, {data['target_accuracy']:.4f}",
        "",
        "run        reached  CPU s to reach (mean)   "
        + "".join(f"best after {n}".ljust(26) for n in s["checkpoints"]),
    ]
    for run, r in data["runs"].items():
        mean = r["mean_compute_to_reach"]
        lines.append(
            f"{run:<10} {r['reached']}/{seeds}      "
            + (f"{mean:.0f}".ljust(24) if mean is not None else "-".ljust(24))
            + "".join(_cell(r["at"][str(n)], 4).ljust(26) for n in s["checkpoints"])
        )
    lines += [
        "",
        "tpe+warm - tpe, paired by seed (95 % t interval): CPU seconds to reach, seeds both "
        "reached " + _compute(data["compute_difference"]) + "; every seed, a run that "
        "never reached counted at all its compute (a lower bound: favours it) "
        + _compute(data["compute_difference_censored"]),
    ]
    for n, d in data["best_difference"].items():
        lines.append(f"  best accuracy after {n} trials: {_interval(d, 4)}")
    source = data["source_compute"]
    lines.append(
        f"The source searches took {statistics.fmean(source):.0f} CPU s each (mean; done "
        "before, not counted above)."
    )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    args, settings = parse_args(argv)
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    started = time.time()
    cache = ResultCache(args.cache)
    workers = max(1, min(args.workers, len(settings.seeds)))
    threads = max((os.cpu_count() or 1) // workers, 1)
    with tempfile.TemporaryDirectory() as tmp:
        context = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(
            workers, mp_context=context, initializer=init_worker, initargs=(threads,)
        ) as pool:
            futures = [
                pool.submit(run_seed, seed, settings, cache.detached(), tmp, started)
                for seed in settings.seeds
            ]
            outcomes = []
            for future in futures:
                outcome = future.result()
                cache.update(outcome.trained)
                outcomes.append(outcome)
    data = report(outcomes, settings)
    data["seconds"] = time.time() - started
    data["workers"] = workers
    print(json.dumps(data, indent=1) if args.json else render(data))
    print(f"took {_clock(data['seconds'])}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    from nasmlcn.reproduce.engines.common import exit_with

    exit_with(main())
