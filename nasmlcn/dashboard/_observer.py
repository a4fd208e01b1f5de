"""The dashboard as an observer of a search: the CLI attaches it to every
``nasmlcn search``; the library's ``run_search`` writes no notes unless asked."""

from __future__ import annotations

import functools
import importlib.util
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from nasmlcn.search import SearchObserver, SearchResult, TrialOutcome

if TYPE_CHECKING:
    import optuna

logger = logging.getLogger(__name__)


class DashboardObserver(SearchObserver):
    """Writes each finished trial's note and, at the end of a run, the study's
    figures, where optuna-dashboard shows them.

    Args:
        notes: Write each trial's note as it ends.
        figures: Write the figures (and any missing trial note) at the end. A
            ``--workers`` pool's workers write only their trials' notes
            (``figures=False``); the parent only the figures, once, after every
            worker has stopped (``notes=False``).
    """

    def __init__(self, *, notes: bool = True, figures: bool = True) -> None:
        self.notes = notes
        self.figures = figures
        self.study: optuna.Study | None = None

    def on_study(self, study: optuna.Study) -> None:
        self.study = study

    def for_workers(self) -> tuple[SearchObserver | None, Callable[[], SearchObserver] | None]:
        """With workers: each writes its trials' notes; the figures are written once,
        here, after every worker has stopped."""
        here = DashboardObserver(notes=False, figures=self.figures)
        return here, functools.partial(DashboardObserver, notes=self.notes, figures=False)

    def on_trial_end(self, outcome: TrialOutcome) -> None:
        from nasmlcn.dashboard._refresh import write_trial_note

        if self.study is not None and self.notes:
            write_trial_note(self.study, outcome.number)

    def on_end(self, result: SearchResult) -> None:
        from nasmlcn.dashboard._refresh import write_study_figures

        if self.study is None or not self.figures:
            return
        if importlib.util.find_spec("plotly") is None:
            # a dependency, but a hand-made environment may lack it: one line, no traceback
            logger.warning(
                "plotly is not installed: the study's dashboard figures were not written"
            )
            return
        write_study_figures(self.study)
