"""Lane pruning with and without lane dropout (thesis sec. 4.3.3, Fig. 4.6).

Trains one MLCN (default ``16*mlcn1:4x1``, the thesis's) on Fashion-MNIST twice,
with the same seed and data: without lane dropout and with it (``--dropout``,
default 0.1 as in the thesis). Then prunes each (``nasmlcn prune``'s library call,
:func:`nasmlcn.runs._lane_removal.remove_lanes`): every lane's importance is the validation
accuracy lost when it alone is removed, and lanes are removed least important
first, one at a time. Printed, per number of lanes removed: each model's
validation accuracy, and its measured inference throughput over the full model's
(the baseline, measured in the same run: forward only, eval mode, batch
``--inference-batch``, the median of ``--passes`` timed passes). Then, per model,
how many lanes can go while the accuracy stays within ``--tolerance`` points of
the full model's, and the speedup there. The thesis: with dropout, accuracy holds
until about 15 of 16 lanes are removed; without, removing lanes costs accuracy
sooner. Each curve rests on one training (seed ``--seed``) and one pruning.

The trained runs stay in ``--out`` (default ``~/.cache/nasmlcn/lane-pruning``,
subfolders ``no-dropout`` and ``dropout``) with ``lane_pruning.html``/``.png``
(both curves, as Fig. 4.6 a/b) and ``results.json``; a rerun with the same
settings trains nothing (resuming a finished run only tests it), and a killed one
resumes from the last epoch's checkpoint. Other settings need another ``--out``.

    python -m nasmlcn.reproduce.engines.lane_pruning                  # 2 epochs on 2000 images
    python -m nasmlcn.reproduce.engines.lane_pruning --epochs 3 --train-limit 6000 --threads 2
    python -m nasmlcn.reproduce.engines.lane_pruning --quick --json   # 4 small lanes, 100 images
"""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from nasmlcn.reproduce.engines.common import say

DEFAULT_OUT = Path("~/.cache/nasmlcn/lane-pruning").expanduser()
VARIANTS = {"no-dropout": 0.0, "dropout": None}  # None: --dropout

QUICK = {
    "lanes": "4*mlcn1:1x1",
    "epochs": 1,
    "train_limit": 100,
    "val_limit": 60,
    "test_limit": 20,
    "inference_batch": 4,
    "passes": 2,
}


@dataclass(frozen=True)
class Settings:
    """What decides the trained runs (a rerun must match ``results.json``'s)."""

    lanes: str
    dropout: float
    dataset: str
    epochs: int
    train_limit: int
    val_limit: int
    test_limit: int
    seed: int


def _check_settings(out: Path, settings: Settings) -> None:
    saved = out / "settings.json"
    if saved.exists():
        before = json.loads(saved.read_text())
        if before != asdict(settings):
            changed = sorted(k for k in before if before[k] != asdict(settings).get(k))
            raise SystemExit(
                f"{out} holds runs trained with other settings ({', '.join(changed)}); "
                "give another --out"
            )
    out.mkdir(parents=True, exist_ok=True)
    saved.write_text(json.dumps(asdict(settings), indent=2) + "\n")


def _train(settings: Settings, dropout: float, out: Path, data_dir: str | None) -> None:
    from nasmlcn.data import DATASETS
    from nasmlcn.specs import MLCNSpec
    from nasmlcn.training import TrainConfig, TrainJob, arch_for_dataset, train

    spec = MLCNSpec.from_lanes(settings.lanes, lane_dropout=dropout)
    job = TrainJob(
        arch_for_dataset(spec, DATASETS.get(settings.dataset), strict=False),
        dataset=settings.dataset,
        config=TrainConfig(epochs=settings.epochs, seed=settings.seed, device="auto"),
        data_dir=data_dir,
        download=False,
        train_limit=settings.train_limit,
        val_limit=settings.val_limit,
        test_limit=settings.test_limit,
        out_dir=str(out),
        resume=True,
    )
    done = (out / "checkpoint.pt").exists()
    say(f"{'testing the trained' if done else 'training'} {spec.describe()} dropout {dropout}")
    report = train(job)
    say(
        f"  {len(report.history)} epochs, val accuracy {report.history[-1].val_accuracy:.4f}, "
        f"test accuracy {report.test_accuracy:.4f}"
    )


def holds_until(accuracies: list[float], tolerance: float) -> int:
    """Lanes that can be removed (in order) with every accuracy on the way within
    ``tolerance`` of the full model's (``accuracies[0]``)."""
    n = 0
    for value in accuracies[1:]:
        if value < accuracies[0] - tolerance:
            break
        n += 1
    return n


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--lanes", default="16*mlcn1:4x1", help="the MLCN (compact syntax)")
    parser.add_argument("--dropout", type=float, default=0.1, help="lane dropout of the second")
    parser.add_argument("--dataset", default="fashion-mnist")
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--train-limit", type=int, default=2000, help="N training images")
    parser.add_argument("--val-limit", type=int, default=1000, help="N validation images")
    parser.add_argument("--test-limit", type=int, default=1000, help="N test images")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--inference-batch", type=int, default=100)
    parser.add_argument("--passes", type=int, default=5, help="timed passes per step")
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    parser.add_argument("--tolerance", type=float, default=1.0, help="points of accuracy")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--no-png", action="store_true", help="write the figure as HTML only")
    parser.add_argument("--quick", action="store_true", help="4 small lanes on 100 images")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    if args.quick:
        for name, value in QUICK.items():
            setattr(args, name, value)

    import torch

    from nasmlcn.runs import InferenceSettings, load_run, remove_lanes, write_lane_removal_figure

    if args.threads:
        torch.set_num_threads(args.threads)
    settings = Settings(
        args.lanes,
        args.dropout,
        args.dataset,
        args.epochs,
        args.train_limit,
        args.val_limit,
        args.test_limit,
        args.seed,
    )
    _check_settings(args.out, settings)
    inference = InferenceSettings(batch=args.inference_batch, passes=args.passes, warmup=1)
    reports: dict[str, Any] = {}  # LaneRemovalReport, by curve
    for name, dropout in VARIANTS.items():
        p = args.dropout if dropout is None else dropout
        _train(settings, p, args.out / name, args.data_dir)
        say(f"pruning {name}")
        reports[f"{name} ({p:g})"] = remove_lanes(
            load_run(args.out / name, dataset=args.dataset),
            data_dir=args.data_dir,
            download=False,
            val_limit=args.val_limit,
            inference=inference,
        )
    from nasmlcn.errors import ExportError

    try:
        files = write_lane_removal_figure(
            reports,
            args.out,
            png=not args.no_png,
            title=f"Lane pruning of {args.lanes} on {args.dataset}, with and without lane dropout",
        )
    except (ImportError, ExportError) as err:
        # the measurements are what count: a missing plotly or Chromium costs the figure only
        say(f"warning: no lane-pruning figure: {err}")
        files = []
    result = _result(reports, settings, args.tolerance, [str(p) for p in files])
    (args.out / "results.json").write_text(json.dumps(result, indent=2) + "\n")
    if args.json:
        print(json.dumps(result))
    else:
        _print(result)
    return 0


def _result(
    reports: dict[str, Any], settings: Settings, tolerance: float, files: list[str]
) -> dict[str, Any]:
    curves = {}
    for label, report in reports.items():
        data = report.to_dict()
        accuracies = [s["accuracy"] for s in data["steps"]]
        holds = holds_until(accuracies, tolerance / 100)
        curves[label] = {
            "steps": data["steps"],
            "importance": data["importance"],
            "order": data["order"],
            "full_accuracy": accuracies[0],
            "lanes_removable": holds,
            "speedup_there": data["steps"][holds]["speedup"],
            "inference": data["inference"],
        }
    return {
        "settings": asdict(settings),
        "tolerance_points": tolerance,
        "validation_images": next(iter(reports.values())).images,
        "runs_per_curve": 1,
        "curves": curves,
        "files": files,
    }


def _print(result: dict[str, Any]) -> None:
    s = result["settings"]
    curves = result["curves"]
    labels = list(curves)
    first = curves[labels[0]]
    inference = first["inference"]
    print(
        f"lane pruning of {s['lanes']} on {s['dataset']}: {s['epochs']} epochs on "
        f"{s['train_limit']} images (seed {s['seed']}), accuracy on "
        f"{result['validation_images']} validation images; inference batch "
        f"{inference['batch_size']}, median of {inference['passes']} passes, "
        f"{inference['threads']} threads on {inference['device']}; one run per curve"
    )
    header = "removed" + "".join(f" | acc {k:>16}" for k in labels)
    header += "".join(f" | speedup {k:>16}" for k in labels)
    print(header)
    for i in range(len(first["steps"])):
        row = f"{i:7d}"
        row += "".join(f" | {curves[k]['steps'][i]['accuracy']:20.4f}" for k in labels)
        row += "".join(f" | {curves[k]['steps'][i]['speedup']:23.2f}x" for k in labels)
        print(row)
    for label in labels:
        c = curves[label]
        print(
            f"{label}: full accuracy {c['full_accuracy']:.4f}; {c['lanes_removable']} lanes "
            f"removable within {result['tolerance_points']:g} point(s), "
            f"{c['speedup_there']:.2f}x faster there"
        )
    if result["files"]:
        print("figure: " + ", ".join(result["files"]))


if __name__ == "__main__":
    from nasmlcn.reproduce.engines.common import exit_with

    exit_with(main())
