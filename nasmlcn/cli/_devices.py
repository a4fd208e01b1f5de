"""``nasmlcn devices``: the device catalog and the devices present here."""

from __future__ import annotations

import typer


def devices(
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object on stdout."),
) -> None:
    """The device catalog and the devices detected on this machine."""
