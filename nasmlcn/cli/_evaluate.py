"""``nasmlcn evaluate``: test a trained run and measure its inference throughput."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import typer

from nasmlcn._text import counted
from nasmlcn.cli._command_options import option, takes
from nasmlcn.cli._console import out, phase_status
from nasmlcn.cli._options import (
    DATA_DIR,
    INFERENCE_BATCH,
    JSON,
    QUIET,
    RUN,
    RUN_DATASET,
    RUN_IMAGE_SIZE,
    RUN_ON,
)

PASSES = typer.Option(10, "--passes", min=1, help="Timed inference passes (the median counts).")

RENAMED = {"--device": "--run-on"}
"""Old spellings still read (:mod:`nasmlcn.cli._renamed`)."""


@dataclass(frozen=True, kw_only=True)
class EvaluateOptions:
    """What ``nasmlcn evaluate`` was given: one field per option, in ``--help``'s order."""

    run: Path = option(RUN)  # noqa: RUF009
    dataset: str | None = option(RUN_DATASET)
    image_size: str | None = option(RUN_IMAGE_SIZE)
    data_dir: Path | None = option(DATA_DIR)  # noqa: RUF009
    download: bool = option(
        typer.Option(True, "--download/--no-download", help="Download missing data.")
    )
    test_limit: int | None = option(
        typer.Option(None, "--test-limit", min=1, help="Use the first N test images.")
    )
    run_on: str = option(RUN_ON)
    inference_batch: int = option(INFERENCE_BATCH)
    passes: int = option(PASSES)
    as_json: bool = option(JSON)
    quiet: bool = option(QUIET)


@takes(EvaluateOptions)
def evaluate(options: EvaluateOptions) -> None:
    """Test accuracy and loss (margin + reconstruction, as in training) of a trained
    run, and its measured inference throughput (forward only, eval mode, no decoder)."""
    from nasmlcn.runs import InferenceSettings, evaluate_run, load_run

    loaded = load_run(
        options.run,
        dataset=options.dataset,
        image_size=options.image_size,
        data_dir=options.data_dir,
    )
    settings = InferenceSettings(batch=options.inference_batch, passes=options.passes)
    with phase_status(options.quiet, loaded.arch.describe()) as tell:
        result = evaluate_run(
            loaded,
            data_dir=options.data_dir,
            download=options.download,
            test_limit=options.test_limit,
            device=options.run_on,
            inference=settings,
            on_phase=tell,
        ).to_dict()
    if options.as_json:
        print(json.dumps(result))
        return
    _print(result)


def crowded_note(record: Any) -> str:
    """``; unreliable: other processes held 1.0 of 2 cores`` for a figure measured on
    a crowded machine (:func:`nasmlcn.hardware.crowded_record`), else nothing."""
    from nasmlcn.hardware import crowded_record

    held = crowded_record(record)
    if held is None:
        return ""
    return f"; unreliable: other processes held {held:.1f} of {record['cores']} cores"


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
        f"median of {counted(timing['passes'], 'pass', 'passes')}, {counted(timing['threads'], 'thread')}"
        + (f", load {load:.1f})" if load is not None else ")")
        + crowded_note(timing.get("machine_load")),
    )
    table.add_row("device", result["device"])
    out.print(table)
    _print_classes(result["per_class"])


def _print_classes(per_class: list[dict[str, Any]]) -> None:
    """Accuracy per class, lowest first: a user's classes are rarely balanced."""
    from rich.table import Table

    if not per_class:
        return
    table = Table("class", "test images", "accuracy", title="test accuracy per class, lowest first")
    tested = [c for c in per_class if c["images"]]
    for c in sorted(tested, key=lambda c: (c["accuracy"], c["class"])):
        table.add_row(str(c["class"]), f"{c['images']:,}", f"{c['accuracy']:.4f}")
    for c in per_class:
        if not c["images"]:
            table.add_row(str(c["class"]), "0", "-")
    out.print(table)
