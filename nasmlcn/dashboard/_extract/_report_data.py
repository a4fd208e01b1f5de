"""Everything the report and the dashboard's figures show, extracted once."""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from nasmlcn.dashboard._extract._histories import (
    HypervolumeHistory,
    ObjectiveHistory,
    correlations,
    hypervolume_history,
    optimization_histories,
)
from nasmlcn.dashboard._extract._importances import Importances, param_importances
from nasmlcn.dashboard._extract._placement import Placement, placement
from nasmlcn.dashboard._extract._trials import StudyData, TrialRow, best_rows, extract_study

if TYPE_CHECKING:
    import optuna

    from nasmlcn.search import EpochCorrelation


class ReportData(NamedTuple):
    """Everything the report and the dashboard's figures show, extracted once."""

    study: StudyData
    best: tuple[TrialRow, ...]
    hypervolume: HypervolumeHistory | None
    histories: tuple[ObjectiveHistory, ...]
    importances: Importances
    placements: tuple[Placement, ...]
    correlations: tuple[EpochCorrelation, ...]


def extract_report(
    study: optuna.Study, *, importances: bool = True, placements: int = 4
) -> ReportData:
    """Extracts everything the report shows.

    Args:
        study: The study.
        importances: Compute parameter importances (the only slow part; the
            dashboard has its own importance view and skips them).
        placements: Show the placement of this many of the best trials.
    """
    data = extract_study(study)
    best = best_rows(data)
    shown = [p for p in (placement(r) for r in best[:placements]) if p is not None]
    return ReportData(
        data,
        tuple(best),
        hypervolume_history(data),
        tuple(optimization_histories(data)),
        param_importances(study, data) if importances else Importances((), (), (), "not computed"),
        tuple(shown),
        tuple(correlations(data)),
    )
