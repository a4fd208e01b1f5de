"""A search tracked to ``config.mlflow`` as ``nasmlcn search --mlflow`` runs it: the
caller makes the MLflow observers and hands them to the search."""

from __future__ import annotations

from typing import Any

from nasmlcn.search import SearchConfig, SearchResult, run_search
from nasmlcn.tracking import MlflowObserver


def tracked_search(config: SearchConfig, **kw: Any) -> SearchResult:
    assert config.mlflow is not None
    return run_search(config, [MlflowObserver(config.mlflow)], **kw)


def tracked_workers(config: SearchConfig, **kw: Any) -> SearchResult:
    """With workers (``workers=N``): the parent opens and closes the study's run, and
    each worker logs its trials (the tracker splits itself so)."""
    assert config.mlflow is not None
    return run_search(config, [MlflowObserver(config.mlflow)], **kw)
