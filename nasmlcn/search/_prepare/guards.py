"""What a call of :func:`run_search` or :func:`run_workers` checks and quiets before
the search starts.

- The study storage must be named: the library creates no file or folder the
  caller did not ask for (``nasmlcn search`` names ``sqlite:///studies/nasmlcn.db``
  when the user names none) (:func:`require_storage`).
- ``SearchConfig.mlflow`` asks for an experiment tracker: the caller makes it
  (``nasmlcn.tracking.MlflowObserver``, as ``nasmlcn search --mlflow`` does) and
  passes it among the observers; the search imports nothing of the tracking, and
  refuses a config whose tracker is missing (:func:`require_tracker`).
- Optuna's own log lines ("A new study created in RDB ...") stay quiet for the
  call; the caller's Optuna verbosity is restored after it (:func:`quiet_optuna`).
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from nasmlcn._storage_url import redact_url
from nasmlcn.errors import SearchError, option
from nasmlcn.search._config.config import SearchConfig
from nasmlcn.search._types.observer import SearchObserver


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
