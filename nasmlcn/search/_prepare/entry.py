"""What a call of :func:`run_search` or :func:`run_workers` adds around the search.

- The study storage must be named: the library creates no file or folder the
  caller did not ask for (``nasmlcn search`` names ``sqlite:///studies/nasmlcn.db``
  when the user names none).
- Optuna's own log lines ("A new study created in RDB ...") stay quiet for the
  call; the caller's Optuna verbosity is restored after it.
- A run is watched through the observers it is given (:class:`ProgressObserver`
  turns a callback into one).
- ``SearchConfig.mlflow`` asks for an experiment tracker: the caller makes it
  (``nasmlcn.tracking.MlflowObserver``, as ``nasmlcn search --mlflow`` does) and
  passes it among the observers; the search imports nothing of the tracking, and
  refuses a config whose tracker is missing (:func:`require_tracker`).
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

from nasmlcn._storage_url import redact_url
from nasmlcn.errors import SearchError, option
from nasmlcn.search._config.config import SearchConfig
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


def require_storage(config: SearchConfig) -> None:
    """Refuses a config that names no storage (before anything is written).

    Raises:
        SearchError: ``config.storage`` is empty, or an in-memory SQLite database (the
            study would be gone when the search ends, and each worker would keep its
            own).
    """
    if not config.storage.strip():
        raise SearchError(
            "SearchConfig.storage is not set: name the study's storage, e.g. "
            "storage='sqlite:///studies/nasmlcn.db' (what nasmlcn search uses by default)"
        )
    if _IN_MEMORY.match(config.storage.strip()):
        raise SearchError(
            f"{option('storage')} {config.storage!r} is an in-memory SQLite database: the "
            "study would be gone when the search ends (and each worker would keep its own); "
            "give a file, e.g. sqlite:///studies/nasmlcn.db"
        )


_IN_MEMORY = re.compile(r"sqlite(\+\w+)?://(/(:memory:)?)?(\?.*)?$")
"""An SQLite URL with no file (``sqlite://``, ``sqlite:///``, ``sqlite:///:memory:``)."""


def require_tracker(config: SearchConfig, observers: Sequence[SearchObserver]) -> None:
    """Refuses a config whose ``mlflow`` names a tracking URI that no observer logs
    to (before anything is written): the search makes no tracker of its own.

    Raises:
        SearchError: ``config.mlflow`` is set and no observer's ``tracking_uri`` is it.
    """
    if config.mlflow and not any(o.tracking_uri == config.mlflow for o in observers):
        raise SearchError(
            f"{option('mlflow')} {redact_url(config.mlflow)!r} asks for MLflow tracking, but "
            "no tracker watches this search: pass observers=[MlflowObserver(config.mlflow)] "
            "(nasmlcn.tracking)"
        )


@contextmanager
def quiet_optuna() -> Iterator[None]:
    """Optuna logs warnings only, for the block (a library call prints nothing of
    its own), and says nothing of the features a search is built on; the caller's
    verbosity and warning filters come back after it (a decorator too)."""
    import optuna

    before = optuna.logging.get_verbosity()
    optuna.logging.set_verbosity(max(before, optuna.logging.WARNING))
    try:
        with warnings.catch_warnings():
            # Heartbeats with ask-and-tell and metric names are "experimental" in
            # Optuna; they are what the runner is built on, so the warnings say nothing
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            warnings.filterwarnings("ignore", message="Heartbeat of storage")
            yield
    finally:
        optuna.logging.set_verbosity(before)
