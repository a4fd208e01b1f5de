"""The registry of named figures: :class:`FigureSpec`, ``FIGURES``, the decorator
that registers a builder, and building the figures by name.

The plot modules (:mod:`._front`, :mod:`._curves`, :mod:`._architecture`) register
their figures when imported; the package (:mod:`nasmlcn.dashboard._figures`)
imports them, and any import of this module imports the package first, so the
registry is complete whenever it can be read.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from nasmlcn.dashboard._extract import ReportData
from nasmlcn.registry import Registry

if TYPE_CHECKING:
    import plotly.graph_objects as go

Builder = Callable[[ReportData, bool], "go.Figure | None"]
"""``build(data, compact)``: a figure, or None when the study has nothing to show."""


@dataclass(frozen=True)
class FigureSpec:
    """One named figure.

    Attributes:
        name: Registry name, file stem of its PNG/SVG and HTML anchor.
        title: Title shown above the figure.
        description: What the figure shows, in one or two sentences.
        build: Builds the figure (``compact``: for a 450-pixel-high, half-width cell
            of optuna-dashboard), or returns None when there is nothing to show.
        dashboard: Also saved into the study for optuna-dashboard.
        order: Position in the report.
    """

    name: str
    title: str
    description: str
    build: Builder
    dashboard: bool
    order: int


FIGURES: Registry[FigureSpec] = Registry("figure")


def register_figure(
    name: str, title: str, description: str, *, order: int, dashboard: bool = False
) -> Callable[[Builder], Builder]:
    """A decorator that registers its builder as the figure ``name`` (the name is
    stored in studies and names the exported files: never rename one)."""

    def register(build: Builder) -> Builder:
        FIGURES.register(name, FigureSpec(name, title, description, build, dashboard, order))
        return build

    return register


def figure_specs() -> list[FigureSpec]:
    """Every registered figure, in report order."""
    return sorted((FIGURES.get(n) for n in FIGURES.names()), key=lambda s: s.order)


def build_figures(
    data: ReportData, names: Sequence[str] | None = None, *, compact: bool = False
) -> dict[str, go.Figure]:
    """Builds the figures called ``names`` (default: all), in report order; figures
    with nothing to show are left out."""
    specs = figure_specs() if names is None else [FIGURES.get(n) for n in names]
    out = {}
    for spec in specs:
        fig = spec.build(data, compact)
        if fig is not None:
            out[spec.name] = fig
    return out


def dashboard_figures(data: ReportData) -> dict[str, go.Figure]:
    """The figures nasmlcn saves into a study for optuna-dashboard (compact)."""
    return build_figures(data, [s.name for s in figure_specs() if s.dashboard], compact=True)
