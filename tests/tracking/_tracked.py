"""A search tracked to ``config.mlflow`` as ``nasmlcn search --mlflow`` runs it: the
caller makes the MLflow observers and hands them to the search."""

from __future__ import annotations

import functools
from typing import Any

from nasmlcn.search import SearchConfig, SearchResult, run_search, run_workers
from nasmlcn.tracking import MlflowObserver


def tracked_search(config: SearchConfig, **kw: Any) -> SearchResult:
    assert config.mlflow is not None
    return run_search(config, [MlflowObserver(config.mlflow)], **kw)


def tracked_workers(config: SearchConfig, **kw: Any) -> SearchResult:
    """The parent opens and closes the study's run; each worker logs its trials."""
    assert config.mlflow is not None
    return run_workers(
        config,
        [MlflowObserver(config.mlflow, trials=False)],
        worker_observers=[functools.partial(MlflowObserver, config.mlflow, end_parent=False)],
        **kw,
    )
