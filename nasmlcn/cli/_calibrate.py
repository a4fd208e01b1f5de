"""``nasmlcn calibrate``: measure this machine's devices and fit the calibrated cost model."""

from __future__ import annotations

import typer


def calibrate(
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object on stdout."),
) -> None:
    """Measure local device speed and lane step times; fit the calibrated cost model."""
    from nasmlcn.errors import NasmlcnError

    raise NasmlcnError("nasmlcn calibrate is not implemented yet")
