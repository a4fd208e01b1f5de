"""Experiment tracking of a search (``nasmlcn search --mlflow URI``).

:class:`MlflowObserver` logs a study to MLflow as one parent run and one child
run per trial (see :mod:`nasmlcn.tracking._mlflow`). It is an observer of the
search: ``run_search`` attaches it when ``SearchConfig.mlflow`` is set. Importing
this package is cheap; MLflow (``pip install 'nasmlcn[tracking]'``) is imported
when an observer is made.
"""

from __future__ import annotations

from nasmlcn._tracking_uri import check_tracking_uri
from nasmlcn.tracking._mlflow import MlflowObserver, missing_mlflow

__all__ = ["MlflowObserver", "check_tracking_uri", "missing_mlflow"]
