"""Extraction: what the figures, notes and exports show, as plain data.

Everything here reads a study once and returns NamedTuples of numbers and
strings; nothing imports plotly, so the figures (:mod:`.._figures`), the report,
the CSV/JSON export and optuna-dashboard's saved figures all share one tested
source of truth. numpy is used only for the Pareto front and the hypervolume.

One module per kind of data: the trials as rows, the Pareto front and the best
trials (:mod:`._trials`); the histories over trials and epochs (:mod:`._histories`);
the parameter importances (:mod:`._importances`); the lane placements
(:mod:`._placement`); the flat CSV/JSON rows (:mod:`._table`); and everything the
report shows, extracted at once (:mod:`._report_data`).
"""

from __future__ import annotations

from nasmlcn.dashboard._extract._histories import (
    HYPERVOLUME_MARGIN,
    HypervolumeHistory,
    ObjectiveHistory,
    correlations,
    epoch_curves,
    hypervolume_history,
    optimization_histories,
)
from nasmlcn.dashboard._extract._importances import Importances, param_importances
from nasmlcn.dashboard._extract._placement import (
    DevicePlacement,
    LaneGroup,
    Placement,
    group_lanes,
    lane_kind,
    placement,
)
from nasmlcn.dashboard._extract._report_data import ReportData, extract_report
from nasmlcn.dashboard._extract._table import trial_records, trial_table
from nasmlcn.dashboard._extract._trials import (
    MIB,
    StudyData,
    TrialRow,
    best_rows,
    extract_study,
)
from nasmlcn.study import objective_signs, pareto_mask  # the study's one convention

__all__ = [
    "HYPERVOLUME_MARGIN",
    "MIB",
    "DevicePlacement",
    "HypervolumeHistory",
    "Importances",
    "LaneGroup",
    "ObjectiveHistory",
    "Placement",
    "ReportData",
    "StudyData",
    "TrialRow",
    "best_rows",
    "correlations",
    "epoch_curves",
    "extract_report",
    "extract_study",
    "group_lanes",
    "hypervolume_history",
    "lane_kind",
    "objective_signs",
    "optimization_histories",
    "param_importances",
    "pareto_mask",
    "placement",
    "trial_records",
    "trial_table",
]
