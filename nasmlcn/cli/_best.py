"""``nasmlcn best`` and ``nasmlcn correlate``: read a study back."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from nasmlcn._storage_url import redact_url, resolve_storage
from nasmlcn.cli._console import out
from nasmlcn.cli._options import STORAGE

if TYPE_CHECKING:
    pass

STUDY = typer.Option(None, "--study", help="Study name [default: the only study in the storage].")


def best(
    study: str | None = STUDY,
    storage: str | None = STORAGE,
    top: int = typer.Option(5, "--top", min=1, help="Best trials to list (single objective)."),
    export_arch: Path | None = typer.Option(
        None, "--export-arch", help="Write the best architecture (highest first objective) as JSON."
    ),
    export: Path | None = typer.Option(
        None,
        "--export",
        help="Write the best trial's (or --trial's) arch.json and trained weights "
        "(checkpoint.pt) into this folder.",
    ),
    trial_number: int | None = typer.Option(
        None, "--trial", min=0, help="The trial --export writes [default: the best]."
    ),
    artifacts: Path | None = typer.Option(
        None,
        "--artifacts",
        help="The search's artifact folder [default: artifacts/ beside a SQLite study "
        "file, else studies/artifacts].",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object on stdout."),
) -> None:
    """The best trials of a study (single objective) or its Pareto front."""
    from nasmlcn.errors import SearchError
    from nasmlcn.search import best_trials, proposals, summarize
    from nasmlcn.specs import arch_from_dict, save_arch
    from nasmlcn.study import (
        load_existing_study,
        metric_names,
        retrained_by_trial,
        retrained_models,
        study_info,
    )

    storage = resolve_storage(storage)
    loaded = load_existing_study(study, storage)
    names = metric_names(loaded)
    trials = best_trials(loaded, top=top)
    retrained = retrained_by_trial(study_info(loaded))
    proposed = proposals(loaded)  # a model's repeats are shown with it, not as rows
    rows = [
        summarize(t, names, retrained.get(t.number), proposed.get(t.number, 1)).to_dict()
        for t in trials
    ]
    if export_arch is not None:
        from nasmlcn.study import TrialRecord

        best_arch = TrialRecord.of(trials[0]).arch if trials else {}
        if not best_arch:
            raise SearchError(
                f"study {loaded.study_name!r} has no completed feasible trial to export"
            )
        save_arch(arch_from_dict(best_arch), export_arch)
    exported = None
    if export is not None:
        from nasmlcn.search import export_best

        exported = export_best(
            loaded,
            export,
            storage=storage,
            artifacts=str(artifacts) if artifacts else None,
            trial=trial_number,
        ).to_dict()
    config = study_info(loaded).get("config") or {}
    if as_json:
        print(
            json.dumps(
                {
                    "study": loaded.study_name,
                    "storage": redact_url(storage),
                    "metric_names": names,
                    "directions": [d.name.lower() for d in loaded.directions],
                    "n_trials": len(loaded.trials),
                    "evaluator": config.get("evaluator"),
                    "accuracy_is_proxy": config.get("evaluator") == "proxy",
                    "best": rows,
                    "exported_arch": str(export_arch) if export_arch else None,
                    "exported": exported,
                    "retrained": [m.to_dict() for m in retrained_models(study_info(loaded))],
                }
            )
        )
        return
    if rows:  # no empty table before the line that says why
        _print_best(
            loaded.study_name, names, rows, len(loaded.directions) > 1, config.get("devices")
        )
    if config.get("evaluator") == "proxy":
        out.print(PROXY_NOTE, highlight=False)
    if not rows:
        from optuna.trial import TrialState

        completed = len(loaded.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)))
        out.print(why_none_feasible(completed, config.get("latency_budget")), highlight=False)
    others = sorted(set(retrained) - {r["number"] for r in rows})
    if others:
        from nasmlcn.cli._trials_table import retrained_text

        out.print(
            "also retrained (not listed above): "
            + ", ".join(f"#{n} test acc {retrained_text(retrained[n])}" for n in others)
        )
    if export_arch is not None:
        out.print(f"wrote {export_arch} (train it: nasmlcn train --arch {export_arch})")
    if exported is not None:
        out.print(
            f"wrote trial {exported['trial']}'s {exported['arch']} and {exported['weights']}; "
            f"test it: nasmlcn evaluate --run {shlex.quote(str(export))}; export it: nasmlcn "
            f"export-model --run {shlex.quote(str(export))}; train it on: {exported['command']}",
            markup=False,
            soft_wrap=True,
        )


PROXY_NOTE = (
    "[yellow]proxy evaluator: these accuracies are an analytic stand-in, nothing was "
    "trained[/] (search with --evaluator train for measured ones)"
)
"""What every table of a proxy study says under it."""


def why_none_feasible(completed: int, latency_budget: float | None) -> str:
    """Why a study lists no trial: none of its ``completed`` trials yet, or the latency
    budget (``--latency-budget``) excludes every one."""
    if not completed or latency_budget is None:
        return "no completed feasible trials yet"
    return (
        f"none of the {completed} completed trials meets --latency-budget {latency_budget:g} s "
        "(the predicted training step on the target devices); raise the budget, or give "
        "devices, a space or --flops that hold smaller models"
    )


def _print_best(
    study: str,
    names: list[str],
    rows: list[dict[str, Any]],
    multi: bool,
    devices: str | None = None,
) -> None:
    """The best trials in two tables: what was predicted for the target
    ``devices`` (the headings name them), then what was measured where each trial
    trained (its device named, with the spread over the timed passes), so that
    figures for different devices never share a table."""
    from nasmlcn.cli._trials_table import devices_line, retrained_notes, trials_table

    table = trials_table(
        f"{'Pareto front' if multi else 'best trials'} of {study}",
        rows,
        names,
        # NASCaps' second stage: the test accuracy of trials `nasmlcn retrain` trained again
        retrained=any(r.get("retrained") for r in rows),
        inference=True,
        width=out.width,
    )
    if not rows:
        out.print(table)
        return
    out.print(devices_line(devices), highlight=False)
    out.print(table)
    for line in retrained_notes(rows):
        out.print(line, highlight=False, markup=False)
    print_measured(rows, devices)


def print_measured(rows: list[dict[str, Any]], devices: str | None) -> bool:
    """The measured inference latencies, in a table of their own (the device in
    its heading when all share one, else in each cell); whether any was measured."""
    from rich import box
    from rich.table import Table

    from nasmlcn.cli._trials_table import LANE_MIX_MIN
    from nasmlcn.dashboard import common_device, format_measured, measured_heading

    measured = [r["measured"] for r in rows]
    if not any(m.get("measured_inference_latency_s") is not None for m in measured):
        out.print(
            "inference measured: nothing (the evaluator measured nothing, e.g. the proxy)",
            highlight=False,
        )
        return False
    device = common_device(measured)
    target = devices or "the target devices"
    table = Table(
        title=f"measured where trained, not on {target}",
        box=box.SIMPLE_HEAD,
        show_edge=False,
        pad_edge=False,
    )
    for column in ("#", "lane mix", measured_heading(device)):
        mix = column == "lane mix"
        table.add_column(
            column,
            justify="left" if mix else "right",
            no_wrap=mix,
            overflow="ellipsis" if mix else "fold",
            min_width=LANE_MIX_MIN if mix else None,
        )
    for row in rows:
        table.add_row(
            str(row["number"]),
            row["lane_mix"] or row["lanes"] or "",
            format_measured(row["measured"], device=device is None),
        )
    out.print(table)
    out.print(
        "measured: the median of the timed passes (one image at a time, no decoder) on "
        "the machine that trained the trial, with their interquartile range (IQR)",
        highlight=False,
    )
    return True


def _coefficient(value: float | None) -> str:
    return f"{value:.3f}" if value is not None else "-"


def correlate(
    study: str | None = STUDY,
    storage: str | None = STORAGE,
    threshold: float = typer.Option(
        0.9, "--threshold", help="Report the first epoch whose Spearman rho reaches this."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object on stdout."),
) -> None:
    """Early-epoch correlation (NASCaps Table 2): per epoch n, Pearson and Spearman
    between accuracy after n epochs and after the last, over completed trials; and,
    where 'nasmlcn retrain' trained trials again, with their test accuracy."""
    from nasmlcn.search import correlation_report, first_epoch_reaching
    from nasmlcn.study import load_existing_study

    loaded = load_existing_study(study, resolve_storage(storage))
    report = correlation_report(loaded)
    rows = list(report.correlations)
    # one epoch: the last is the first, and its rho of 1 tells nothing
    first = first_epoch_reaching(rows, threshold) if len(rows) > 1 else None
    pruned, saved = report.pruned_trials, report.seconds_saved
    retrained = {r.epoch: r.to_dict() for r in report.retrained}
    if as_json:
        print(
            json.dumps(
                {
                    "study": loaded.study_name,
                    "trials": rows[0].trials if rows else 0,
                    "epochs": [r.to_dict() for r in rows],
                    "threshold": threshold,
                    "first_epoch_reaching_threshold": first,
                    "pruned_trials": pruned,
                    "seconds_saved_by_pruning": saved,
                    # vs the retrained test accuracy (null: no trial retrained)
                    "retrained": {
                        "trials": report.retrained[0].trials,
                        "epochs": list(retrained.values()),
                    }
                    if report.retrained
                    else None,
                }
            )
        )
        return
    from rich.table import Table

    table = Table(
        title=f"accuracy after n epochs vs after the last, {rows[0].trials if rows else 0} "
        f"completed trials of {loaded.study_name}"
    )
    vs_test: tuple[str, ...] = ("Pearson r vs retrained test", "Spearman rho vs retrained test")
    vs_test = vs_test if report.retrained else ()
    for column in ("epoch", "Pearson r", "Spearman rho", *vs_test):
        table.add_column(column, justify="right")
    for r in rows:
        d = r.to_dict()
        test = retrained.get(r.epoch, {})
        table.add_row(
            str(r.epoch),
            *(_coefficient(d[k]) for k in ("pearson", "spearman")),
            *(_coefficient(test.get(k)) for k in ("pearson", "spearman") if vs_test),
        )
    out.print(table)
    if report.retrained:
        out.print(
            f"vs retrained test: accuracy after search epoch n vs the test accuracy of the "
            f"{report.retrained[0].trials} trial(s) 'nasmlcn retrain' trained again"
        )
    if len(rows) == 1:
        out.print(
            "one epoch per trial: its accuracy is the last, so no earlier epoch can be "
            "compared with it (train two or more to see how early the ranking settles)"
        )
    elif first is not None:
        out.print(f"first epoch with Spearman rho >= {threshold:g}: {first}")
    else:
        out.print(f"no epoch reaches Spearman rho >= {threshold:g} (need >= 3 completed trials)")
    if pruned:
        out.print(f"{pruned} pruned trial(s) saved about {saved:.0f} s of training")
