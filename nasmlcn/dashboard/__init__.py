"""optuna-dashboard integration, report figures and ``nasmlcn export``.

Three layers, so that the same data serve the live dashboard and the report:

- extraction (:mod:`._extract`, no plotly): a study -> NamedTuples of numbers;
- figures (:mod:`._figures`, plotly): a registry of named figures built from
  that data (``FIGURES``; ``dashboards/README.md`` says what each shows), by
  builders named ``plot_<figure>`` so that they are told apart from the
  extractors they read;
- outputs: the labels every report (the CLI's tables too) puts on a stored figure,
  predicted for the target devices or measured where the trial trained
  (:mod:`._labels`); trial and study notes (:mod:`._notes`), the offline HTML report
  (:mod:`._report`), PNG/SVG/CSV/JSON files (:mod:`._export`) and the live
  optuna-dashboard server (:mod:`._live`).

The search's :class:`DashboardObserver` calls :func:`write_trial_note` after every
trial and :func:`write_study_figures` at the end of every run (:mod:`._refresh`);
the runner logs and ignores their errors, so neither can fail a search. Importing this package imports
neither plotly nor optuna-dashboard.
"""

from __future__ import annotations

from nasmlcn.dashboard._export import (
    FORMATS,
    ExportError,
    ExportResult,
    check_export_folder,
    default_out_dir,
    export_study,
    parse_formats,
    write_images,
)
from nasmlcn.dashboard._extract import (
    HYPERVOLUME_MARGIN,
    DevicePlacement,
    HypervolumeHistory,
    Importances,
    LaneGroup,
    ObjectiveHistory,
    Placement,
    ReportData,
    StudyData,
    TrialRow,
    best_rows,
    correlations,
    epoch_curves,
    extract_report,
    extract_study,
    hypervolume_history,
    optimization_histories,
    param_importances,
    pareto_mask,
    placement,
    trial_records,
    trial_table,
)
from nasmlcn.dashboard._figures import (
    FIGURES,
    TEMPLATE,
    FigureSpec,
    accuracy_range,
    build_figures,
    figure_specs,
)
from nasmlcn.dashboard._labels import (
    PREDICTED_METRICS,
    common_device,
    format_column,
    format_measured,
    format_seconds,
    measured_heading,
    metric_cell,
    metric_heading,
    metric_label,
    metric_unit,
    predicted_on,
    shown_predictions,
)
from nasmlcn.dashboard._live import DashboardError, make_dashboard_server
from nasmlcn.dashboard._observer import DashboardObserver
from nasmlcn.dashboard._refresh import (
    GRAPH_ID_PREFIX,
    PLOT_DATA_PREFIX,
    refresh_study,
    write_study_figures,
    write_trial_note,
)

__all__ = [
    "FIGURES",
    "FORMATS",
    "GRAPH_ID_PREFIX",
    "HYPERVOLUME_MARGIN",
    "PLOT_DATA_PREFIX",
    "PREDICTED_METRICS",
    "TEMPLATE",
    "DashboardError",
    "DashboardObserver",
    "DevicePlacement",
    "ExportError",
    "ExportResult",
    "FigureSpec",
    "HypervolumeHistory",
    "Importances",
    "LaneGroup",
    "ObjectiveHistory",
    "Placement",
    "ReportData",
    "StudyData",
    "TrialRow",
    "accuracy_range",
    "best_rows",
    "build_figures",
    "check_export_folder",
    "common_device",
    "correlations",
    "default_out_dir",
    "epoch_curves",
    "export_study",
    "extract_report",
    "extract_study",
    "figure_specs",
    "format_column",
    "format_measured",
    "format_seconds",
    "hypervolume_history",
    "make_dashboard_server",
    "measured_heading",
    "metric_cell",
    "metric_heading",
    "metric_label",
    "metric_unit",
    "optimization_histories",
    "param_importances",
    "pareto_mask",
    "parse_formats",
    "placement",
    "predicted_on",
    "refresh_study",
    "shown_predictions",
    "trial_records",
    "trial_table",
    "write_images",
    "write_study_figures",
    "write_trial_note",
]
