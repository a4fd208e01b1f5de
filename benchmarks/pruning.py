"""Early-epoch correlation and what correlation-gated pruning saves, on real training.

Runs the same real search twice — random sampler, same seed, so both runs propose
the same architectures in the same order — once without and once with ``--prune``,
and prints: the no-prune study's correlation table (NASCaps Table 2 style: per
epoch, Pearson and Spearman between accuracy after n epochs and after the last),
each run's best validation accuracy and total wall time, and the training time
pruning saved. Baseline = the run without pruning, measured in the same run.

    python benchmarks/pruning.py [--trials 12] [--epochs 4] [--train-limit 2000] [--json]
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


def run(config: SearchConfig) -> tuple[Any, float]:
    start = time.perf_counter()
    result = run_search(config)
    return result, time.perf_counter() - start


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
        plain, plain_seconds = run(base.with_overrides(study="no-prune"))
        pruned, pruned_seconds = run(base.with_overrides(study="prune", prune=True))
        from nasmlcn.search._study_access import load_existing_study

        study = load_existing_study("no-prune", base.storage)
        from nasmlcn.search._record import TrialRecord

        curves = [
            TrialRecord.of(t).accuracy_per_epoch for t in study.trials if t.state.name == "COMPLETE"
        ]
    table = epoch_correlations(curves)

    def best(result: Any) -> float:
        return max((b["values"]["accuracy"] for b in result.best), default=float("nan"))

    report = {
        "trials": args.trials,
        "epochs": args.epochs,
        "train_limit": args.train_limit,
        "correlation": [r.to_dict() for r in table],
        "first_epoch_spearman_0.9": first_epoch_reaching(table, 0.9),
        "no_prune": {"best_accuracy": best(plain), "seconds": plain_seconds},
        "prune": {
            "best_accuracy": best(pruned),
            "seconds": pruned_seconds,
            "pruned_trials": len(pruned.pruned),
            "seconds_saved_estimate": sum(t.seconds_saved for t in pruned.pruned),
        },
        "time_ratio": pruned_seconds / plain_seconds,
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
    p = report["prune"]
    print(
        f"no pruning: best {report['no_prune']['best_accuracy']:.4f} in {plain_seconds:.0f} s\n"
        f"pruning:    best {p['best_accuracy']:.4f} in {pruned_seconds:.0f} s "
        f"({p['pruned_trials']} trials pruned, ~{p['seconds_saved_estimate']:.0f} s of training saved); "
        f"time x{report['time_ratio']:.2f}"
    )


if __name__ == "__main__":
    main()
