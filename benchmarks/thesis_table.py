"""The Fashion-MNIST rows of the thesis's Table 4.1, trained here and printed beside it.

Rows (``--rows``, default all): ``capsnet`` (Sabour et al., ``CapsNetSpec()``),
``mlcn1-2x4`` = ``2*mlcn1:4x1``, ``mlcn1-8x4`` = ``8*mlcn1:4x1``, ``mlcn2-2x4`` =
``2*mlcn2:4x1``, ``mlcn2-8x4`` = ``8*mlcn2:4x1``. ``--mlcn1-type`` / ``--mlcn2-type``
swap the lane type of the MLCN rows (e.g. ``mlcn2-72``); ``--train 'augment=shift
batch_size=50'`` applies training and model overrides to every row (the keys: see
``benchmarks/_training_runs.py``; a model key a row has no field for, such as
``routing`` for CapsNet, is left out of that row, and the table says which applied).

Every row trains on the training split (54,000 images: 10 % of the 60,000 are held
out as validation, chosen by ``--seed``, and reported per epoch) for ``--epochs``
(default 20; CapsNet ``--capsnet-epochs``, default the same). The figure is the test
accuracy (10,000 images) of the model after the LAST epoch: no epoch is picked by its
test accuracy. The model is also tested after every epoch, and the table adds the
test accuracy of the epoch with the best validation accuracy, and the best test
accuracy of any epoch: the thesis's code validates on the test set and keeps the best
epoch's weights, so that last figure is the like-for-like (optimistic) comparison. The
table prints the epochs of every row, since they may differ.

Printed per row, ours beside the thesis's (Table 4.1, NVIDIA P100): parameters, test
accuracy, seconds per training epoch (the median over epochs) and the speed ratio to
CapsNet (CapsNet's s/epoch / the row's). Our ratio uses the CapsNet run with the same settings from
the results file, which should be measured on the same machine and threads (the
table prints where each row trained).

Resumable: every finished row is stored in ``--results`` (default
``~/.cache/nasmlcn/thesis-table/results.json``) as soon as it finishes, and a rerun
trains only the missing rows; while a row trains, its checkpoint is written after
every epoch under ``<results folder>/runs/<key>/`` (``nasmlcn train``'s files), so a
killed row resumes from its last finished epoch. The checkpoint is deleted when the
row is stored (``arch.json`` and ``result.json`` stay).

    python benchmarks/thesis_table.py --device cuda                  # the 5 rows, 20 epochs
    python benchmarks/thesis_table.py --rows mlcn2-2x4,capsnet --epochs 5 --train augment=shift
    python benchmarks/thesis_table.py --mlcn2-type mlcn2-72 --rows mlcn2-2x4,mlcn2-8x4
    python benchmarks/thesis_table.py --quick --json                 # 1 epoch, 500 images
"""

from __future__ import annotations

import argparse
import json
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from _common import fraction
from _training_runs import (
    EpochLog,
    ResultsFile,
    apply_overrides,
    effective_settings,
    format_overrides,
    history_figures,
    model_params,
    parse_overrides,
    run_facts,
    run_key,
    say,
    settle_args,
    short_hash,
)

from nasmlcn.errors import NasmlcnError
from nasmlcn.specs import ArchSpec, CapsNetSpec, MLCNSpec
from nasmlcn.training import TrainConfig, TrainJob, load_job_splits, run_training

DEFAULT_RESULTS = Path.home() / ".cache" / "nasmlcn" / "thesis-table" / "results.json"
QUICK = {"epochs": 1, "capsnet_epochs": 1, "train_limit": 500, "val_limit": 200, "test_limit": 500}


@dataclass(frozen=True)
class ThesisRow:
    """One Fashion-MNIST row of Table 4.1 (thesis, sec. 4.3.4; trained on a P100)."""

    name: str
    model: str  # the thesis's name
    lane_family: str | None  # mlcn1 | mlcn2; None for CapsNet
    lanes: int
    width: int
    params: int
    seconds_per_epoch: float
    accuracy: float


THESIS_ROWS = (
    ThesisRow("capsnet", "CapsNet", None, 0, 0, 8_227_088, 220, 0.9130),
    ThesisRow("mlcn1-2x4", "Mlcn1, 2 lanes, width 4", "mlcn1", 2, 4, 3_655_376, 21, 0.9114),
    ThesisRow("mlcn1-8x4", "Mlcn1, 8 lanes, width 4", "mlcn1", 8, 4, 10_633_232, 90, 0.9087),
    ThesisRow("mlcn2-2x4", "Mlcn2, 2 lanes, width 4", "mlcn2", 2, 4, 3_655_376, 20, 0.9101),
    ThesisRow("mlcn2-8x4", "Mlcn2, 8 lanes, width 4", "mlcn2", 8, 4, 10_633_232, 92, 0.9263),
)
CAPSNET = THESIS_ROWS[0]


@dataclass(frozen=True)
class Planned:
    """A row as this invocation trains it."""

    row: ThesisRow
    arch: ArchSpec
    config: TrainConfig
    overrides: dict[str, Any]  # those that applied to this row
    key: str


def plan_rows(args: argparse.Namespace) -> list[Planned]:
    """Every row (selected or not: the ratio needs CapsNet's key), with its key."""
    overrides = parse_overrides(shlex.split(args.train), f"--train {args.train!r}")
    types = {"mlcn1": args.mlcn1_type, "mlcn2": args.mlcn2_type}
    planned = []
    for row in THESIS_ROWS:
        origin = f"row {row.name}"
        if row.lane_family is None:
            base: ArchSpec = CapsNetSpec()
            epochs = args.capsnet_epochs or args.epochs
        else:
            lanes = f"{row.lanes}*{types[row.lane_family]}:{row.width}x1"
            try:
                base = MLCNSpec.from_lanes(lanes)
            except NasmlcnError as err:
                raise SystemExit(f"{origin}: {err}") from None
            epochs = args.epochs
        config = TrainConfig(epochs=epochs, seed=args.seed, device=args.device)
        arch, config, applied = apply_overrides(base, config, overrides, origin)
        key = run_key(
            {
                "row": row.name,
                "model": model_name(arch),
                "params": model_params(arch),
                # every setting as used (not how it was asked for): a default
                # spelled out in --train finds the run made without it
                "settings": effective_settings(arch, config),
                "epochs": epochs,
                "seed": args.seed,
                "dataset": "fashion-mnist",
                "train_limit": args.train_limit,
                "val_limit": args.val_limit,
                "test_limit": args.test_limit,
            }
        )
        planned.append(Planned(row, arch, config, applied, key))
    return planned


def model_name(arch: ArchSpec) -> str:
    return arch.describe() if isinstance(arch, MLCNSpec) else "capsnet"


def train_row(p: Planned, args: argparse.Namespace, results: ResultsFile) -> dict[str, Any]:
    """Trains (or resumes) one row and evaluates its last-epoch model on the test set."""
    out = args.results.parent / "runs" / short_hash(p.key)
    job = TrainJob(
        p.arch,
        dataset="fashion-mnist",
        config=p.config,
        data_dir=args.data_dir,
        train_limit=args.train_limit,
        val_limit=args.val_limit,
        test_limit=args.test_limit,
        out_dir=str(out),
        resume=True,
    )
    log = EpochLog(
        p.row.name,
        results,
        p.key,
        test=load_job_splits(job).test,
        eval_batch_size=p.config.eval_batch_size,
    )
    report = run_training(job, [log])
    (out / "checkpoint.pt").unlink(missing_ok=True)
    figures = history_figures(report.history)
    per_epoch = log.test_accuracies
    known = [(a, i + 1) for i, a in enumerate(per_epoch) if a is not None]
    best_test, best_test_epoch = max(known, key=lambda t: t[0]) if known else (None, None)
    return {
        "row": p.row.name,
        "model": model_name(p.arch),
        "overrides": p.overrides,
        "arch": p.arch.to_dict(),
        "train_config": p.config.to_dict(),
        "params": report.params,
        "test_accuracy": report.test_accuracy,
        "test_accuracy_per_epoch": per_epoch,
        "test_accuracy_at_best_val": per_epoch[figures["best_epoch"] - 1],
        "max_test_accuracy": best_test,
        "max_test_epoch": best_test_epoch,
        "test_images": report.test_images,
        "train_images": report.train_images,
        "out_dir": str(out),
        **figures,
        **run_facts(report.device),
    }


def table_rows(
    planned: list[Planned], results: ResultsFile, names: list[str]
) -> list[dict[str, Any]]:
    """The selected rows that have a result, ours beside the thesis's."""
    capsnet = results.finished(planned[0].key)
    rows = []
    for p in planned:
        entry = results.finished(p.key)
        if p.row.name not in names or entry is None:
            continue
        ratio = capsnet["seconds_per_epoch"] / entry["seconds_per_epoch"] if capsnet else None
        rows.append(
            {
                **entry,
                "thesis": {
                    "model": p.row.model,
                    "params": p.row.params,
                    "seconds_per_epoch": p.row.seconds_per_epoch,
                    "test_accuracy": p.row.accuracy,
                    "speed_ratio_to_capsnet": CAPSNET.seconds_per_epoch / p.row.seconds_per_epoch,
                },
                "speed_ratio_to_capsnet": ratio,
                "capsnet_measured_on": (
                    f"{capsnet['device']} ({capsnet['threads']} threads, {capsnet['host']})"
                    if capsnet
                    else None
                ),
            }
        )
    return rows


def render(report: dict[str, Any]) -> str:
    s = report["settings"]
    lines = [
        f"Fashion-MNIST, thesis Table 4.1: ours / thesis (P100). Trained on {s['train_images']} "
        f"images; test accuracy on {s['test_images']} test images.",
        "",
        f"{'row':<10} {'model':<15} {'ep':>3} {'params ours/thesis':>23} "
        f"{'test: last':>10} {'@best val':>9} {'max (ep)':>13} {'thesis':>7} "
        f"{'s/epoch ours/thesis':>20} {'x CapsNet ours/thesis':>22}  trained on",
    ]
    for r in report["rows"]:
        t = r["thesis"]
        ratio = r["speed_ratio_to_capsnet"]
        ours_ratio = f"{ratio:.2f}" if ratio is not None else "-"
        best = r.get("max_test_accuracy")
        best_text = f"{fraction(best)} ({r.get('max_test_epoch')})" if best is not None else "-"
        lines.append(
            f"{r['row']:<10} {r['model']:<15} {r['epochs']:>3} "
            f"{r['params']:>11,}/{t['params']:<11,} "
            f"{r['test_accuracy']:>10.4f} {fraction(r.get('test_accuracy_at_best_val')):>9} "
            f"{best_text:>13} {t['test_accuracy']:>7.4f} "
            f"{r['seconds_per_epoch']:>10.1f}/{t['seconds_per_epoch']:<9.0f} "
            f"{ours_ratio:>11}/{t['speed_ratio_to_capsnet']:<10.2f}  "
            f"{r['device']}, {r['threads']} threads"
        )
    if report["train_overrides"]:
        lines.append("")
        lines.append(f"--train {report['train_overrides']}; applied per row:")
        for r in report["rows"]:
            lines.append(f"  {r['row']}: {format_overrides(r['overrides']) or '(none)'}")
    lines += [
        "",
        "test: last = the model after the last epoch (the figure); @best val = the model of "
        "the epoch",
        "  with the best validation accuracy; max (ep) = the best test accuracy of any epoch: "
        "how the",
        "  thesis's code picks its model (it validates on the test set), so optimistic, shown "
        "to compare like with like.",
        "s/epoch: ours is the median over the row's epochs (training only, no evaluation).",
        "x CapsNet = CapsNet's s/epoch / the row's (ours: CapsNet's run at these settings, "
        f"trained on {report['capsnet_measured_on'] or 'no CapsNet run yet'}).",
        f"rows: {report['trained']} trained now, {report['from_results']} from {report['results']}",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    names = [r.name for r in THESIS_ROWS]
    parser.add_argument("--rows", default=",".join(names), help=f"of {','.join(names)}")
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--capsnet-epochs", type=int, default=None, help="default: --epochs")
    parser.add_argument("--mlcn1-type", default="mlcn1", help="lane type of the Mlcn1 rows")
    parser.add_argument("--mlcn2-type", default="mlcn2", help="lane type of the Mlcn2 rows")
    parser.add_argument("--train", default="", help="overrides, e.g. 'augment=shift lr=2e-3'")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--device", default="auto", help="auto, cpu, cuda or cuda:N")
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    parser.add_argument("--train-limit", type=int, default=None, help="N training images")
    parser.add_argument("--val-limit", type=int, default=None, help="N validation images")
    parser.add_argument("--test-limit", type=int, default=None, help="N test images")
    parser.add_argument("--results", type=Path, default=DEFAULT_RESULTS)
    parser.add_argument("--quick", action="store_true", help="1 epoch, 500 training images")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    settle_args(
        args,
        QUICK,
        ("epochs", "capsnet_epochs", "threads", "train_limit", "val_limit", "test_limit"),
    )
    selected = [n.strip() for n in args.rows.split(",") if n.strip()]
    unknown = [n for n in selected if n not in names]
    if unknown or not selected:
        raise SystemExit(
            f"--rows: unknown {', '.join(unknown) or '(none given)'}; of {','.join(names)}"
        )

    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    planned = plan_rows(args)
    results = ResultsFile(args.results, "thesis-table")
    trained = reused = 0
    for p in planned:
        if p.row.name not in selected:
            continue
        if results.finished(p.key) is not None:
            say(f"[{p.row.name}] from the results file")
            reused += 1
            continue
        say(f"[{p.row.name}] training {p.arch.describe()}, {p.config.epochs} epochs")
        try:
            results.record(p.key, train_row(p, args, results))
        except NasmlcnError as err:
            raise SystemExit(f"[{p.row.name}] {err}") from None
        trained += 1
    rows = table_rows(planned, results, selected)
    first = rows[0] if rows else {}
    report = {
        "settings": {
            "epochs": args.epochs,
            "capsnet_epochs": args.capsnet_epochs or args.epochs,
            "seed": args.seed,
            "train_images": first.get("train_images"),
            "test_images": first.get("test_images"),
            "train_limit": args.train_limit,
            "val_limit": args.val_limit,
            "test_limit": args.test_limit,
        },
        "train_overrides": args.train,
        "rows": rows,
        "capsnet_measured_on": rows[0]["capsnet_measured_on"] if rows else None,
        "test_accuracy_of": "the model after the last epoch",
        "trained": trained,
        "from_results": reused,
        "results": str(args.results),
    }
    print(json.dumps(report) if args.json else render(report))
    return 0


if __name__ == "__main__":
    from _common import exit_with

    exit_with(main())
