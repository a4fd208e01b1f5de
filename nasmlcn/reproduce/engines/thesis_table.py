"""The Fashion-MNIST rows of the thesis's Table 4.1, trained here and printed beside it.

Rows (``--rows``, default all nine, in this order): ``capsnet`` (Sabour et al.,
``CapsNetSpec()``); the thesis's four MLCN rows in the lanes of its public reference
code (lanes-capsnet): ``mlcn1-2x4`` = ``2*mlcn1-ref:4x1``, ``mlcn1-8x4``,
``mlcn2-2x4`` and ``mlcn2-8x4`` = ``8*mlcn2-ref:4x1`` (that code's network, with its
parameter count); and the same four in the lanes of the thesis's text,
``mlcn1-2x4-text`` = ``2*mlcn1:4x1`` .. ``mlcn2-8x4-text`` = ``8*mlcn2:4x1``. The two
sources disagree: the code builds 16-D primary capsules from far larger lanes than
the text describes (``nasmlcn/specs/_lane_types.py``), and neither gives the
thesis's parameter counts, so both are trained and each is compared with the
thesis row it stands for. ``--mlcn1-type`` / ``--mlcn2-type`` (default
``mlcn1-ref`` / ``mlcn2-ref``) swap the lane type of the first four MLCN rows
(e.g. ``mlcn2-72``); the ``-text`` rows keep theirs. ``--train 'augment=shift
batch_size=50'`` applies training and model overrides to every row (the keys: see
``nasmlcn/reproduce/engines/_training_runs.py``; a model key a row has no field for, such as
``routing`` for CapsNet, is left out of that row, and the table says which applied).

Every row trains with ``--seeds`` seeds (default 3: ``--seed`` .. ``--seed+N-1``;
a seed picks the validation split, the initial weights and the batch order) on the
training split (54,000 images: 10 % of the 60,000 are held out as validation) for
``--epochs`` (default 20; CapsNet ``--capsnet-epochs``, default the same). Select on
validation, report test once: a run's figure is the test accuracy (10,000 images)
of its weights after the epoch with the best validation accuracy (the library's
protocol, ``nasmlcn.training.train``), with the last epoch's beside it. The
test set never picks an epoch. (The thesis's code validates on the test set and
keeps the best epoch, so its figures are optimistic.) A row gives the mean and the
sample sd over its seeds; a row with fewer finished seeds than asked is shown with
those it has, and says how many.

Printed per row, ours beside the thesis's (Table 4.1, NVIDIA P100, mean of ten
runs): parameters, test accuracy, seconds per training epoch (each run's median
epoch, averaged over the seeds) and the speed ratio to CapsNet (CapsNet's s/epoch
/ the row's). Our ratio uses the CapsNet runs with the same settings from the
results file, which should be measured on the same machine and threads (the table
prints where each row trained); ``--no-capsnet`` trains none (a recipe study of the
MLCN rows, ``--train``'s overrides applied to them alone), and the ratio is left out.

Resumable: every finished run (row x seed) is stored in ``--results`` (default
``~/.cache/nasmlcn/thesis-table/results.json``) as soon as it finishes, and a rerun
trains only the missing runs, seed after seed (every row of the first seed, then
the next), so a stopped invocation leaves whole seeds. While a run trains, its
checkpoint is written after every epoch under ``<results folder>/runs/<key>/``
(``nasmlcn train``'s files), so a killed run resumes from its last finished epoch.
The checkpoint is deleted when the run is stored (``arch.json`` and ``result.json``
stay). A run's key is its model and settings, not its row: a row of the thesis
built with ``--mlcn2-type mlcn2`` finds the runs of its ``-text`` row.

    python -m nasmlcn.reproduce.engines.thesis_table --device cuda                  # 9 rows x 3 seeds, 20 epochs
    python -m nasmlcn.reproduce.engines.thesis_table --rows mlcn2-2x4,capsnet --epochs 5 --train augment=shift
    python -m nasmlcn.reproduce.engines.thesis_table --mlcn2-type mlcn2-72 --rows mlcn2-2x4,mlcn2-8x4
    python -m nasmlcn.reproduce.engines.thesis_table --quick --json                 # 1 epoch, 500 images, 1 seed
"""

from __future__ import annotations

import argparse
import json
import shlex
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from nasmlcn.errors import NasmlcnError
from nasmlcn.reproduce.engines._training_runs import (
    EpochLog,
    ResultsFile,
    apply_overrides,
    effective_settings,
    format_overrides,
    history_figures,
    mean_sd,
    model_params,
    parse_overrides,
    run_facts,
    run_key,
    say,
    settle_args,
    short_hash,
    versus_baseline,
    versus_lines,
)
from nasmlcn.reproduce.engines.common import fraction
from nasmlcn.specs import ArchSpec, CapsNetSpec, MLCNSpec
from nasmlcn.training import PROTOCOL, TrainConfig, TrainJob, train

DEFAULT_RESULTS = Path.home() / ".cache" / "nasmlcn" / "thesis-table" / "results.json"
DEFAULT_SEEDS = 3
QUICK = {"epochs": 1, "capsnet_epochs": 1, "train_limit": 500, "val_limit": 200, "test_limit": 500}
QUICK_SEEDS = 1
"""``--quick``'s seeds unless ``--seeds`` is given."""
SUMMED = ("test_accuracy", "last_epoch_test_accuracy", "best_val_accuracy", "seconds_per_epoch")
"""The figures of a run that a row gives as the mean and sd over its seeds."""


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
class Row:
    """A row of ours: the network of a thesis row, in one kind of lane."""

    name: str
    thesis: ThesisRow  # the row of Table 4.1 it is compared with
    lane_type: str | None  # fixed (the -text rows); None: --mlcnN-type's, or CapsNet


ROWS = (
    Row(CAPSNET.name, CAPSNET, None),
    *(Row(t.name, t, None) for t in THESIS_ROWS[1:]),
    *(Row(f"{t.name}-text", t, t.lane_family) for t in THESIS_ROWS[1:]),
)


@dataclass(frozen=True)
class Planned:
    """One run (a row with one seed) as this invocation trains it."""

    row: Row
    seed: int
    arch: ArchSpec
    config: TrainConfig
    overrides: dict[str, Any]  # those that applied to this row
    key: str

    @property
    def label(self) -> str:
        return f"{self.row.name}, seed {self.seed}"


def seeds_of(args: argparse.Namespace) -> list[int]:
    return list(range(args.seed, args.seed + args.seeds))


def row_model(
    row: Row, args: argparse.Namespace, overrides: dict[str, Any]
) -> tuple[ArchSpec, TrainConfig, dict[str, Any]]:
    """``row``'s model and training configuration (seed ``--seed``), overrides applied."""
    origin = f"row {row.name}"
    t = row.thesis
    if t.lane_family is None:
        base: ArchSpec = CapsNetSpec()
        epochs = args.capsnet_epochs or args.epochs
    else:
        lane_type = row.lane_type or vars(args)[f"{t.lane_family}_type"]
        try:
            base = MLCNSpec.from_lanes(f"{t.lanes}*{lane_type}:{t.width}x1")
        except NasmlcnError as err:
            raise SystemExit(f"{origin}: {err}") from None
        epochs = args.epochs
    config = TrainConfig(epochs=epochs, seed=args.seed, device=args.device)
    return apply_overrides(base, config, overrides, origin)


def plan_runs(args: argparse.Namespace) -> list[Planned]:
    """Every run of the selected rows and of CapsNet (the ratio needs its keys; not
    with ``--no-capsnet``), seed after seed; no training."""
    overrides = parse_overrides(shlex.split(args.train), f"--train {args.train!r}")
    rows = [
        r for r in ROWS if r.name in args.selected or (r.thesis is CAPSNET and not args.no_capsnet)
    ]
    models = {row: row_model(row, args, overrides) for row in rows}
    data = {
        "dataset": "fashion-mnist",
        "train_limit": args.train_limit,
        "val_limit": args.val_limit,
        "test_limit": args.test_limit,
        "protocol": PROTOCOL,  # a run reported under another protocol trains anew
    }
    shared = {row: {**data, "params": model_params(arch)} for row, (arch, _, _) in models.items()}
    planned = []
    for seed in seeds_of(args):
        for row, (arch, config, applied) in models.items():
            seeded = replace(config, seed=seed)
            key = key_of(arch, seeded, shared[row])
            planned.append(Planned(row, seed, arch, seeded, applied, key))
    return planned


def key_of(arch: ArchSpec, config: TrainConfig, shared: dict[str, Any]) -> str:
    """A run's key in the results file: what decides its numbers."""
    return run_key(
        {
            # the model, not the row: a row that builds a -text row's model
            # (--mlcn2-type mlcn2) finds its runs
            "model": model_name(arch),
            # every setting as used (not how it was asked for): a default spelled
            # out in --train finds the run made without it
            "settings": effective_settings(arch, config),
            "epochs": config.epochs,
            "seed": config.seed,
            **shared,  # the data, the protocol and the model's parameter count
        }
    )


def model_name(arch: ArchSpec) -> str:
    return arch.describe() if isinstance(arch, MLCNSpec) else "capsnet"


def train_run(p: Planned, args: argparse.Namespace, results: ResultsFile) -> dict[str, Any]:
    """Trains (or resumes) one run; its test figures are the library's (the model of
    the best-validation epoch, and the last epoch's)."""
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
    report = train(job, [EpochLog(p.label, results, p.key)])
    (out / "checkpoint.pt").unlink(missing_ok=True)
    figures = history_figures(report.history)
    del figures["best_epoch"]  # the run's selected_epoch, as the library chose it
    return {
        "seed": p.seed,
        "model": model_name(p.arch),
        "overrides": p.overrides,
        "arch": p.arch.to_dict(),
        "train_config": p.config.to_dict(),
        "params": report.params,
        "test_accuracy": report.test_accuracy,
        "test_loss": report.test_loss,
        "selected_epoch": report.selected_epoch,
        "last_epoch_test_accuracy": report.last_epoch_test_accuracy,
        "last_epoch_test_loss": report.last_epoch_test_loss,
        "protocol": report.protocol,
        "test_images": report.test_images,
        "train_images": report.train_images,
        "out_dir": str(out),
        **figures,
        **run_facts(report.device),
    }


def summarise(row: Row, runs: list[dict[str, Any]]) -> dict[str, Any]:
    """One row's finished runs (one per seed) as means and sds, beside the thesis's."""
    first = runs[0]
    figures: dict[str, Any] = {
        "row": row.name,
        **{k: first[k] for k in ("model", "overrides", "arch", "params", "epochs")},
        **{k: first[k] for k in ("train_images", "test_images")},
        "seeds": [r["seed"] for r in runs],
    }
    for name in SUMMED:
        figures[name], figures[f"{name}_sd"] = mean_sd([r[name] for r in runs])
    figures["selected_epochs"] = [r["selected_epoch"] for r in runs]
    figures["devices"] = devices(runs)
    t = row.thesis
    figures["thesis"] = {
        "row": t.name,
        "model": t.model,
        "params": t.params,
        "seconds_per_epoch": t.seconds_per_epoch,
        "test_accuracy": t.accuracy,
        "speed_ratio_to_capsnet": CAPSNET.seconds_per_epoch / t.seconds_per_epoch,
    }
    figures["per_seed"] = runs
    return figures


def devices(runs: list[dict[str, Any]]) -> list[str]:
    """Where ``runs`` trained (timings depend on it)."""
    return sorted({f"{r['device']} ({r['threads']} threads, {r['host']})" for r in runs})


def finished_runs(planned: list[Planned], results: ResultsFile) -> dict[str, list[dict[str, Any]]]:
    """The finished runs of ``planned`` per row, seed after seed."""
    finished: dict[str, list[dict[str, Any]]] = {}
    for p in planned:
        entry = results.finished(p.key)
        if entry is not None:
            finished.setdefault(p.row.name, []).append(entry)
    return finished


def table_rows(
    planned: list[Planned], results: ResultsFile, names: list[str]
) -> list[dict[str, Any]]:
    """The selected rows with at least one finished run, ours beside the thesis's."""
    finished = finished_runs(planned, results)
    capsnet = finished.get(CAPSNET.name, [])
    capsnet_speed = mean_sd([r["seconds_per_epoch"] for r in capsnet])[0] if capsnet else None
    rows = []
    for row in ROWS:
        if row.name not in names or row.name not in finished:
            continue
        figures = summarise(row, finished[row.name])
        ratio = capsnet_speed / figures["seconds_per_epoch"] if capsnet_speed else None
        figures["speed_ratio_to_capsnet"] = ratio
        figures["capsnet_measured_on"] = devices(capsnet) if capsnet else None
        rows.append(figures)
    return rows


def _mean_sd(row: dict[str, Any], name: str) -> str:
    return f"{fraction(row[name])} ± {fraction(row[f'{name}_sd'])}"


def render(report: dict[str, Any]) -> str:
    s = report["settings"]
    lines = [
        f"Fashion-MNIST, thesis Table 4.1: ours / thesis (P100). Trained on {s['train_images']} "
        f"images; test accuracy on {s['test_images']} test images; seeds {s['seeds']}.",
        "",
        f"{'row':<14} {'model':<15} {'ep':>3} {'seeds':>5} {'params ours/thesis':>23} "
        f"{'test (mean ± sd)':>16} {'last (mean ± sd)':>16} {'thesis':>7} "
        f"{'s/epoch ours/thesis':>20} {'x CapsNet ours/thesis':>22}  trained on",
    ]
    for r in report["rows"]:
        t = r["thesis"]
        ratio = r["speed_ratio_to_capsnet"]
        ours_ratio = f"{ratio:.2f}" if ratio is not None else "-"
        lines.append(
            f"{r['row']:<14} {r['model']:<15} {r['epochs']:>3} "
            f"{len(r['seeds'])}/{len(s['seeds']):<3} "
            f"{r['params']:>11,}/{t['params']:<11,} "
            f"{_mean_sd(r, 'test_accuracy'):>16} {_mean_sd(r, 'last_epoch_test_accuracy'):>16} "
            f"{t['test_accuracy']:>7.4f} "
            f"{r['seconds_per_epoch']:>10.1f}/{t['seconds_per_epoch']:<9.0f} "
            f"{ours_ratio:>11}/{t['speed_ratio_to_capsnet']:<10.2f}  "
            f"{'; '.join(r['devices'])}"
        )
    if report["train_overrides"]:
        lines.append("")
        lines.append(f"--train {report['train_overrides']}; applied per row:")
        for r in report["rows"]:
            lines.append(f"  {r['row']}: {format_overrides(r['overrides']) or '(none)'}")
            lines += [f"    {line}" for line in versus_lines(r.get("vs_baseline"))]
    return "\n".join(lines + notes(report))


def notes(report: dict[str, Any]) -> list[str]:
    """What the table's columns mean, under it."""
    s = report["settings"]
    short = [r["row"] for r in report["rows"] if len(r["seeds"]) < len(s["seeds"])]
    capsnet = report["capsnet_measured_on"]
    return [
        "",
        "test: the model of the epoch with the best validation accuracy (the figure); last: "
        "after the last epoch.",
        "  The test set picks no epoch. mean ± sd over the row's seeds (sample sd; 0 for one).",
        "seeds: finished / asked"
        + (f" ({', '.join(short)}: only the finished seeds)" if short else "")
        + ". thesis: the mean of ten runs, each tested at the epoch",
        "  with the best TEST accuracy (its code validates on the test set): optimistic.",
        f"MLCN rows: lanes {s['mlcn1_type']} / {s['mlcn2_type']} (--mlcn1-type, --mlcn2-type); "
        "-text rows: the thesis text's mlcn1 / mlcn2, against the same thesis rows.",
        "s/epoch: ours is the mean over seeds of each run's median epoch (training only, no "
        "evaluation).",
        "x CapsNet = CapsNet's s/epoch / the row's (ours: CapsNet's runs at these settings, "
        f"trained on {'; '.join(capsnet) if capsnet else 'no CapsNet run yet'}).",
        f"runs: {report['trained']} trained now, {report['from_results']} from {report['results']}",
    ]


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The options, checked (one line each) before anything trains."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    names = [r.name for r in ROWS]
    parser.add_argument("--rows", default=",".join(names), help=f"of {','.join(names)}")
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--capsnet-epochs", type=int, default=None, help="default: --epochs")
    parser.add_argument("--mlcn1-type", default="mlcn1-ref", help="Mlcn1 rows' lanes")
    parser.add_argument("--mlcn2-type", default="mlcn2-ref", help="Mlcn2 rows' lanes")
    parser.add_argument("--train", default="", help="overrides, e.g. 'augment=shift lr=2e-3'")
    parser.add_argument(
        "--no-capsnet",
        action="store_true",
        help="no CapsNet runs beside the rows (no speed ratio): a recipe study of MLCN rows",
    )
    parser.add_argument("--seed", type=int, default=0, help="the first seed")
    parser.add_argument(
        "--seeds",
        type=int,
        default=None,
        help=f"seeds --seed..--seed+N-1 per row (default {DEFAULT_SEEDS}; {QUICK_SEEDS} "
        "with --quick)",
    )
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--device", default="auto", help="auto, cpu, cuda or cuda:N")
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    parser.add_argument("--train-limit", type=int, default=None, help="N training images")
    parser.add_argument("--val-limit", type=int, default=None, help="N validation images")
    parser.add_argument("--test-limit", type=int, default=None, help="N test images")
    parser.add_argument("--results", type=Path, default=DEFAULT_RESULTS)
    parser.add_argument("--quick", action="store_true", help="1 epoch, 500 images, 1 seed")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    if args.seeds is None:
        args.seeds = QUICK_SEEDS if args.quick else DEFAULT_SEEDS
    positive = ("epochs", "capsnet_epochs", "seeds", "threads")
    settle_args(args, QUICK, (*positive, "train_limit", "val_limit", "test_limit"))
    args.selected = [n.strip() for n in args.rows.split(",") if n.strip()]
    unknown = [n for n in args.selected if n not in names]
    if unknown or not args.selected:
        raise SystemExit(
            f"--rows: unknown {', '.join(unknown) or '(none given)'}; of {','.join(names)}"
        )
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)

    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    planned = plan_runs(args)
    results = ResultsFile(args.results, "thesis-table")
    trained = reused = 0
    for p in planned:
        if p.row.name not in args.selected:
            continue
        if results.finished(p.key) is not None:
            say(f"[{p.label}] from the results file")
            reused += 1
            continue
        say(f"[{p.label}] training {p.arch.describe()}, {p.config.epochs} epochs")
        try:
            results.record(p.key, train_run(p, args, results))
        except NasmlcnError as err:
            raise SystemExit(f"[{p.label}] {err}") from None
        trained += 1
    rows = table_rows(planned, results, args.selected)
    if args.train:  # a variant against the same rows and seeds without overrides
        base = finished_runs(plan_runs(argparse.Namespace(**{**vars(args), "train": ""})), results)
        for row in rows:
            row["vs_baseline"] = versus_baseline(base.get(row["row"], []), row["per_seed"])
    first = rows[0] if rows else {}
    report = {
        "settings": {
            "epochs": args.epochs,
            "capsnet_epochs": args.capsnet_epochs or args.epochs,
            "seeds": seeds_of(args),
            "mlcn1_type": args.mlcn1_type,
            "mlcn2_type": args.mlcn2_type,
            "train_images": first.get("train_images"),
            "test_images": first.get("test_images"),
            "train_limit": args.train_limit,
            "val_limit": args.val_limit,
            "test_limit": args.test_limit,
        },
        "train_overrides": args.train,
        "rows": rows,
        "capsnet_measured_on": rows[0]["capsnet_measured_on"] if rows else None,
        "test_accuracy_of": "the model of the epoch with the best validation accuracy "
        "(each run's; a row gives the mean and sd over its seeds)",
        "protocol": PROTOCOL,
        "trained": trained,
        "from_results": reused,
        "results": str(args.results),
    }
    print(json.dumps(report) if args.json else render(report))
    return 0


if __name__ == "__main__":
    from nasmlcn.reproduce.engines.common import exit_with

    exit_with(main())
