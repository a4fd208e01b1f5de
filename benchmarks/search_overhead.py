"""Per-trial overhead of the search: sampling + building/placement + storage.

Runs N trials (default 500) of ``nasmlcn.search.run_search`` with the ``proxy``
evaluator on a fresh SQLite file, for each sampler, and reports milliseconds per
trial (median and p95) split by phase — ask (sampling), build (search space and
placement), record (user attributes and constraints), evaluate (the proxy, near
zero), tell. Baseline, measured in the same run: plain Optuna ask/tell with the
same parameters and no bookkeeping, on a default SQLite file (no WAL), i.e. what a
hand-written Optuna loop would cost.

    python benchmarks/search_overhead.py [--trials 500] [--samplers random,tpe,nsga2] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

import optuna

from nasmlcn.dashboard import DashboardObserver
from nasmlcn.search import SearchConfig, run_search
from nasmlcn.search._samplers import SAMPLERS
from nasmlcn.search.spaces import load_space


def _stats(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {
        "median_ms": statistics.median(ordered) * 1e3,
        "p95_ms": ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))] * 1e3,
        "mean_ms": statistics.fmean(ordered) * 1e3,
    }


def measure_nasmlcn(
    sampler: str, trials: int, folder: Path, objectives: tuple[str, ...]
) -> dict[str, Any]:
    config = SearchConfig(
        evaluator="proxy",
        sampler=sampler,
        trials=trials,
        epochs=1,
        objectives=objectives,
        storage=f"sqlite:///{folder / f'nasmlcn-{sampler}.db'}",
        devices="8xK80",
        mem="12GB",
    )
    result = run_search(config, observers=[DashboardObserver()])  # as the CLI does
    per_trial = [sum(t.timings.values()) for t in result.run_trials]
    phases = {
        phase: statistics.median(t.timings.get(phase, 0.0) for t in result.run_trials) * 1e3
        for phase in ("ask", "build", "record", "evaluate", "tell")
    }
    return {**_stats(per_trial), "phases_median_ms": phases, "trials": len(per_trial)}


def measure_plain_optuna(
    sampler: str, trials: int, folder: Path, objectives: tuple[str, ...]
) -> dict[str, Any]:
    space = load_space("mlcn-buckets")
    distributions = space.distributions()
    study = optuna.create_study(
        storage=f"sqlite:///{folder / f'plain-{sampler}.db'}",
        sampler=SAMPLERS.get(sampler).make(0, trials),
        directions=["maximize"] + ["minimize"] * (len(objectives) - 1),
    )
    times = []
    for i in range(trials):
        start = time.perf_counter()
        trial = study.ask(distributions)
        values = [float(trial.params["fill"])] + [float(i % 7)] * (len(objectives) - 1)
        study.tell(trial, values)
        times.append(time.perf_counter() - start)
    return {**_stats(times), "trials": trials}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=500)
    parser.add_argument("--samplers", default="random,tpe,nsga2")
    parser.add_argument("--objectives", default="accuracy,latency")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    warnings.simplefilter("ignore")
    objectives = tuple(args.objectives.split(","))
    report: dict[str, Any] = {"trials": args.trials, "objectives": list(objectives), "samplers": {}}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for sampler in args.samplers.split(","):
            ours = measure_nasmlcn(sampler, args.trials, folder, objectives)
            plain = measure_plain_optuna(sampler, args.trials, folder, objectives)
            report["samplers"][sampler] = {
                "nasmlcn": ours,
                "plain_optuna_default_sqlite": plain,
                "ratio_median": ours["median_ms"] / plain["median_ms"],
            }
    if args.json:
        print(json.dumps(report, indent=2))
        return
    print(
        f"{args.trials} trials, objectives {args.objectives}, SQLite, proxy evaluator, 8xK80 buckets"
    )
    print(
        f"{'sampler':8} {'median ms':>10} {'p95 ms':>8}   phases (median ms)                       plain Optuna median/p95   ratio"
    )
    for name, r in report["samplers"].items():
        ours, plain = r["nasmlcn"], r["plain_optuna_default_sqlite"]
        phases = " ".join(f"{k} {v:.1f}" for k, v in ours["phases_median_ms"].items())
        print(
            f"{name:8} {ours['median_ms']:10.1f} {ours['p95_ms']:8.1f}   {phases:40} "
            f"{plain['median_ms']:8.1f} / {plain['p95_ms']:6.1f}   x{r['ratio_median']:.2f}"
        )


if __name__ == "__main__":
    main()
