"""``nasmlcn remove-lanes``: lane pruning of a trained MLCN (thesis sec. 4.3.3,
Fig. 4.6). It was ``nasmlcn prune``, a name that clashed with ``search --prune``
(stopping trials); ``prune`` still runs it, hidden, with a warning."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, ClassVar

import typer

from nasmlcn.cli._console import err, out
from nasmlcn.cli._options import DATA_DIR, INFERENCE_BATCH, RUN, RUN_DATASET, RUN_ON
from nasmlcn.cli._progress import MeasureProgress

RENAMED = {"--device": "--run-on"}
"""Old spellings still read (:mod:`nasmlcn.cli._renamed`)."""


class PruneProgress(MeasureProgress):
    """A bar per phase: the lanes' validation outputs, then timing each step."""

    LABELS: ClassVar[dict[str, str]] = {
        "lane outputs": "lane outputs on validation",
        "timing": "timing pruned models",
    }


def remove_lanes(
    run: Path = RUN,
    dataset: str | None = RUN_DATASET,
    data_dir: Path | None = DATA_DIR,
    download: bool = typer.Option(True, "--download/--no-download", help="Download missing data."),
    val_limit: int | None = typer.Option(
        None, "--val-limit", min=1, help="Use the first N validation images."
    ),
    keep: int | None = typer.Option(
        None,
        "--keep",
        min=1,
        help="Also write the model of the K most important lanes (checkpoint.pt, arch.json) "
        "into --out, for nasmlcn evaluate and nasmlcn train --resume.",
    ),
    out_dir: Path | None = typer.Option(
        None,
        "--out",
        help="Folder for prune.json, lane_pruning.html/.png and the --keep model "
        "[default: RUN/pruned].",
    ),
    figure: bool = typer.Option(
        True, "--png/--no-png", help="Also write the figure as PNG (needs Chromium)."
    ),
    run_on: str = RUN_ON,
    inference_batch: int = INFERENCE_BATCH,
    passes: int = typer.Option(
        5, "--passes", min=1, help="Timed inference passes per step (the median counts)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object on stdout."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress display."),
) -> None:
    """Rank a trained MLCN's lanes by the validation accuracy lost when each alone is
    removed, then remove them least important first, one at a time, reporting the
    accuracy and the measured inference throughput (forward only) after each step."""
    from nasmlcn._io import write_text_atomic
    from nasmlcn.runs import (
        InferenceSettings,
        check_removable,
        check_removal_out_dir,
        load_run,
        save_without_lanes,
        write_lane_removal_figure,
    )
    from nasmlcn.runs import remove_lanes as rank_and_remove

    loaded = load_run(run, dataset=dataset)
    check_removable(loaded, keep)
    folder = out_dir if out_dir is not None else loaded.path / "pruned"
    check_removal_out_dir(folder, keep=keep is not None)  # before the work, not after it
    if not quiet:
        err.print(f"pruning {loaded.arch.describe()} ({loaded.path}) on {loaded.dataset}")
    with PruneProgress(err, quiet=quiet) as progress:
        report = rank_and_remove(
            loaded,
            data_dir=data_dir,
            download=download,
            val_limit=val_limit,
            device=run_on,
            inference=InferenceSettings(batch=inference_batch, passes=passes),
            progress=progress,
        )
    result = report.to_dict()
    files = write_lane_removal_figure({loaded.arch.describe(): report}, folder, png=figure)
    if keep is not None:
        files.append(save_without_lanes(report, keep, folder))
        result["kept"] = {"lanes": keep, "out": str(folder)}
    report_file = folder / "prune.json"
    write_text_atomic(report_file, json.dumps(result, indent=2) + "\n")
    result["files"] = [str(p) for p in [report_file, *files]]
    if as_json:
        print(json.dumps(result))
        return
    _print(result)


def _print(result: dict[str, Any]) -> None:
    from rich.table import Table

    inference = result["inference"]
    table = Table(
        title=f"lane pruning of {result['lanes']} on {result['dataset']} "
        f"({result['images']:,} validation images)"
    )
    for column in ("removed", "lane", "accuracy", "images/s", "speedup", "params"):
        table.add_column(column, justify="right")
    for i, step in enumerate(result["steps"]):
        table.add_row(
            str(i),
            "-" if step["removed"] is None else str(step["removed"]),
            f"{step['accuracy']:.4f}",
            f"{step['inference_images_per_second']:,.0f}",
            f"{step['speedup']:.2f}x",
            f"{step['params']:,}",
        )
    out.print(table)
    load = inference["load_average"]
    out.print(
        f"inference: batch {inference['batch_size']}, median of {inference['passes']} passes "
        f"on {inference['device']}, {inference['threads']} threads"
        + (f", load {load:.1f}" if load is not None else ""),
        markup=False,
    )
    if "kept" in result:
        kept = result["kept"]
        out.print(
            f"wrote the {kept['lanes']}-lane model to {kept['out']} (nasmlcn evaluate --run "
            f"{kept['out']}; fine-tune: nasmlcn train --arch {kept['out']}/arch.json --out "
            f"{kept['out']} --resume)",
            markup=False,
            soft_wrap=True,
        )
    out.print("files: " + ", ".join(result["files"]), markup=False, soft_wrap=True)
