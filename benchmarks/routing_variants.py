"""Routing variants measured: ``vector`` vs ``classwise`` (see nasmlcn/models/_mlcn.py).

Trains the same MLCN with each routing variant on the same data and seed and
prints validation/test accuracy and training images/s side by side.

    python benchmarks/routing_variants.py --lanes 2*mlcn2:4x1 --epochs 1 [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace

from nasmlcn.data import DATASETS
from nasmlcn.specs import ROUTINGS, MLCNSpec
from nasmlcn.training import TrainConfig, TrainJob, arch_for_dataset, run_training


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lanes", default="2*mlcn2:4x1")
    parser.add_argument("--dataset", default="fashion-mnist")
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--train-limit", type=int, default=None)
    parser.add_argument("--seeds", type=int, default=1, help="repeat with seeds 0..N-1")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)

    info = DATASETS.get(args.dataset)
    base = arch_for_dataset(MLCNSpec.from_lanes(args.lanes), info, strict=False)
    rows = []
    for routing in ROUTINGS:
        for seed in range(args.seeds):
            arch = replace(base, routing=routing)
            job = TrainJob(
                arch,
                dataset=args.dataset,
                config=TrainConfig(epochs=args.epochs, seed=seed),
                train_limit=args.train_limit,
            )
            report = run_training(job)
            row = {
                "routing": routing,
                "seed": seed,
                "lanes": arch.describe(),
                "val_accuracy_per_epoch": [round(h.val_accuracy, 4) for h in report.history],
                "test_accuracy": round(report.test_accuracy, 4),
                "images_per_second": round(report.to_dict()["images_per_second"], 1),
            }
            rows.append(row)
            print(json.dumps(row), file=sys.stderr)
    if args.json:
        print(json.dumps({"dataset": args.dataset, "epochs": args.epochs, "runs": rows}))
    else:
        print(f"{'routing':<10} {'seed':>4} {'test acc':>9} {'images/s':>9}  val acc per epoch")
        for r in rows:
            print(
                f"{r['routing']:<10} {r['seed']:>4} {r['test_accuracy']:>9.4f} "
                f"{r['images_per_second']:>9.1f}  {r['val_accuracy_per_epoch']}"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
