"""optuna-dashboard integration, report figures and ``nasmlcn export``.

Three layers, so that the same data serve the live dashboard and the report:

- extraction (:mod:`._extract`, no plotly): a study -> NamedTuples of numbers;
- figures (:mod:`._figures`, plotly): a registry of named figures built from
  that data (``FIGURES``; ``dashboards/README.md`` says what each shows);
- outputs: trial and study notes (:mod:`._notes`), the offline HTML report
  (:mod:`._report`), PNG/SVG/CSV/JSON files (:mod:`._export`) and the live
  optuna-dashboard server (:mod:`._live`).

The search runner calls :func:`write_trial_note` after every trial and
:func:`write_study_figures` at the end of every run; the runner logs and ignores
their errors, so neither can fail a search. Importing this package imports
neither plotly nor optuna-dashboard.
"""

from __future__ import annotations

import contextlib
import logging
import weakref
from typing import TYPE_CHECKING, Any

from nasmlcn.dashboard._export import FORMATS, ExportError, ExportResult, export_study
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
from nasmlcn.dashboard._figures import FIGURES, FigureSpec, build_figures, figure_specs
from nasmlcn.dashboard._live import DashboardError, make_dashboard_server
from nasmlcn.dashboard._observer import DashboardObserver
from nasmlcn.study import storage_of, study_id_of, trial_id_of

if TYPE_CHECKING:
    import optuna

__all__ = [
    "FIGURES",
    "FORMATS",
    "HYPERVOLUME_MARGIN",
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
    "best_rows",
    "build_figures",
    "correlations",
    "epoch_curves",
    "export_study",
    "extract_report",
    "extract_study",
    "figure_specs",
    "hypervolume_history",
    "make_dashboard_server",
    "optimization_histories",
    "param_importances",
    "pareto_mask",
    "placement",
    "refresh_study",
    "trial_records",
    "trial_table",
    "write_study_figures",
    "write_trial_note",
]

logger = logging.getLogger(__name__)

PLOT_DATA_PREFIX = "dashboard:plot_data:"
"""optuna-dashboard's system attribute prefix of saved figures."""
GRAPH_ID_PREFIX = "nasmlcn-"
"""Ids of the figures nasmlcn saves in a study (``nasmlcn-pareto_front``...); saving
again under the same id replaces a figure."""

# Metric names per study object: ``study.metric_names`` reads every system
# attribute of the study, which grows with its notes; a note must stay cheap.
_METRIC_NAMES: weakref.WeakKeyDictionary[Any, list[str]] = weakref.WeakKeyDictionary()


def _metric_names(study: optuna.Study) -> list[str]:
    from nasmlcn.study import metric_names

    try:
        return _METRIC_NAMES[study]
    except (KeyError, TypeError):
        names = metric_names(study)
        with contextlib.suppress(TypeError):  # not weak-referenceable: no caching
            _METRIC_NAMES[study] = names
        return names


def write_trial_note(study: optuna.Study, trial_number: int) -> None:
    """Attaches a note (architecture, placement, per-epoch accuracy) to a trial.

    Costs a cached trial lookup and one small transaction (about 1-2 ms on SQLite).
    """
    from nasmlcn.dashboard._notes import trial_note, write_note

    storage = storage_of(study)
    study_id = study_id_of(study)
    trial_id = storage.get_trial_id_from_study_id_trial_number(study_id, trial_number)
    trial = storage.get_trial(trial_id)
    write_note(storage, study_id, trial_id, trial_note(trial, _metric_names(study)))


def write_study_figures(study: optuna.Study) -> None:
    """Saves the study's custom plotly figures and its note for optuna-dashboard,
    and writes the note of every trial that lacks one."""
    refresh_study(study, notes="missing")


def refresh_study(study: optuna.Study, *, notes: str = "missing") -> list[str]:
    """Writes nasmlcn's figures, study note and trial notes into ``study``.

    Figures are stored as optuna-dashboard's ``save_plotly_graph_object`` stores
    them (``dashboard:plot_data:<id>:<i>`` chunks), under fixed ids so that they
    replace the previous run's; everything is written in one transaction where
    the database allows it (``save_plotly_graph_object`` commits every 2 KB
    chunk on its own: seconds for a 500-trial study).

    Args:
        study: A study (written by nasmlcn or not).
        notes: ``"missing"``: write trial notes only where there is none;
            ``"all"``: rewrite every trial's note; ``"none"``: leave them.

    Returns:
        The names of the figures saved.
    """
    from nasmlcn.dashboard._figures import dashboard_figures
    from nasmlcn.dashboard._notes import (
        is_nasmlcn_note,
        note_items,
        read_note,
        set_study_system_attrs,
        split_chunks,
        study_note,
        trial_note,
    )

    data = extract_report(study, importances=False)
    figures = dashboard_figures(data)
    storage = storage_of(study)
    study_id = study_id_of(study)
    # Every system attribute, notes and figures included (the search's storage
    # hides them from samplers; its backend does not).
    system = getattr(storage, "_backend", storage).get_study_system_attrs(study_id)
    items: list[tuple[str, Any]] = []
    for name, figure in figures.items():
        prefix = f"{PLOT_DATA_PREFIX}{GRAPH_ID_PREFIX}{name}:"
        old = sum(1 for k in system if k.startswith(prefix))
        items += split_chunks(prefix, figure.to_json(), old)
    version, body, chunks = read_note(system, None)
    if not body or is_nasmlcn_note(body):  # never replace a user's note
        new = study_note(study, [FIGURES.get(n).title for n in figures])
        if new != body:
            items += note_items(None, new, version + 1, chunks)
    if notes != "none":
        names = _metric_names(study)
        for trial in study.get_trials(deepcopy=False):
            version, body, chunks = read_note(system, trial_id_of(trial))
            if notes == "missing" and version:
                continue
            items += note_items(trial_id_of(trial), trial_note(trial, names), version + 1, chunks)
    set_study_system_attrs(storage, study_id, items)
    logger.info("saved %d figures in study %s", len(figures), study.study_name)
    return list(figures)
