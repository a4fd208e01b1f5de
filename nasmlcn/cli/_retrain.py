"""``nasmlcn retrain``: train a study's Pareto front (or best trials) again, fully,
and test them (NASCaps' second stage)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from nasmlcn.cli._best import STUDY
from nasmlcn.cli._console import err, out
from nasmlcn.cli._evaluate import DEVICE, INFERENCE_BATCH
from nasmlcn.cli._options import STORAGE

if TYPE_CHECKING:
    from nasmlcn.search import RetrainReport


def retrain(
    study: str | None = STUDY,
    storage: str | None = STORAGE,
    pareto: bool = typer.Option(
        False,
        "--pareto",
        help="Retrain the Pareto front (on a single-objective study: its best trial).",
    ),
    top: int | None = typer.Option(
        None,
        "--top",
        min=1,
        help="Retrain the K feasible completed trials with the best first objective (accuracy).",
    ),
    epochs: int | None = typer.Option(
        None, "--epochs", min=1, help="Training epochs [default: the search's]."
    ),
    train_limit: int | None = typer.Option(
        None,
        "--train-limit",
        min=1,
        help="Use N training images [default: the whole training split].",
    ),
    test_limit: int | None = typer.Option(
        None, "--test-limit", min=1, help="Use N test images [default: all]."
    ),
    dataset: str | None = typer.Option(
        None,
        "--dataset",
        help="Train and test on this dataset instead of the search's (see 'nasmlcn data list').",
    ),
    data_dir: Path | None = typer.Option(
        None, "--data-dir", help="Dataset directory [default: the search's, else the default]."
    ),
    download: bool = typer.Option(True, "--download/--no-download", help="Download missing data."),
    seed: int | None = typer.Option(
        None,
        "--seed",
        min=0,
        help="Seed of the split, initialisation and batch order [default: the search's, "
        "whose validation images then stay unseen]; run folders become trial-NNNN-seed-S.",
    ),
    device: str = DEVICE,
    inference_batch: int = INFERENCE_BATCH,
    out_dir: Path | None = typer.Option(
        None,
        "--out",
        help="Run folders (checkpoint.pt, arch.json, result.json), one per trial "
        "[default: runs/retrain-<study>-<time>].",
    ),
    resume: bool = typer.Option(
        False, "--resume", help="Continue the checkpoints already in --out's run folders."
    ),
    allow_proxy: bool = typer.Option(
        False,
        "--allow-proxy",
        help="Retrain a study searched with the proxy evaluator (its accuracies are an "
        "analytic stand-in, not measured; refused without this).",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object on stdout."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress display."),
) -> None:
    """Train the selected trials of a study again and test them (NASCaps' second
    stage): test accuracy, parameters and training and inference throughput, stored
    on the study (nasmlcn best, correlate, export and the dashboard show them)."""
    from nasmlcn._storage_url import resolve_storage
    from nasmlcn.cli._retrain_progress import RetrainProgress
    from nasmlcn.search import RetrainOptions, retrain_study

    url = resolve_storage(storage)
    if out_dir is None:
        out_dir = Path("runs") / time.strftime(f"retrain-{study or 'study'}-%Y%m%d-%H%M%S")
    options = RetrainOptions(
        pareto=pareto,
        top=top,
        epochs=epochs,
        train_limit=train_limit,
        test_limit=test_limit,
        dataset=dataset,
        data_dir=str(data_dir) if data_dir else None,
        device=device,
        out_dir=str(out_dir),
        resume=resume,
        inference_batch_size=inference_batch,
        download=download,
        seed=seed,
        allow_proxy=allow_proxy,
    )
    with RetrainProgress(err, quiet=quiet) as progress:
        report = retrain_study(study, url, options, observer=progress)
    if as_json:
        print(json.dumps(report.to_dict()))
        return
    _print_report(report)


def _print_report(report: RetrainReport) -> None:
    from rich.table import Table

    table = Table(
        title=f"retrained trials ({report.selection}) of {report.study} on {report.dataset}"
    )
    batch = report.models[0].inference_batch_size if report.models else 0
    # measured on this machine, never on the search's target devices: say where
    devices = {m.device for m in report.models}
    on = f"measured on {devices.pop()}" if len(devices) == 1 else "measured"
    heads = (
        "#", "lanes", "search val acc", "epochs", "test acc", "params",
        f"train img/s ({on})", f"inference img/s (batch {batch}, {on})",
        *(("device",) if on == "measured" else ()),
    )  # fmt: skip
    for head in heads:
        table.add_column(head, overflow="fold", justify="left" if head == "lanes" else "right")
    for m in report.models:
        search = "-" if m.search_accuracy is None else f"{m.search_accuracy:.4f}"
        table.add_row(
            str(m.number),
            m.lanes,
            search + (f" ({m.search_epochs} ep)" if m.search_epochs else ""),
            str(m.epochs),
            f"{m.test_accuracy:.4f}",
            f"{m.params:,}",
            f"{m.train_images_per_second:.0f}",
            f"{m.inference_images_per_second:.0f}",
            *((m.device,) if on == "measured" else ()),
        )
    out.print(table)
    for note in report.notes:
        out.print(note, highlight=False)
    out.print(
        f"weights: {report.out_dir}/{report.run_folders}/checkpoint.pt (load: nasmlcn.training."
        f"load_model); stored on study {report.study}: see 'nasmlcn best', 'nasmlcn "
        "correlate' and 'nasmlcn export'",
        markup=False,
        soft_wrap=True,
    )
