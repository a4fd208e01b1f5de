"""``nasmlcn remove-lanes``: lane pruning of a trained MLCN (thesis sec. 4.3.3,
Fig. 4.6). It was ``nasmlcn prune``, a name that clashed with ``search --prune``
(stopping trials); ``prune`` still runs it, hidden, with a warning."""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import typer

from nasmlcn._text import counted
from nasmlcn.cli._command_options import option, takes
from nasmlcn.cli._console import err, out
from nasmlcn.cli._evaluate import crowded_note
from nasmlcn.cli._options import (
    DATA_DIR,
    INFERENCE_BATCH,
    JSON,
    QUIET,
    RUN,
    RUN_DATASET,
    RUN_IMAGE_SIZE,
    RUN_ON,
    local_file,
    replace_option,
)
from nasmlcn.cli._progress import MeasureProgress

if TYPE_CHECKING:
    from nasmlcn.runs import LoadedRun

RENAMED = {"--device": "--run-on"}
"""Old spellings still read (:mod:`nasmlcn.cli._renamed`)."""


class PruneProgress(MeasureProgress):
    """A bar per phase: the lanes' validation outputs, then timing each step."""

    LABELS: ClassVar[dict[str, str]] = {
        "lane outputs": "lane outputs on validation",
        "timing": "timing pruned models",
    }


@dataclass(frozen=True, kw_only=True)
class RemoveLanesOptions:
    """What ``nasmlcn remove-lanes`` was given: one field per option, in ``--help``'s
    order."""

    run: Path = option(RUN)  # noqa: RUF009
    dataset: str | None = option(RUN_DATASET)
    image_size: str | None = option(RUN_IMAGE_SIZE)
    data_dir: Path | None = option(DATA_DIR)  # noqa: RUF009
    download: bool = option(
        typer.Option(True, "--download/--no-download", help="Download missing data.")
    )
    val_limit: int | None = option(
        typer.Option(None, "--val-limit", min=1, help="Use the first N validation images.")
    )
    keep: int | None = option(
        typer.Option(
            None,
            "--keep",
            min=1,
            help="Also write the model of the K most important lanes (checkpoint.pt, "
            "arch.json) into --out, for nasmlcn evaluate and nasmlcn train --resume.",
        )
    )
    out_dir: Path | None = option(  # noqa: RUF009
        typer.Option(
            None,
            "--out",
            parser=local_file,
            help="Folder for prune.json, lane_pruning.html/.png and the --keep model "
            "[default: RUN/pruned].",
        )
    )
    replace: bool = option(replace_option("an earlier report and figure in --out"))
    figure: bool = option(
        typer.Option(True, "--png/--no-png", help="Also write the figure as PNG (needs Chromium).")
    )
    run_on: str = option(RUN_ON)
    inference_batch: int = option(INFERENCE_BATCH)
    passes: int = option(
        typer.Option(
            5, "--passes", min=1, help="Timed inference passes per step (the median counts)."
        )
    )
    as_json: bool = option(JSON)
    quiet: bool = option(QUIET)


@takes(RemoveLanesOptions)
def remove_lanes(options: RemoveLanesOptions) -> None:
    """Rank a trained MLCN's lanes by the validation accuracy lost when each alone is
    removed, then remove them least important first, one at a time, reporting the
    accuracy and the measured inference throughput (forward only) after each step."""
    from nasmlcn.runs import check_removable, check_removal_out_dir, load_run

    loaded = load_run(
        options.run,
        dataset=options.dataset,
        image_size=options.image_size,
        data_dir=options.data_dir,
    )
    check_removable(loaded, options.keep)
    folder = options.out_dir if options.out_dir is not None else loaded.path / "pruned"
    # before the work, not after it
    check_removal_out_dir(folder, keep=options.keep is not None, replace=options.replace)
    if not options.quiet:
        err.print(f"pruning {loaded.arch.describe()} ({loaded.path}) on {loaded.dataset}")
    result = _remove(loaded, folder, options)
    if options.as_json:
        print(json.dumps(result))
        return
    _print(result)


def _remove(loaded: LoadedRun, folder: Path, options: RemoveLanesOptions) -> dict[str, Any]:
    """Ranks and removes the lanes and writes prune.json, the figure and the --keep
    model into ``folder``; the report, with the files written."""
    from nasmlcn._io import write_text_atomic
    from nasmlcn.runs import (
        LANE_REMOVAL_REPORT,
        InferenceSettings,
        save_without_lanes,
        write_lane_removal_figure,
    )
    from nasmlcn.runs import remove_lanes as rank_and_remove

    with PruneProgress(err, quiet=options.quiet) as progress:
        report = rank_and_remove(
            loaded,
            data_dir=options.data_dir,
            download=options.download,
            val_limit=options.val_limit,
            device=options.run_on,
            inference=InferenceSettings(batch=options.inference_batch, passes=options.passes),
            progress=progress,
        )
    result = report.to_dict()
    files = write_lane_removal_figure({loaded.arch.describe(): report}, folder, png=options.figure)
    if options.keep is not None:
        files.append(save_without_lanes(report, options.keep, folder))
        result["kept"] = {"lanes": options.keep, "out": str(folder)}
    report_file = folder / LANE_REMOVAL_REPORT
    write_text_atomic(report_file, json.dumps(result, indent=2) + "\n")
    result["files"] = [str(p) for p in [report_file, *files]]
    return result


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
        f"on {inference['device']}, {counted(inference['threads'], 'thread')}"
        + (f", load {load:.1f}" if load is not None else "")
        + crowded_note(inference.get("machine_load")),
        markup=False,
    )
    if "kept" in result:
        kept = result["kept"]
        data = ""  # train's default is fashion-mnist: any other dataset is named
        if result["dataset"] != "fashion-mnist":
            data = f" --dataset {shlex.quote(str(result['dataset']))}"
        if result.get("image_size"):
            data += f" --image-size {result['image_size']}"
        out.print(
            f"wrote the {kept['lanes']}-lane model to {kept['out']} (nasmlcn evaluate --run "
            f"{kept['out']}; fine-tune: nasmlcn train --arch {kept['out']}/arch.json --out "
            f"{kept['out']} --resume{data})",
            markup=False,
            soft_wrap=True,
        )
    out.print("files: " + ", ".join(result["files"]), markup=False, soft_wrap=True)
