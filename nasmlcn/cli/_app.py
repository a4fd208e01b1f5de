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
    """The commands, in the order ``nasmlcn --help`` lists them; each lives in the
    module of its name. Old spellings (:mod:`nasmlcn.cli._renamed`) are hidden."""
    from nasmlcn.cli import (
        _best,
        _calibrate,
        _correlate,
        _dashboard,
        _data,
        _devices,
        _estimate,
        _evaluate,
        _export,
        _export_model,
        _models,
        _plan,
        _remove_lanes,
        _reproduce,
        _retrain,
        _search,
        _studies,
        _train,
    )
    from nasmlcn.cli._renamed import renamed_command

    app.command("search")(_search.search)
    app.command("best")(_best.best)
    app.command("correlate")(_correlate.correlate)
    app.command("retrain", cls=renamed_command(_retrain.RENAMED))(_retrain.retrain)
    app.command("export")(_export.export)
    app.command("dashboard")(_dashboard.dashboard)
    app.command("train", cls=renamed_command(_train.RENAMED))(_train.train)
    app.command("models")(_models.models)
    app.command("devices")(_devices.devices)
    app.command("plan")(_plan.plan)
    app.command("estimate")(_estimate.estimate)
    app.command("calibrate", cls=renamed_command(_calibrate.RENAMED))(_calibrate.calibrate)
    app.command("evaluate", cls=renamed_command(_evaluate.RENAMED))(_evaluate.evaluate)
    app.command("export-model")(_export_model.export_model)
    remove_lanes = _remove_lanes.remove_lanes
    app.command("remove-lanes", cls=renamed_command(_remove_lanes.RENAMED))(remove_lanes)
    app.command("reproduce")(_reproduce.reproduce)
    app.add_typer(_data.data_app, name="data")
    app.add_typer(_studies.studies_app, name="studies")
    # the old name of remove-lanes (it clashed with search --prune): one more release
    old = renamed_command(_remove_lanes.RENAMED, old_name="prune", new_name="remove-lanes")
    app.command("prune", cls=old, hidden=True)(remove_lanes)


_register()
