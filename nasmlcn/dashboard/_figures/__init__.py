"""The named figures of the report and the dashboard (plotly).

Each figure is a :class:`FigureSpec` in the ``FIGURES`` registry: a name, a
title, a sentence saying what it shows (``dashboards/README.md`` and the report
print it), and a builder from :class:`~nasmlcn.dashboard.ReportData` to a plotly
figure, or None when the study has nothing to show (a single-objective study
has no Pareto front). Figures marked ``dashboard`` are also saved into the study
for optuna-dashboard, which has its own history and importance views.

The registry is :mod:`._registry` and the look shared by every figure
:mod:`._style`; the builders, named ``plot_<figure>`` (the extractors they read
keep plain names), are grouped by subject: the trade-off between the objectives
(:mod:`._front`), values over trials and epochs (:mod:`._curves`), and what the
best architectures are made of (:mod:`._architecture`). Each registers its
figures when imported; this package imports all three, so the registry is
complete whenever anything of it is imported (they import :mod:`._registry` and
:mod:`._style`, never this package, so there is no cycle).

Builders read only the extracted data; all plotly imports happen when a figure
is built.
"""

from __future__ import annotations

# importing the plot modules registers their figures
from nasmlcn.dashboard._figures import _architecture, _curves, _front
from nasmlcn.dashboard._figures._registry import (
    FIGURES,
    FigureSpec,
    build_figures,
    dashboard_figures,
    figure_specs,
)
from nasmlcn.dashboard._figures._style import DASHBOARD_HEIGHT, TEMPLATE, WIDTH, accuracy_range

__all__ = [
    "DASHBOARD_HEIGHT",
    "FIGURES",
    "TEMPLATE",
    "WIDTH",
    "FigureSpec",
    "accuracy_range",
    "build_figures",
    "dashboard_figures",
    "figure_specs",
]
