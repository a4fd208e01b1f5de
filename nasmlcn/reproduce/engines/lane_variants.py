"""What closes the gap to the thesis, by measurement: MLCN variants trained side by side.

Each variant is a lane string (or ``capsnet``, Sabour et al.'s CapsNet, the thesis's
baseline) and optional training or model overrides, written as one argument:
``'2*mlcn2:4x1'``, ``'2*mlcn2:4x1 augment=shift'``, ``'capsnet batch_size=300'``,
``'2*mlcn2:4x1 batch_size=50 lr=2e-3'``, ``'2*mlcn2:4x1 routing=classwise'`` (the
keys: see ``nasmlcn/reproduce/engines/_training_runs.py``), and ``epochs=N``, a variant's own epochs
instead of ``--epochs`` (a faster model given the training time of a slower one). Every variant trains on the same
Fashion-MNIST training split with the same seeds, and is judged on the validation
split held out of the training set (10 %, chosen by the seed): the test set is never
loaded into a run nor evaluated, so picking the best variant here leaves it unseen.

Printed, one row per variant (mean and sample sd over ``--seeds`` seeds 0..N-1):
parameters, validation accuracy per epoch, final and best validation accuracy (and
the best epoch), seconds per training epoch and training images per second. Then
every variant against the first (the baseline), seed by seed: the mean of the
per-seed differences in final and best validation accuracy, in points, with its
paired 95 % Student's t interval and verdict (ahead, behind, or a tie when the
interval holds 0), how many seeds they rest on, and the mean per-seed ratio of
training images per second (variant / baseline). ``--json`` holds the per-seed
figures as well. ``--finished-only`` trains nothing and reports what the results
file holds (a look at a study still running in another process).

Resumable: every finished run (variant x settings x seed) is stored in ``--results``
(default ``~/.cache/nasmlcn/lane-variants/results.json``) at once, and a rerun with
the same settings trains only what is missing. A run that is killed resumes from its
checkpoint (written after every epoch under ``<results folder>/runs/``, deleted when
the run is stored). Run it in the background, and again after it is killed::

    python -m nasmlcn.reproduce.engines.lane_variants                 # the 4 default variants, 5 epochs
    python -m nasmlcn.reproduce.engines.lane_variants --variant '2*mlcn2:4x1' \\
        --variant '2*mlcn2:4x1 augment=shift' --variant '2*mlcn2:4x1 batch_size=50' \\
        --epochs 10 --seeds 2 --threads 2
    python -m nasmlcn.reproduce.engines.lane_variants --quick --json  # 1 epoch on 300/100 images
"""

from __future__ import annotations

import argparse
import json
import shlex
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from nasmlcn.data import DATASETS
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
    paired_by_seed,
    parse_overrides,
    run_facts,
    run_key,
    say,
    settle_args,
    short_hash,
)
from nasmlcn.specs import ArchSpec, CapsNetSpec, MLCNSpec
from nasmlcn.stats import paired_interval
from nasmlcn.training import TrainConfig, arch_for_dataset

DEFAULT_VARIANTS = (
    "2*mlcn2:4x1",
    "2*mlcn2:4x1 augment=shift",
    "2*mlcn2:4x1 batch_size=50",
    "2*mlcn2:4x1 routing=classwise",
)
DEFAULT_RESULTS = Path.home() / ".cache" / "nasmlcn" / "lane-variants" / "results.json"
QUICK = {"epochs": 1, "train_limit": 300, "val_limit": 100}
ACCURACIES = ("final_val_accuracy", "best_val_accuracy")
CAPSNET = "capsnet"
"""The variant whose model is CapsNet (a lane string names an MLCN)."""


@dataclass(frozen=True)
class Variant:
    """A variant as written, and the model and training configuration it means."""

    text: str  # canonical: the spec's lane string, then the overrides sorted by key
    arch: ArchSpec
    config: TrainConfig
    overrides: dict[str, Any]
    params: int
    epochs: int | None = None  # its own epochs (``epochs=N``); None: --epochs

    @classmethod
    def parse(cls, text: str, dataset: str) -> Variant:
        origin = f"--variant {text!r}"
        tokens = shlex.split(text)
        if not tokens:
            raise SystemExit(f"{origin}: give the lanes first, e.g. '2*mlcn2:4x1 augment=shift'")
        epochs = _own_epochs(tokens, origin)
        overrides = parse_overrides([t for t in tokens[1:] if not t.startswith("epochs=")], origin)
        try:
            base: ArchSpec = (
                CapsNetSpec() if tokens[0] == CAPSNET else MLCNSpec.from_lanes(tokens[0])
            )
        except NasmlcnError as err:
            raise SystemExit(f"{origin}: {err}") from None
        arch = arch_for_dataset(base, DATASETS.get(dataset), strict=False)
        arch, config, _ = apply_overrides(arch, TrainConfig(), overrides, origin)
        name = CAPSNET if isinstance(arch, CapsNetSpec) else arch.describe()
        own = f"epochs={epochs}" if epochs is not None else ""
        canonical = " ".join(filter(None, [name, own, format_overrides(overrides)]))
        return cls(canonical, arch, config, overrides, model_params(arch), epochs)


def _own_epochs(tokens: list[str], origin: str) -> int | None:
    """A variant's ``epochs=N`` (equal training time for a faster model), or None."""
    given = [t.partition("=")[2] for t in tokens[1:] if t.startswith("epochs=")]
    if not given:
        return None
    if len(given) > 1 or not given[0].isdigit() or int(given[0]) < 1:
        raise SystemExit(f"{origin}: epochs= takes one integer >= 1, got {', '.join(given)}")
    return int(given[0])


@dataclass(frozen=True)
class Settings:
    """What every run shares (with the seed and the variant, the results file's key)."""

    dataset: str
    epochs: int
    train_limit: int | None
    val_limit: int | None
    val_fraction: float

    def key(self, variant: Variant, seed: int) -> str:
        data = {
            # the model and every setting as used, not the variant's text: a default
            # spelled out (``lr_policy=one-cycle``) finds the runs made without it
            "lanes": variant.arch.describe(),
            "params": variant.params,
            "settings": effective_settings(variant.arch, variant.config),
            "seed": seed,
        }
        if variant.epochs is not None:  # only then: the keys of other runs stay as they were
            data["variant_epochs"] = variant.epochs
        return run_key({**data, **vars(self)})


def train_variant(
    variant: Variant,
    seed: int,
    settings: Settings,
    *,
    data_dir: str | None,
    device: str,
    checkpoint: Path,
    log: EpochLog,
) -> dict[str, Any]:
    """Trains one variant with one seed; validation only, the test split stays out."""
    from nasmlcn.data import DataSplits, Split, load_splits
    from nasmlcn.training import (
        InMemoryJob,
        RunOptions,
        check_training_memory,
        resolve_device,
        train,
    )

    epochs = variant.epochs or settings.epochs
    config = replace(variant.config, epochs=epochs, seed=seed, device=device)
    where = str(resolve_device(device))
    loaded = load_splits(
        settings.dataset,
        data_dir,
        val_fraction=settings.val_fraction,
        seed=seed,
        train_limit=settings.train_limit,
        val_limit=settings.val_limit,
    )
    # Selection happens on validation: the runs get an empty test split.
    empty = Split(loaded.val.images[:0], loaded.val.labels[:0])
    splits = DataSplits(loaded.train, loaded.val, empty)
    check_training_memory(variant.arch, min(config.batch_size, len(splits.train)), where)
    options = RunOptions(checkpoint_path=checkpoint, resume=True, test=False)
    # seeds with config.seed, builds, trains; no test
    run = train(InMemoryJob(variant.arch, splits, config, options), [log])
    return {
        "variant": variant.text,
        "seed": seed,
        "lanes": variant.arch.describe(),
        "overrides": variant.overrides,
        "arch": variant.arch.to_dict(),
        "train_config": config.to_dict(),
        "params": run.params,
        "train_images": len(splits.train),
        "val_images": len(splits.val),
        **history_figures(run.history),
        **run_facts(where),
    }


def summarise(variant: Variant, runs: list[dict[str, Any]]) -> dict[str, Any]:
    """One variant's runs (one per seed) as means and sds."""
    figures: dict[str, Any] = {
        "variant": variant.text,
        "params": runs[0]["params"],
        "seeds": [r["seed"] for r in runs],
    }
    for name in ("final_val_accuracy", "best_val_accuracy", "seconds_per_epoch"):
        figures[name], figures[f"{name}_sd"] = mean_sd([r[name] for r in runs])
    figures["images_per_second"] = mean_sd([r["images_per_second"] for r in runs])[0]
    figures["best_epoch"] = [r["best_epoch"] for r in runs]
    curves = [r["val_accuracy_per_epoch"] for r in runs]
    figures["val_accuracy_per_epoch"] = [mean_sd(list(e))[0] for e in zip(*curves, strict=True)]
    figures["devices"] = sorted({f"{r['device']} ({r['threads']} threads)" for r in runs})
    figures["per_seed"] = [
        {key: r[key] for key in ("seed", *ACCURACIES, "images_per_second")} for r in runs
    ]
    return figures


def compare(baseline: dict[str, Any], variant: dict[str, Any]) -> dict[str, Any]:
    """``variant``'s summary against ``baseline``'s, over the seeds both have: the mean
    and sd of the per-seed accuracy differences (points) and images/s ratios."""
    pairs = paired_by_seed(baseline["per_seed"], variant["per_seed"])
    assert pairs, f"{variant['variant']!r} shares no seed with {baseline['variant']!r}"
    figures: dict[str, Any] = {
        "variant": variant["variant"],
        "baseline": baseline["variant"],
        "seeds": [b["seed"] for b, _ in pairs],
    }
    for name in ACCURACIES:
        diffs = [100 * (v[name] - b[name]) for b, v in pairs]
        figures[f"{name}_diff_points"], figures[f"{name}_diff_points_sd"] = mean_sd(diffs)
        # Student's t over the seeds, paired (a seed is one split, init and batch order)
        figures[f"{name}_diff_interval"] = (
            paired_interval(
                [100 * v[name] for _, v in pairs], [100 * b[name] for b, _ in pairs]
            ).to_dict()
            if len(pairs) > 1
            else None
        )
    ratios = [v["images_per_second"] / b["images_per_second"] for b, v in pairs]
    figures["images_per_second_ratio"], figures["images_per_second_ratio_sd"] = mean_sd(ratios)
    return figures


def _difference(comparison: dict[str, Any], name: str) -> str:
    """``+0.52 [-0.10, +1.14] tie``, or ``+0.52 (1 seed)`` where no interval exists."""
    mean = comparison[f"{name}_diff_points"]
    interval = comparison.get(f"{name}_diff_interval")
    if not interval:
        return f"{mean:+.2f} ({len(comparison['seeds'])} seed)"
    return f"{mean:+.2f} [{interval['low']:+.2f}, {interval['high']:+.2f}] {interval['verdict']}"


def render(report: dict[str, Any]) -> str:
    s = report["settings"]
    limits = f"{s['train_limit'] or 'all'} training / {s['val_limit'] or 'all'} validation images"
    width = max([34, *(len(v["variant"]) for v in report["variants"])])
    lines = [
        f"{s['dataset']}, {s['epochs']} epochs, {limits} (validation only: no test accuracy)",
        "",
        f"{'variant':<{width}} {'params':>10} {'final val':>16} {'best val':>16} {'best ep':>8} "
        f"{'s/epoch':>8} {'images/s':>9}  val accuracy per epoch (mean)",
    ]

    def pm(mean: float, sd: float) -> str:
        return f"{mean:.4f} ± {sd:.4f}"

    for v in report["variants"]:
        curve = " ".join(f"{a:.4f}" for a in v["val_accuracy_per_epoch"])
        lines.append(
            f"{v['variant']:<{width}} {v['params']:>10,} "
            f"{pm(v['final_val_accuracy'], v['final_val_accuracy_sd']):>16} "
            f"{pm(v['best_val_accuracy'], v['best_val_accuracy_sd']):>16} "
            f"{','.join(map(str, v['best_epoch'])):>8} {v['seconds_per_epoch']:>8.1f} "
            f"{v['images_per_second']:>9.0f}  {curve}"
        )
    if report["comparisons"]:
        lines += [
            "",
            f"against {report['comparisons'][0]['baseline']}, paired by seed: the mean of the "
            "per-seed differences in validation accuracy, in points, with its 95 % t interval "
            "and verdict (a tie when the interval holds 0), and the mean ± sd of the speed "
            "ratios:",
            f"{'variant':<{width}} {'Δ final val [95 % CI]':>30} {'Δ best val [95 % CI]':>30} "
            f"{'seeds':>6} {'images/s ratio':>15}",
        ]
    for c in report["comparisons"]:
        final, best = (_difference(c, name) for name in ACCURACIES)
        ratio = f"{c['images_per_second_ratio']:.2f} ± {c['images_per_second_ratio_sd']:.2f}"
        lines.append(
            f"{c['variant']:<{width}} {final:>30} {best:>30} {len(c['seeds']):>6} {ratio:>15}"
        )
    seeds = report["variants"][0]["seeds"] if report["variants"] else []
    devices = sorted({d for v in report["variants"] for d in v["devices"]})
    lines += [
        "",
        f"seeds {seeds} (± is the sd over seeds); trained on {', '.join(devices)}",
        f"runs: {report['trained']} trained now, {report['from_results']} from {report['results']}",
    ]
    return "\n".join(lines)


def _parser() -> argparse.ArgumentParser:
    """The command line: variants, data, epochs, seeds, device and results file."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument(
        "--variant",
        action="append",
        dest="variants",
        metavar="'LANES [KEY=VALUE ...]'",
        help=f"a variant (repeat; default: {'; '.join(DEFAULT_VARIANTS)})",
    )
    parser.add_argument("--dataset", default="fashion-mnist")
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--train-limit", type=int, default=None, help="N training images")
    parser.add_argument("--val-limit", type=int, default=None, help="N validation images")
    parser.add_argument("--val-fraction", type=float, default=0.1)
    parser.add_argument("--seeds", type=int, default=1, help="repeat with seeds 0..N-1")
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    parser.add_argument("--device", default="auto", help="auto, cpu, cuda or cuda:N")
    parser.add_argument("--results", type=Path, default=DEFAULT_RESULTS)
    parser.add_argument(
        "--finished-only",
        action="store_true",
        help="train nothing: report the runs the results file holds (others left out)",
    )
    parser.add_argument("--quick", action="store_true", help="1 epoch on 300/100 images")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    return parser


def _variant_runs(
    variant: Variant, args: argparse.Namespace, settings: Settings, results: ResultsFile
) -> tuple[list[dict[str, Any]], int, int]:
    """``variant``'s run per seed, stored or trained now (and stored), with how many were
    trained and how many came from the results file."""
    runs_dir = args.results.parent / "runs"
    trained = reused = 0
    runs = []
    for seed in range(args.seeds):
        label = f"{variant.text}, seed {seed}"
        key = settings.key(variant, seed)
        entry = results.finished(key)
        if entry is not None:
            say(f"[{label}] from the results file")
            reused += 1
        elif args.finished_only:
            say(f"[{label}] not in the results file: left out (--finished-only)")
            continue
        else:
            checkpoint = runs_dir / short_hash(key) / "checkpoint.pt"
            try:
                entry = train_variant(
                    variant,
                    seed,
                    settings,
                    data_dir=args.data_dir,
                    device=args.device,
                    checkpoint=checkpoint,
                    log=EpochLog(label, results, key),
                )
            except NasmlcnError as err:
                raise SystemExit(f"[{label}] {err}") from None
            results.record(key, entry)
            checkpoint.unlink(missing_ok=True)
            checkpoint.parent.rmdir()
            trained += 1
        runs.append(entry)
    return runs, trained, reused


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    settle_args(args, QUICK, ("epochs", "seeds", "threads", "train_limit", "val_limit"))

    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    variants = [Variant.parse(t, args.dataset) for t in args.variants or DEFAULT_VARIANTS]
    settings = Settings(
        args.dataset, args.epochs, args.train_limit, args.val_limit, args.val_fraction
    )
    results = ResultsFile(args.results, "lane-variants")
    trained = reused = 0
    summaries = []
    for variant in variants:
        runs, trained_now, reused_now = _variant_runs(variant, args, settings, results)
        trained += trained_now
        reused += reused_now
        if runs:
            summaries.append(summarise(variant, runs))
    report = {
        "settings": {**vars(settings), "seeds": args.seeds},
        "variants": summaries,
        "comparisons": [compare(summaries[0], s) for s in summaries[1:]],
        "trained": trained,
        "from_results": reused,
        "results": str(args.results),
    }
    if args.json:
        print(json.dumps(report))
    else:
        print(render(report))
    return 0


if __name__ == "__main__":
    from nasmlcn.reproduce.engines.common import exit_with

    exit_with(main())
