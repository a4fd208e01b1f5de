"""Early-epoch correlation and what correlation-gated pruning saves, on real training.

Runs the same real search twice per round — random sampler, the round's seed, so
both runs propose the same architectures in the same order — once without and once
with ``--prune``, in alternating order over ``--rounds`` rounds (default 2, seeds
0, 1, ...), and prints: the no-prune studies' correlation table (NASCaps Table 2
style: per epoch, Pearson and Spearman between accuracy after n epochs and after
the last, over all rounds' trials), each run's best validation accuracy and total
wall time, the training time pruning saved, and the time ratio per round and over
all rounds (total with / total without). Baseline = the runs without pruning,
measured in the same process, after an untimed warm-up search.

    python benchmarks/pruning.py [--trials 12] [--epochs 4] [--train-limit 2000]
        [--rounds 2] [--json]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

from nasmlcn.search import SearchConfig, epoch_correlations, first_epoch_reaching, run_search
from nasmlcn.study import TrialRecord, load_existing_study


def run(config: SearchConfig) -> tuple[Any, float]:
    start = time.perf_counter()
    result = run_search(config)
    return result, time.perf_counter() - start


def best(result: Any) -> float:
    return max((b["values"]["accuracy"] for b in result.best), default=float("nan"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=12)
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--train-limit", type=int, default=2000)
    parser.add_argument("--val-limit", type=int, default=500)
    parser.add_argument("--devices", default="2xK80")
    parser.add_argument("--flops", default="0.25x")
    parser.add_argument("--threshold", type=float, default=0.8)
    parser.add_argument("--min-trials", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    with tempfile.TemporaryDirectory() as tmp:
        base = SearchConfig(
            devices=args.devices,
            mem="12GB",
            flops=args.flops,
            sampler="random",
            evaluator="train",
            epochs=args.epochs,
            train_limit=args.train_limit,
            val_limit=args.val_limit,
            trials=args.trials,
            seed=0,
            run_on="cpu",
            storage=f"sqlite:///{Path(tmp) / 'pruning.db'}",
            prune=False,  # the baseline; pruning is on by default
            prune_threshold=args.threshold,
            prune_min_trials=args.min_trials,
        )
        # Untimed warm-up: the first search in a process also loads the dataset and
        # initialises torch (35 s of a 40 s run at smoke-test size), which would
        # land on whichever side runs first.
        run(base.with_overrides(study="warm-up", trials=1, epochs=1))
        rounds: list[dict[str, Any]] = []
        curves: list[list[float]] = []
        for n in range(args.rounds):
            seeded = base.with_overrides(seed=n)
            sides = {
                "no_prune": seeded.with_overrides(study=f"no-prune-{n}"),
                "prune": seeded.with_overrides(study=f"prune-{n}", prune=True),
            }
            order = list(sides) if n % 2 == 0 else list(reversed(sides))
            found = {side: run(sides[side]) for side in order}
            study = load_existing_study(f"no-prune-{n}", base.storage)
            curves += [
                TrialRecord.of(t).accuracy_per_epoch
                for t in study.trials
                if t.state.name == "COMPLETE"
            ]
            (plain, plain_seconds), (pruned, pruned_seconds) = found["no_prune"], found["prune"]
            rounds.append(
                {
                    "seed": n,
                    "order": order,
                    "no_prune": {"best_accuracy": best(plain), "seconds": plain_seconds},
                    "prune": {
                        "best_accuracy": best(pruned),
                        "seconds": pruned_seconds,
                        "pruned_trials": len(pruned.pruned),
                        "seconds_saved_estimate": sum(t.seconds_saved for t in pruned.pruned),
                    },
                    "time_ratio": pruned_seconds / plain_seconds,
                }
            )
    table = epoch_correlations(curves)
    report: dict[str, Any] = {
        "trials": args.trials,
        "epochs": args.epochs,
        "train_limit": args.train_limit,
        "rounds": rounds,
        "correlation": [r.to_dict() for r in table],
        "first_epoch_spearman_0.9": first_epoch_reaching(table, 0.9),
        "time_ratio": sum(r["prune"]["seconds"] for r in rounds)
        / sum(r["no_prune"]["seconds"] for r in rounds),
    }
    if args.json:
        print(json.dumps(report, indent=2))
        return
    print(
        f"{args.trials} trials x {args.epochs} epochs, {args.train_limit} training images, {args.devices} {args.flops}"
    )
    print("epoch  Pearson  Spearman   (accuracy after n epochs vs after the last)")
    for r in table:
        print(f"{r.epoch:5d}  {r.pearson:7.3f}  {r.spearman:8.3f}")
    for done in rounds:
        p, q = done["prune"], done["no_prune"]
        print(
            f"seed {done['seed']} ({' first, '.join(done['order'])} second): "
            f"no pruning best {q['best_accuracy']:.4f} in {q['seconds']:.0f} s; "
            f"pruning best {p['best_accuracy']:.4f} in {p['seconds']:.0f} s "
            f"({p['pruned_trials']} pruned, ~{p['seconds_saved_estimate']:.0f} s of training saved); "
            f"time x{done['time_ratio']:.2f}"
        )
    print(f"time with / without pruning over {len(rounds)} rounds: x{report['time_ratio']:.2f}")


if __name__ == "__main__":
    from nasmlcn.reproduce.engines.common import exit_with

    main()
    exit_with(0)
