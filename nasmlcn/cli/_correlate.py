"""``nasmlcn correlate``: how early a study's accuracy ranking settles (NASCaps
Table 2)."""

from __future__ import annotations

import json
from typing import Any

import typer

from nasmlcn._setting import Range
from nasmlcn._storage_url import resolve_storage
from nasmlcn.cli._console import out
from nasmlcn.cli._options import JSON, STORAGE, STUDY
from nasmlcn.errors import SearchError

RHO = Range(-1.0, 1.0)
"""The values a Spearman rho (``--threshold``) can take."""


def correlate(
    study: str | None = STUDY,
    storage: str | None = STORAGE,
    threshold: float = typer.Option(
        0.9, "--threshold", help="Report the first epoch whose Spearman rho reaches this (-1 to 1)."
    ),
    as_json: bool = JSON,
) -> None:
    """Early-epoch correlation (NASCaps Table 2): per epoch n, Pearson and Spearman
    between accuracy after n epochs and after the last, over completed trials; and,
    where 'nasmlcn retrain' trained trials again, with their test accuracy."""
    from nasmlcn.search import correlation_report, first_epoch_reaching
    from nasmlcn.study import load_existing_study

    if not RHO.holds(threshold):
        raise SearchError(RHO.refusal("threshold", threshold))
    loaded = load_existing_study(study, resolve_storage(storage))
    report = correlation_report(loaded)
    rows = list(report.correlations)
    # the last epoch's rho is 1 by definition: only an earlier one tells something
    first = first_epoch_reaching(rows[:-1], threshold) if len(rows) > 1 else None
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
    out.print(_verdict(rows, first, threshold))
    if pruned:
        out.print(f"{pruned} pruned trial(s) saved about {saved:.0f} s of training")


def _verdict(rows: list[Any], first: int | None, threshold: float) -> str:
    """Which epoch before the last first ranks the trials as the last does."""
    if len(rows) == 1:
        return (
            "one epoch per trial: its accuracy is the last, so no earlier epoch can be "
            "compared with it (train two or more to see how early the ranking settles)"
        )
    if first is not None:
        return f"first epoch with Spearman rho >= {threshold:g}: {first}"
    trials = rows[0].trials if rows else 0
    need = " (need >= 3 completed trials)" if trials < 3 else ""
    return (
        f"no epoch before the last ({rows[-1].epoch if rows else '-'}, whose rho is 1 by "
        f"definition) reaches Spearman rho >= {threshold:g}{need}"
    )


def _coefficient(value: float | None) -> str:
    return f"{value:.3f}" if value is not None else "-"
