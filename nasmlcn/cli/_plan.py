"""``nasmlcn plan``: place a model's lanes on target devices."""

from __future__ import annotations

import typer


def plan(
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object on stdout."),
) -> None:
    """Place lanes on devices and predict per-device time and memory."""
