"""optuna-dashboard integration and report figures (filled in by the dashboards issue).

The search runner calls :func:`write_trial_note` after every trial and
:func:`write_study_figures` at the end of every run; neither may fail a search.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import optuna


def write_trial_note(study: optuna.Study, trial_number: int) -> None:
    """Attaches a note (architecture, placement, per-epoch accuracy) to a trial."""


def write_study_figures(study: optuna.Study) -> None:
    """Saves the study's custom plotly figures for optuna-dashboard."""
