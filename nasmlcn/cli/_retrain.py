"""``nasmlcn retrain``: train a study's Pareto front (or best trials) again, fully,
and test them (NASCaps' second stage)."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from nasmlcn._setting import MAX_SEED
from nasmlcn.cli._command_options import option, takes
from nasmlcn.cli._console import err, out
from nasmlcn.cli._options import (
    INFERENCE_BATCH,
    JSON,
    QUIET,
    RUN_IMAGE_SIZE,
    RUN_ON,
    STORAGE,
    STUDY,
    local_file,
)
from nasmlcn.study import TIE_MARGIN

if TYPE_CHECKING:
    from nasmlcn.search import RetrainOptions, RetrainReport
    from nasmlcn.study import RetrainedModel

RENAMED = {"--device": "--run-on"}
"""Old spellings still read (:mod:`nasmlcn.cli._renamed`)."""


@dataclass(frozen=True, kw_only=True)
class RetrainCommandOptions:
    """What ``nasmlcn retrain`` was given: one field per option, in ``--help``'s order."""

    study: str | None = option(STUDY)
    storage: str | None = option(STORAGE)
    pareto: bool = option(
        typer.Option(
            False,
            "--pareto",
            help="Retrain the Pareto front (on a single-objective study: its best trial).",
        )
    )
    top: int | None = option(
        typer.Option(
            None,
            "--top",
            min=1,
            help="Retrain the K feasible completed trials with the best first objective "
            "(accuracy).",
        )
    )
    epochs: int | None = option(
        typer.Option(None, "--epochs", min=1, help="Training epochs [default: the search's].")
    )
    train_limit: int | None = option(
        typer.Option(
            None,
            "--train-limit",
            min=1,
            help="Use N training images [default: the whole training split].",
        )
    )
    test_limit: int | None = option(
        typer.Option(None, "--test-limit", min=1, help="Use N test images [default: all].")
    )
    dataset: str | None = option(
        typer.Option(
            None,
            "--dataset",
            help="Train and test on this dataset instead of the search's: a built-in name or "
            "the path of your own images [default: the search's, found by its path or by its "
            "content in the cache].",
        )
    )
    image_size: str | None = option(RUN_IMAGE_SIZE)
    data_dir: Path | None = option(  # noqa: RUF009
        typer.Option(
            None,
            "--data-dir",
            parser=local_file,
            help="Dataset directory [default: the search's, else the default].",
        )
    )
    download: bool = option(
        typer.Option(True, "--download/--no-download", help="Download missing data.")
    )
    seed: int | None = option(
        typer.Option(
            None,
            "--seed",
            min=0,
            max=MAX_SEED,
            help="Seed of the split, initialisation and batch order [default: the trial's: "
            "the study's split, whose validation images then stay unseen, and the trial's "
            "training seed]; run folders become trial-NNNN-seed-S.",
        )
    )
    seeds: str | None = option(
        typer.Option(
            None,
            "--seeds",
            help="Train every selected model once with each of these seeds, the same for "
            "every model (paired): a count N (the seeds 1 to N) or a list (11,12,13). The "
            "table gives each model's mean test accuracy with its 95 % t interval and which "
            "models are tied with the best (see --tie-margin); with --refit each seed's "
            "refit is its figure; run folders trial-NNNN-seed-S.",
        )
    )
    tie_margin: float = option(
        typer.Option(
            TIE_MARGIN,
            "--tie-margin",
            help="With --seeds: a model is tied with the best when the 95 % interval of its "
            "paired difference to the best lies within +-this accuracy; an interval that "
            "holds 0 but reaches past it is undecided (more seeds needed).",
        )
    )
    run_on: str = option(RUN_ON)
    inference_batch: int = option(INFERENCE_BATCH)
    out_dir: Path | None = option(  # noqa: RUF009
        typer.Option(
            None,
            "--out",
            parser=local_file,
            help="Run folders (checkpoint.pt, arch.json, result.json), one per trial "
            "[default: runs/retrain-<study>-<time>].",
        )
    )
    resume: bool = option(
        typer.Option(
            False, "--resume", help="Continue the checkpoints already in --out's run folders."
        )
    )
    refit: bool = option(
        typer.Option(
            False,
            "--refit",
            help="Then train each model anew on the training and validation images for the "
            "epochs its run selected on validation, and report that refit's test accuracy "
            "(twice the training time; run folders trial-NNNN-refit).",
        )
    )
    allow_proxy: bool = option(
        typer.Option(
            False,
            "--allow-proxy",
            help="Retrain a study searched with the proxy evaluator (its accuracies are an "
            "analytic stand-in, not measured; refused without this).",
        )
    )
    as_json: bool = option(JSON)
    quiet: bool = option(QUIET)

    def retrain_options(self) -> RetrainOptions:
        """The library's options of the retraining (``--out`` defaults to
        ``runs/retrain-<study>-<time>``)."""
        from nasmlcn.search import RetrainOptions, parse_seeds

        out_dir = self.out_dir
        if self.resume and (out_dir is None or not out_dir.is_dir()):  # nothing to continue
            from nasmlcn.errors import CheckpointError

            shown = f"no folder {str(out_dir)!r}" if out_dir else "no --out"
            raise CheckpointError(
                f"--resume continues the run folders in --out, and there is {shown}; give "
                "the --out of the retrain to continue, or drop --resume to start one"
            )
        if out_dir is None:
            out_dir = Path("runs") / time.strftime(f"retrain-{self.study or 'study'}-%Y%m%d-%H%M%S")
        return RetrainOptions(
            pareto=self.pareto,
            top=self.top,
            epochs=self.epochs,
            train_limit=self.train_limit,
            test_limit=self.test_limit,
            dataset=self.dataset,
            data_dir=str(self.data_dir) if self.data_dir else None,
            device=self.run_on,
            out_dir=str(out_dir),
            resume=self.resume,
            inference_batch_size=self.inference_batch,
            download=self.download,
            seed=self.seed,
            allow_proxy=self.allow_proxy,
            refit=self.refit,
            image_size=self.image_size,
            seeds=parse_seeds(self.seeds) if self.seeds is not None else (),
            tie_margin=self.tie_margin,
        )


@takes(RetrainCommandOptions)
def retrain(options: RetrainCommandOptions) -> None:
    """Train the selected trials of a study again and test them (NASCaps' second
    stage): test accuracy, parameters and training and inference throughput, stored
    on the study (nasmlcn best, correlate, export and the dashboard show them)."""
    from nasmlcn._storage_url import resolve_storage
    from nasmlcn.cli._retrain_progress import RetrainProgress
    from nasmlcn.search import retrain_study

    url = resolve_storage(options.storage)
    retraining = options.retrain_options()
    with RetrainProgress(err, quiet=options.quiet) as progress:
        report = retrain_study(options.study, url, retraining, observer=progress)
    if options.as_json:
        print(json.dumps(report.to_dict()))
        return
    _print_report(report)


def _print_report(report: RetrainReport) -> None:
    """The models' table (over seeds: a row per model with its mean and standing),
    what the test figure is, the notes and caveats, where the weights are."""
    if report.standings:
        from nasmlcn.cli._trials_table import print_standings

        print_standings(report.standings, report.tie_margin, report.models)
    else:
        _print_table(report)
    _print_lines(report)


def _print_table(report: RetrainReport) -> None:
    from rich.table import Table

    from nasmlcn.hardware import crowded_record

    batch = report.models[0].inference_batch_size if report.models else 0
    # measured on this machine, never on the search's target devices: say where
    devices = {m.device for m in report.models}
    on = f"measured on {devices.pop()}" if len(devices) == 1 else "measured"
    table = Table(
        title=f"retrained trials ({report.selection}) of {report.study} on {report.dataset}"
        + ("" if on == "measured" else f", img/s {on}")
    )
    heads = (
        "#", "lanes", "search val acc", "test acc",
        *(("val. run test acc",) if report.refit else ()), "params",
        f"img/s: train, inference (batch {batch})",
        *(("device",) if on == "measured" else ()),
    )  # fmt: skip
    rows = []
    for m in report.models:
        search = "-" if m.search_accuracy is None else f"{m.search_accuracy:.4f}"
        rows.append(
            (
                str(m.number),
                m.lanes,
                search + (f" ({m.search_epochs} ep)" if m.search_epochs else ""),
                f"{m.test_accuracy:.4f} ({m.tested})",
                *((_validation_run(m),) if report.refit else ()),
                f"{m.params:,}",
                f"{m.train_images_per_second:.0f}, {m.inference_images_per_second:.0f}"
                + ("*" if crowded_record(m.machine_load) is not None else ""),
                *((m.device,) if on == "measured" else ()),
            )
        )
    for i, head in enumerate(heads):
        # at 80 columns the lanes fold; a number or a word never breaks
        words = [w for row in rows for w in row[i].split()] if head != "lanes" else []
        table.add_column(
            head,
            overflow="fold",
            justify="left" if head == "lanes" else "right",
            min_width=max(map(len, words), default=None),
        )
    for row in rows:
        table.add_row(*row)
    out.print(table)


def _print_lines(report: RetrainReport) -> None:
    out.print(_protocol_line(report), highlight=False)
    for note in report.notes:
        out.print(note, highlight=False)
    for caveat in report.caveats:  # --json's notes hold these lines too
        out.print(caveat, style="yellow", highlight=False, markup=False)
    out.print(
        f"weights: {report.out_dir}/{report.run_folders}/checkpoint.pt (load: nasmlcn.training."
        f"load_model); stored on study {report.study}: see 'nasmlcn best', 'nasmlcn "
        "correlate' and 'nasmlcn export'",
        markup=False,
        soft_wrap=True,
    )
    for line in report.stored:  # what each sits beside: nothing is replaced in silence
        out.print(line, highlight=False, markup=False)


def _validation_run(m: RetrainedModel) -> str:
    """``0.8950 (ep 9/10)``: a refit's validation run at its selected epoch."""
    return f"{m.validation_run_test_accuracy or 0.0:.4f} (ep {m.selected_epoch}/{m.epochs})"


def _protocol_line(report: RetrainReport) -> str:
    """What the test accuracy is, under the table."""
    if report.refit:
        return (
            "test acc: a refit on training + validation images for the epochs its run "
            "selected on validation, tested once; val. run: that run's test accuracy at "
            "the selected epoch"
        )
    return (
        "test acc: the weights of the epoch with the best validation accuracy "
        "(validation images held out), tested once"
    )
