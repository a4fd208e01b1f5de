"""``run_search(progress=...)``: a callback after every trial, as an observer
(:class:`ProgressObserver`); what it receives (:class:`TrialProgress`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from nasmlcn.search._types.observer import SearchObserver
from nasmlcn.search._types.outcome import SearchStart, TrialOutcome
from nasmlcn.study import finished

if TYPE_CHECKING:
    import optuna


@dataclass(frozen=True)
class TrialProgress:
    """What a ``progress`` callback receives after every trial.

    Attributes:
        outcome: How the trial ended.
        done: The study's trials that count toward ``target`` (COMPLETE and
            PRUNED, by every worker), this one included, when the callback is
            called (in a ``run_workers`` pool the parent relays each trial after
            it ended, so other trials may have finished since: ``done`` never
            goes back, but may step by more than one).
        target: The trials the study should reach (``SearchConfig.trials``).
    """

    outcome: TrialOutcome
    done: int
    target: int


ProgressCallback = Callable[[TrialProgress], None]


class ProgressObserver(SearchObserver):
    """Calls ``progress`` after every trial (a ``--workers`` pool's parent relays
    every worker's trials)."""

    def __init__(self, progress: ProgressCallback) -> None:
        self.progress = progress
        self.study: optuna.Study | None = None
        self.target = 0

    def on_study(self, study: optuna.Study) -> None:
        self.study = study

    def on_start(self, start: SearchStart) -> None:
        self.target = start.target

    def on_trial_end(self, outcome: TrialOutcome) -> None:
        done = finished(self.study) if self.study is not None else 0
        self.progress(TrialProgress(outcome, done, self.target))
