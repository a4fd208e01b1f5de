"""``nasmlcn evaluate``: test a trained run and measure its inference throughput."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer

from nasmlcn.cli._console import out, phase_status
from nasmlcn.cli._options import DATA_DIR, INFERENCE_BATCH, RUN, RUN_DATASET, RUN_ON

PASSES = typer.Option(10, "--passes", min=1, help="Timed inference passes (the median counts).")

RENAMED = {"--device": "--run-on"}
"""Old spellings still read (:mod:`nasmlcn.cli._renamed`)."""


def evaluate(
    run: Path = RUN,
    dataset: str | None = RUN_DATASET,
    data_dir: Path | None = DATA_DIR,
    download: bool = typer.Option(True, "--download/--no-download", help="Download missing data."),
    test_limit: int | None = typer.Option(
        None, "--test-limit", min=1, help="Use the first N test images."
    ),
    run_on: str = RUN_ON,
    inference_batch: int = INFERENCE_BATCH,
    passes: int = PASSES,
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object on stdout."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress display."),
) -> None:
    """Test accuracy and loss (margin + reconstruction, as in training) of a trained
    run, and its measured inference throughput (forward only, eval mode, no decoder)."""
    from nasmlcn.runs import InferenceSettings, evaluate_run, load_run

    loaded = load_run(run, dataset=dataset)
    settings = InferenceSettings(batch=inference_batch, passes=passes)
    with phase_status(quiet, loaded.arch.describe()) as tell:
        result = evaluate_run(
            loaded,
            data_dir=data_dir,
            download=download,
            test_limit=test_limit,
            device=run_on,
            inference=settings,
            on_phase=tell,
        ).to_dict()
    if as_json:
        print(json.dumps(result))
        return
    _print(result)


def _print(result: dict[str, Any]) -> None:
    from rich.table import Table

    table = Table(title=f"{result['lanes']} on {result['dataset']}", show_header=False)
    table.add_column("", style="bold")
    table.add_column("")
    table.add_row("run", result["run"])
    table.add_row("parameters", f"{result['params']:,}")
    table.add_row(
        "test accuracy", f"{result['test_accuracy']:.4f} ({result['test_images']:,} images)"
    )
    table.add_row("test loss", f"{result['test_loss']:.4f}")
    timing = result["inference"]
    load = timing["load_average"]
    table.add_row(
        "inference",
        f"{result['inference_images_per_second']:,.0f} images/s (batch {timing['batch_size']}, "
        f"median of {timing['passes']} passes, {timing['threads']} threads"
        + (f", load {load:.1f})" if load is not None else ")"),
    )
    table.add_row("device", result["device"])
    out.print(table)
