"""``nasmlcn dashboard`` and ``nasmlcn export`` (filled in by the dashboards issue)."""

from __future__ import annotations

import typer


def dashboard(
    storage: str = typer.Option("sqlite:///studies/nasmlcn.db", "--storage", help="Study storage URL."),
) -> None:
    """Start optuna-dashboard on the study storage."""
    from nasmlcn.errors import NasmlcnError

    raise NasmlcnError("nasmlcn dashboard is not implemented yet")


def export(
    storage: str = typer.Option("sqlite:///studies/nasmlcn.db", "--storage", help="Study storage URL."),
) -> None:
    """Export a study's report (HTML, PNG, SVG, CSV, JSON)."""
    from nasmlcn.errors import NasmlcnError

    raise NasmlcnError("nasmlcn export is not implemented yet")
