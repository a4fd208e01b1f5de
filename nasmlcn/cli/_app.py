"""The Typer application: global options and command registration."""

from __future__ import annotations

import typer

from nasmlcn._version import version
from nasmlcn.cli._console import setup_logging

app = typer.Typer(
    name="nasmlcn",
    help="Hardware-aware neural architecture search for Multi-Lane Capsule Networks.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"nasmlcn {version()}")
        raise typer.Exit()


@app.callback()
def _global(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
    debug: bool = typer.Option(False, "--debug", help="Show tracebacks on errors."),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Log progress details."),
) -> None:
    """nasmlcn: search, train and place Multi-Lane Capsule Networks."""
    setup_logging(verbose or debug)


def _register() -> None:
    from nasmlcn.cli import (
        _best,
        _calibrate,
        _dashboard,
        _data,
        _devices,
        _estimate,
        _evaluate,
        _export_model,
        _models,
        _plan,
        _remove_lanes,
        _reproduce,
        _retrain,
        _search,
        _train,
    )

    app.command("search")(_search.search)
    app.command("best")(_best.best)
    app.command("correlate")(_best.correlate)
    app.command("retrain")(_retrain.retrain)
    app.command("export")(_dashboard.export)
    app.command("dashboard")(_dashboard.dashboard)
    app.command("train")(_train.train)
    app.command("models")(_models.models)
    app.command("devices")(_devices.devices)
    app.command("plan")(_plan.plan)
    app.command("estimate")(_estimate.estimate)
    app.command("calibrate")(_calibrate.calibrate)
    app.command("evaluate")(_evaluate.evaluate)
    app.command("export-model")(_export_model.export_model)
    app.command("prune")(_remove_lanes.prune)
    app.command("reproduce")(_reproduce.reproduce)
    app.add_typer(_data.data_app, name="data")


_register()
