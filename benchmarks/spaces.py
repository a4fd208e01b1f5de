"""Does a search space span a real trade-off, with heterogeneous, balanced devices
and faithful parameters?

Runs real (proxy-evaluated) searches into a temporary SQLite study and prints, from
what the trials stored:

- spread: predicted latency (training step) and memory of the fullest device over
  all trials, max/min, and the range the Pareto front covers (NSGA-II,
  accuracy + latency + memory, 8xK80 12GB);
- heterogeneity: the share of trials whose devices do not all hold the same lane
  group (identical devices only: the mix's devices differ in speed anyway);
- balance: predicted load imbalance (makespan / ideal - 1), mean and max;
- memory fit: trials whose fullest device exceeds its memory;
- faithfulness: the share of all lanes that come from repairs or top-offs.

    python benchmarks/spaces.py                       # the issue's figures (about 2 min)
    python benchmarks/spaces.py --space mlcn-thesis   # another space
    python benchmarks/spaces.py --json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

MIB = 2**20


def run(space: str, devices: str, sampler: str, objectives: str, trials: int, seed: int) -> Any:
    import optuna

    from nasmlcn.search import SearchConfig, run_search
    from nasmlcn.study import TrialRecord

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    with tempfile.TemporaryDirectory() as tmp:
        storage = f"sqlite:///{Path(tmp) / 'study.db'}"
        config = SearchConfig(
            devices=devices,
            mem="12GB",
            space=space,
            sampler=sampler,
            objectives=tuple(objectives.split(",")),
            evaluator="proxy",
            epochs=1,
            trials=trials,
            storage=storage,
            seed=seed,
            prune=False,
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = run_search(config)
            study = optuna.load_study(study_name=result.study, storage=storage)
            complete = [TrialRecord.of(t) for t in study.trials if t.state.name == "COMPLETE"]
            front = (
                {t.number for t in study.best_trials} if len(objectives.split(",")) > 1 else set()
            )
        return complete, front


def figures(complete: list[Any], front: set[int], identical: bool) -> dict[str, Any]:
    latency = [t.predicted["latency"] for t in complete]
    memory = [t.predicted["peak_memory_bytes"] / MIB for t in complete]
    imbalance = [t.predicted["imbalance"] for t in complete]
    lanes = sum(t.num_lanes for t in complete)
    repaired = sum(t.repaired_lanes for t in complete)
    trials_repaired = sum(1 for t in complete if t.repairs)
    over_memory = sum(
        1
        for t in complete
        if any(d["memory_bytes"] > d["memory_limit_bytes"] for d in t.plan["devices"])
    )
    from nasmlcn.specs import parse_lanes

    hetero = 0
    for t in complete:
        names = [str(lane) for lane in parse_lanes(t.lanes)]
        groups = {tuple(sorted(names[i] for i in d["lanes"])) for d in t.plan["devices"]}
        hetero += len(groups) > 1
    out: dict[str, Any] = {
        "trials": len(complete),
        "latency_ms": [min(latency) * 1e3, max(latency) * 1e3],
        "latency_span": max(latency) / min(latency),
        "memory_MiB": [min(memory), max(memory)],
        "memory_span": max(memory) / min(memory),
        "imbalance_mean": statistics.fmean(imbalance),
        "imbalance_max": max(imbalance),
        "over_memory_trials": over_memory,
        "lanes": lanes,
        "repaired_lanes": repaired,
        "repaired_share": repaired / lanes,
        "trials_with_repairs": trials_repaired,
        "mean_lanes": lanes / len(complete),
    }
    if identical:
        out["heterogeneous_share"] = hetero / len(complete)
    if front:
        fl = [t.predicted["latency"] for t in complete if t.number in front]
        fm = [t.predicted["peak_memory_bytes"] / MIB for t in complete if t.number in front]
        out["front_size"] = len(front)
        out["front_latency_ms"] = [min(fl) * 1e3, max(fl) * 1e3]
        out["front_latency_span"] = max(fl) / min(fl)
        out["front_memory_MiB"] = [min(fm), max(fm)]
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--space", default="mlcn-buckets")
    parser.add_argument("--trials", type=int, default=500, help="trials of the balance runs")
    parser.add_argument("--pareto-trials", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    runs = [
        (
            "8xK80, nsga2, accuracy+latency+memory",
            "8xK80",
            "nsga2",
            "accuracy,latency,memory",
            args.pareto_trials,
            True,
        ),
        ("8xK80, tpe, accuracy", "8xK80", "tpe", "accuracy", args.trials, True),
        ("8xK80, random, accuracy", "8xK80", "random", "accuracy", args.trials, True),
        (
            "K80+M40+P100+V100, tpe, accuracy",
            "1xK80,1xM40,1xP100,1xV100",
            "tpe",
            "accuracy",
            args.trials,
            False,
        ),
        (
            "K80+M40+P100+V100, random, accuracy",
            "1xK80,1xM40,1xP100,1xV100",
            "random",
            "accuracy",
            args.trials,
            False,
        ),
    ]
    results = {}
    for label, devices, sampler, objectives, trials, identical in runs:
        start = time.perf_counter()
        complete, front = run(args.space, devices, sampler, objectives, trials, args.seed)
        results[label] = figures(complete, front, identical)
        results[label]["seconds"] = time.perf_counter() - start
        if not args.json:
            print(f"{label}: {trials} trials in {results[label]['seconds']:.0f} s", file=sys.stderr)
    if args.json:
        print(json.dumps({"space": args.space, "seed": args.seed, "runs": results}, indent=1))
        return 0
    print(f"space {args.space}, proxy evaluator, 12GB per device, --flops 1x, seed {args.seed}")
    for label, r in results.items():
        print(f"\n{label} ({r['trials']} complete trials)")
        print(
            f"  latency {r['latency_ms'][0]:.3g}-{r['latency_ms'][1]:.3g} ms (x{r['latency_span']:.1f}); "
            f"memory {r['memory_MiB'][0]:.0f}-{r['memory_MiB'][1]:.0f} MiB (x{r['memory_span']:.1f})"
        )
        if "front_size" in r:
            print(
                f"  Pareto front: {r['front_size']} trials, latency {r['front_latency_ms'][0]:.3g}-"
                f"{r['front_latency_ms'][1]:.3g} ms (x{r['front_latency_span']:.1f}), memory "
                f"{r['front_memory_MiB'][0]:.0f}-{r['front_memory_MiB'][1]:.0f} MiB"
            )
        if "heterogeneous_share" in r:
            print(
                f"  devices not all holding the same lane group: {r['heterogeneous_share']:.0%} of trials"
            )
        print(
            f"  imbalance mean {r['imbalance_mean']:.1%}, max {r['imbalance_max']:.1%}; "
            f"over memory: {r['over_memory_trials']} trials"
        )
        print(
            f"  lanes from repairs/top-offs: {r['repaired_lanes']} of {r['lanes']} "
            f"({r['repaired_share']:.1%}; {r['trials_with_repairs']} trials with a repair); "
            f"{r['mean_lanes']:.1f} lanes per model"
        )
    return 0


if __name__ == "__main__":
    from nasmlcn.reproduce.engines.common import exit_with

    exit_with(main())
