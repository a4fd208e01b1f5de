"""Writing nasmlcn's trial notes, study note and figures into a study, where
optuna-dashboard shows them (the search's :class:`~nasmlcn.dashboard.DashboardObserver`
calls :func:`write_trial_note` after every trial and :func:`write_study_figures` at
the end of every run; ``nasmlcn dashboard`` and ``retrain`` call :func:`refresh_study`)."""

from __future__ import annotations

import contextlib
import logging
import weakref
from typing import TYPE_CHECKING, Any

from nasmlcn.dashboard._extract import extract_report
from nasmlcn.dashboard._figures import FIGURES
from nasmlcn.study import (
    set_study_system_attrs,
    storage_of,
    study_id_of,
    trial_id_of,
    unbuffered,
)

if TYPE_CHECKING:
    import optuna

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
    system = unbuffered(storage).get_study_system_attrs(study_id)
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
