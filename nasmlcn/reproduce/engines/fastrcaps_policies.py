"""FasTrCaps Table I, reduced: training time to a target accuracy and final accuracy per
learning-rate / batch-size policy, with and without weight sharing.

Rows (``seeds/003``, Table I): ``fixed`` lr and batch (the baseline) and
``warmadabatch`` (batch 1 in epochs 1-3, then ``--batch-size``, with one cosine lr
cycle per batch phase: lr policy ``phase-restarts``), each without and with weight
sharing; the paper's weight-sharing rows include its reduced decoder (Fig. 8
caption), so they train with ``decoder=reduced``. ``--rows all`` adds Fig. 8's other
policies: ``exponential``, ``one-cycle`` and ``warm-restarts`` lr, and ``adabatch``
(Alg. 3) with a fixed lr.

Every row trains the same model (``--lanes``; ``capsnet`` is the paper's own,
Sabour et al.'s CapsNet) on the same Fashion-MNIST subset,
seeds 0..N-1 (the seed picks the validation split, the initial weights and the
batch order); within a seed the rows run in alternating order (as listed for even
seeds, reversed for odd ones), after an untimed warm-up run. Judged on the
validation split only (the test split is never loaded).

Printed per row (means over the seeds): parameters; final and best validation
accuracy; training time to the target = the training seconds (validation passes
left out) of the epochs up to the first whose validation accuracy reaches the
target (the paper's training time: epochs to the accuracy x seconds per epoch);
the target is the baseline's best validation accuracy in the same seed (the
paper's "maximum accuracy of the baseline", sec. V-B) unless ``--target`` is given;
the ratio of that time to the baseline's, seed by seed (a run that never reaches
the target counts as not reached, and its ratio is left out); how many runs the
figures rest on.

    python -m nasmlcn.reproduce.engines.fastrcaps_policies            # 4 rows x 3 seeds, 6 epochs, 400 images
    python -m nasmlcn.reproduce.engines.fastrcaps_policies --rows all --seeds 3 --train-limit 1000
    python -m nasmlcn.reproduce.engines.fastrcaps_policies --quick --json  # 4 epochs on 40/40 images
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from dataclasses import dataclass, replace
from typing import Any

from nasmlcn._defaults import LEARNING_RATE
from nasmlcn.reproduce.engines._training_runs import mean_sd, say, settle_args

QUICK = {"epochs": 4, "train_limit": 40, "val_limit": 40, "seeds": 1}


@dataclass(frozen=True)
class Row:
    """One row of the table: a policy pair, with or without weight sharing."""

    name: str
    lr_policy: str
    batch_policy: str
    weight_sharing: bool = False


TABLE_I = (
    Row("fixed (baseline)", "fixed", "fixed"),
    Row("WAB", "phase-restarts", "warmadabatch"),
    Row("fixed + WS", "fixed", "fixed", True),
    Row("WAB + WS", "phase-restarts", "warmadabatch", True),
)
FIGURE_8 = (
    Row("exponential", "exponential", "fixed"),
    Row("one-cycle", "one-cycle", "fixed"),
    Row("warm-restarts", "warm-restarts", "fixed"),
    Row("adabatch", "fixed", "adabatch"),
)
ROWS = {"table": TABLE_I, "all": TABLE_I + FIGURE_8}


def time_to_target(history: list[Any], target: float) -> tuple[int | None, float | None]:
    """The first epoch whose validation accuracy reaches ``target`` and the training
    seconds up to it (None, None if none does)."""
    seconds = 0.0
    for result in history:
        seconds += result.seconds
        if result.val_accuracy >= target:
            return result.epoch, seconds
    return None, None


def train_row(row: Row, arch: Any, splits: Any, args: argparse.Namespace, seed: int) -> Any:
    """One run: the row's model and policies, ``seed``; returns (params, history)."""
    from nasmlcn.training import InMemoryJob, RunOptions, TrainConfig, train

    if row.weight_sharing:  # FasTrCaps's WS includes its reduced decoder (Fig. 8)
        arch = replace(arch, weight_sharing=True, decoder="reduced")
    config = TrainConfig(
        epochs=args.epochs,
        batch_size=args.batch_size,
        lr=args.lr,
        lr_policy=row.lr_policy,
        batch_policy=row.batch_policy,
        seed=seed,
        device="cpu",
    )
    # seeds with config.seed, builds
    run = train(InMemoryJob(arch, splits, config, RunOptions(test=False)))
    return run.params, run.history


def load(args: argparse.Namespace, seed: int, limit: int | None = None) -> Any:
    from nasmlcn.data import DataSplits, Split, load_splits

    loaded = load_splits(
        args.dataset,
        None,
        download=False,
        seed=seed,
        train_limit=limit or args.train_limit,
        val_limit=args.val_limit,
    )
    empty = Split(loaded.val.images[:0], loaded.val.labels[:0])  # no test split
    return DataSplits(loaded.train, loaded.val, empty)


def measure(args: argparse.Namespace) -> dict[str, Any]:
    import torch

    from nasmlcn.data import DATASETS
    from nasmlcn.specs import ArchSpec, CapsNetSpec, MLCNSpec
    from nasmlcn.training import arch_for_dataset

    torch.set_num_threads(args.threads)
    rows = ROWS[args.rows]
    base: ArchSpec = CapsNetSpec() if args.lanes == "capsnet" else MLCNSpec.from_lanes(args.lanes)
    arch = arch_for_dataset(base, DATASETS.get(args.dataset), strict=False)
    say("warm-up (untimed)")
    warm = argparse.Namespace(**{**vars(args), "epochs": 1})
    train_row(rows[0], arch, load(args, 0, limit=min(64, args.train_limit)), warm, 0)
    runs: list[dict[str, Any]] = []
    for seed in range(args.seeds):
        splits = load(args, seed)
        order = rows if seed % 2 == 0 else tuple(reversed(rows))
        for row in order:
            start = time.perf_counter()
            params, history = train_row(row, arch, splits, args, seed)
            say(
                f"seed {seed} {row.name}: val "
                + " ".join(f"{h.val_accuracy:.3f}" for h in history)
                + f" ({time.perf_counter() - start:.0f} s)"
            )
            runs.append(
                {
                    "row": row.name,
                    "seed": seed,
                    "params": params,
                    "val_accuracy_per_epoch": [h.val_accuracy for h in history],
                    "seconds_per_epoch": [h.seconds for h in history],
                    "batch_size_per_epoch": [h.batch_size for h in history],
                    "lr_per_epoch": [h.lr for h in history],
                    "history": history,
                }
            )
    return summarise(rows, runs, args)


def summarise(
    rows: tuple[Row, ...], runs: list[dict[str, Any]], args: argparse.Namespace
) -> dict[str, Any]:
    """Targets per seed, each run's time to its seed's target, and the rows' means."""
    baseline = rows[0].name
    targets = {
        r["seed"]: args.target if args.target is not None else max(r["val_accuracy_per_epoch"])
        for r in runs
        if r["row"] == baseline
    }
    for r in runs:
        r["target"] = targets[r["seed"]]
        r["epoch_to_target"], r["seconds_to_target"] = time_to_target(r.pop("history"), r["target"])
    base = {r["seed"]: r for r in runs if r["row"] == baseline}
    table = []
    for row in rows:
        mine = [r for r in runs if r["row"] == row.name]
        reached = [r for r in mine if r["seconds_to_target"] is not None]
        ratios = [
            r["seconds_to_target"] / base[r["seed"]]["seconds_to_target"]
            for r in reached
            if base[r["seed"]]["seconds_to_target"]
        ]
        table.append(
            {
                "row": row.name,
                "lr_policy": row.lr_policy,
                "batch_policy": row.batch_policy,
                "weight_sharing": row.weight_sharing,
                "params": mine[0]["params"],
                "runs": len(mine),
                "final_val_accuracy": mean_sd([r["val_accuracy_per_epoch"][-1] for r in mine]),
                "best_val_accuracy": mean_sd([max(r["val_accuracy_per_epoch"]) for r in mine]),
                "reached": len(reached),
                "epochs_to_target": [r["epoch_to_target"] for r in mine],
                "seconds_to_target": (
                    statistics.fmean(r["seconds_to_target"] for r in reached) if reached else None
                ),
                "ratio_vs_baseline": statistics.fmean(ratios) if ratios else None,
                "seconds_per_run": statistics.fmean(sum(r["seconds_per_epoch"]) for r in mine),
            }
        )
    return {
        "settings": {
            key: getattr(args, key)
            for key in (
                "lanes",
                "dataset",
                "epochs",
                "train_limit",
                "val_limit",
                "batch_size",
                "lr",
                "seeds",
                "threads",
                "target",
            )
        },
        "targets": targets,
        "runs_total": len(runs),
        "table": table,
        "runs": runs,
    }


def show(result: dict[str, Any]) -> None:
    s = result["settings"]
    print(
        f"FasTrCaps Table I (reduced): {s['lanes']} on {s['dataset']}, {s['train_limit']} "
        f"training / {s['val_limit']} validation images, {s['epochs']} epochs, batch "
        f"{s['batch_size']}, lr {s['lr']}, cpu {s['threads']} thread(s); "
        f"{result['runs_total']} runs ({s['seeds']} seed(s) x {len(result['table'])} rows)"
    )
    target = "given" if s["target"] is not None else "the baseline's best val accuracy per seed"
    print("target: " + target + ": " + ", ".join(f"{v:.4f}" for v in result["targets"].values()))
    header = (
        f"{'row':<18} {'params':>9} {'final val':>15} {'best val':>9} {'epochs to':>10} "
        f"{'s to target':>11} {'x baseline':>10} {'s/run':>7}"
    )
    print(header)
    for t in result["table"]:
        final, sd = t["final_val_accuracy"]
        epochs = ",".join("-" if e is None else str(e) for e in t["epochs_to_target"])
        secs = "not reached" if t["seconds_to_target"] is None else f"{t['seconds_to_target']:.1f}"
        ratio = "-" if t["ratio_vs_baseline"] is None else f"{t['ratio_vs_baseline']:.2f}"
        print(
            f"{t['row']:<18} {t['params']:>9,} {final:>8.4f} ± {sd:.4f} "
            f"{t['best_val_accuracy'][0]:>9.4f} {epochs:>10} {secs:>11} {ratio:>10} "
            f"{t['seconds_per_run']:>7.1f}"
        )
    print(
        "time = training seconds (validation left out) up to the first epoch at the target; "
        "x baseline = mean over seeds of the per-seed ratio (runs that reached it)"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lanes", default="2*mlcn2:2x1", help="an MLCN, or capsnet")
    parser.add_argument("--dataset", default="fashion-mnist")
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--train-limit", type=int, default=400)
    parser.add_argument("--val-limit", type=int, default=500)
    parser.add_argument("--batch-size", type=int, default=16, help="FasTrCaps: 16 (= 2^P, P=4)")
    parser.add_argument("--lr", type=float, default=LEARNING_RATE)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--rows", choices=sorted(ROWS), default="table")
    parser.add_argument("--target", type=float, default=None)
    parser.add_argument("--quick", action="store_true", help="4 epochs on 40/40 images, 1 seed")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    settle_args(args, QUICK, ("epochs", "train_limit", "val_limit", "batch_size", "seeds"))
    result = measure(args)
    if args.json:
        print(json.dumps(result))
    else:
        show(result)
    return 0


if __name__ == "__main__":
    from nasmlcn.reproduce.engines.common import exit_with

    exit_with(main())
