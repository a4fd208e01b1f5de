"""What a call of :func:`run_search` or :func:`run_workers` adds around the search.

- The study storage must be named: the library creates no file or folder the
  caller did not ask for (``nasmlcn search`` names ``sqlite:///studies/nasmlcn.db``
  when the user names none).
- Optuna's own log lines ("A new study created in RDB ...") stay quiet for the
  call; the caller's Optuna verbosity is restored after it.
- ``progress``: an optional callback told of every finished trial.
- ``SearchConfig.mlflow``: the experiment tracker (:mod:`nasmlcn.tracking`),
  attached as one more observer; the search itself knows nothing of it, and
  MLflow is imported only when a tracking URI is given.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

from nasmlcn.errors import SearchError
from nasmlcn.search._config import SearchConfig
from nasmlcn.search._observer import SearchObserver
from nasmlcn.search._outcome import SearchStart, TrialOutcome
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


def require_storage(config: SearchConfig) -> None:
    """Refuses a config that names no storage (before anything is written).

    Raises:
        SearchError: ``config.storage`` is empty.
    """
    if not config.storage.strip():
        raise SearchError(
            "SearchConfig.storage is not set: name the study's storage, e.g. "
            "storage='sqlite:///studies/nasmlcn.db' (what nasmlcn search uses by default)"
        )


def call_observers(config: SearchConfig, progress: ProgressCallback | None) -> list[SearchObserver]:
    """The observers a call adds: ``progress``'s, and the tracker ``config.mlflow``
    asks for.

    Raises:
        TrackingError: MLflow is not installed or cannot open the URI.
    """
    added: list[SearchObserver] = []
    if progress is not None:
        added.append(ProgressObserver(progress))
    if config.mlflow:
        from nasmlcn.tracking import MlflowObserver

        added.append(MlflowObserver(config.mlflow))
    return added


@contextmanager
def quiet_optuna() -> Iterator[None]:
    """Optuna logs warnings only, for the block (a library call prints nothing of
    its own); the caller's verbosity comes back after it."""
    import optuna

    before = optuna.logging.get_verbosity()
    optuna.logging.set_verbosity(max(before, optuna.logging.WARNING))
    try:
        yield
    finally:
        optuna.logging.set_verbosity(before)
