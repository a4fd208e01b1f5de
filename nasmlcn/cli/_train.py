"""``nasmlcn train``: train one architecture and report test accuracy."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from nasmlcn._signals import EXIT_TERMINATED, Terminated, stops_raised
from nasmlcn.cli._command_options import takes
from nasmlcn.cli._console import err, out, tell_interrupted
from nasmlcn.cli._train_options import TrainOptions, title

if TYPE_CHECKING:
    from nasmlcn.training import TrainJob

RENAMED = {"--timeout": "--rank-timeout", "--device": "--run-on"}
"""Old spellings still read (:mod:`nasmlcn.cli._renamed`): ``search --timeout`` is
the search's budget and ``search --run-on`` where training runs."""


@takes(TrainOptions)  # --lanes, --arch, ...: one per TrainOptions field
def train(options: TrainOptions) -> None:
    """Train an MLCN (or the CapsNet baseline) and evaluate it on the test set.

    Lane-parallel on one machine: --devices 2xH100 (lanes on cuda:0/cuda:1) or
    --processes 2 (two CPU processes). On several nodes: torchrun --nnodes 2
    --nproc-per-node 4 --rdzv-backend c10d --rdzv-endpoint HOST:29400 -m nasmlcn
    train ... (every rank runs this command; rank 0 reports).
    """
    from nasmlcn.cli._progress import TrainProgress
    from nasmlcn.parallel import reports_here
    from nasmlcn.training import train as train_job

    job = options.job()
    where = options.parallel()  # its errors too before anything starts
    reporting = reports_here()
    try:
        with contextlib.ExitStack() as stack:
            stack.enter_context(stops_raised())  # a scheduler's stop, as Ctrl-C
            show = reporting and not options.quiet
            data = options.data
            if show and data.own is not None:  # what was read, resized, skipped
                err.print(
                    f"data: {data.description}", markup=False, highlight=False, soft_wrap=True
                )
            callbacks = [stack.enter_context(TrainProgress(err, title(job, data)))] if show else []
            report = train_job(job, callbacks=callbacks, **where)
    except KeyboardInterrupt as stop:  # exit 130 (SIGTERM: 143), what is kept on stderr
        if reporting:  # "stopped by SIGTERM" (Terminated's own words) or "interrupted"
            told = _interrupted(options, job, str(stop) or "interrupted")
            tell_interrupted(err, told, style="yellow", markup=False, soft_wrap=True)
        if isinstance(stop, Terminated):
            raise typer.Exit(EXIT_TERMINATED) from None
        raise
    if report is None or not reporting:
        return
    result = report.to_dict()
    if options.as_json:
        print(json.dumps(result))
        return
    _print_summary(result, options.train_limit)


def _interrupted(options: TrainOptions, job: TrainJob, why: str) -> str:
    """What an interrupted run kept in its folder, and how to continue it."""
    from nasmlcn.errors import NasmlcnError
    from nasmlcn.parallel import under_torchrun
    from nasmlcn.training import CHECKPOINT_NAME, load_checkpoint

    ranks = options.processes > 1 or under_torchrun()
    if not job.out_dir or not (Path(job.out_dir) / CHECKPOINT_NAME).is_file():
        where = f" in {job.out_dir}" if job.out_dir else ""
        if ranks:  # epochs may have ended: it said "before an epoch ended" after 43
            return (
                f"{why}: nothing was kept{where}; several processes write the checkpoint "
                "after the last epoch only"
            )
        return f"{why} before an epoch ended: nothing was kept{where}"
    out_dir = Path(job.out_dir)
    checkpoint = out_dir / CHECKPOINT_NAME
    try:
        kept = f"the checkpoint after epoch {load_checkpoint(checkpoint)['epoch']}"
    except NasmlcnError:  # unreadable now (it is written atomically): say what is there
        kept = "a checkpoint"
    if ranks:  # several processes cannot resume
        how = "run the command in one process with --resume"
    elif options.resume:
        how = "run the same command again"
    elif options.out_dir is None:  # the default folder is named by the time: name it
        how = f"run the same command with --out {out_dir} --resume"
    else:
        how = "run the same command with --resume"
    return f"{why}: {kept} is kept in {out_dir}; {how} to continue it"


def _test_line(result: dict[str, Any]) -> str:
    """The selected model's test accuracy, which epoch it is and why, the last epoch's."""
    epochs, selected = result["epochs"], result["selected_epoch"]
    line = (
        f"{result['test_accuracy']:.4f} ({result['test_images']:,} images), "
        f"epoch {selected} of {epochs}: best validation"
    )
    if selected != epochs:
        line += f"; last epoch {result['last_epoch_test_accuracy']:.4f}"
    return line


def _print_summary(result: dict[str, Any], train_limit: int | None = None) -> None:
    from rich.table import Table

    from nasmlcn.cli._evaluate import crowded_note

    table = Table(title=f"{result['lanes']} on {result['dataset']}", show_header=False)
    table.add_column("", style="bold")
    table.add_column("")
    table.add_row("parameters", f"{result['params']:,}")
    table.add_row(
        "val accuracy by epoch", ", ".join(f"{a:.4f}" for a in result["val_accuracy_per_epoch"])
    )
    table.add_row("test accuracy", _test_line(result))
    images = f"{result['train_images']:,}"
    if train_limit is not None and train_limit > result["train_images"]:
        images += f" (all there are: --train-limit {train_limit:,} asked for more)"
    table.add_row("training images", images)
    table.add_row("seconds / epoch", f"{result['seconds_per_epoch']:.1f}")
    table.add_row(
        "images / second",
        f"{result['images_per_second']:.0f}" + crowded_note(result.get("machine_load")),
    )
    table.add_row("device", result["device"])
    if "parallel" in result:
        p = result["parallel"]
        lanes = ""
        if p["assignment"]:
            owners = p["devices"] if p["launcher"] == "in-process" else None
            groups: dict[str, list[int]] = {}
            for lane, where in enumerate(p["assignment"]):
                key = owners[lane] if owners else f"rank {where}"
                groups.setdefault(key, []).append(lane)
            lanes = "; " + ", ".join(
                f"{k}: lanes {','.join(map(str, v))}" for k, v in groups.items()
            )
        table.add_row(
            "parallelism", f"{p['mode']}, {p['processes']} process(es), {p['launcher']}{lanes}"
        )
    table.add_row("output", str(result["out_dir"]))
    out.print(table)
