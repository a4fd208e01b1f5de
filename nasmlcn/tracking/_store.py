"""Opening an MLflow tracking store for :class:`~nasmlcn.tracking.MlflowObserver`:
the environment MLflow reads while it opens one, MLflow's log lines kept quiet, and
one line for a store that cannot be opened."""

from __future__ import annotations

import contextlib
import logging
import os
import re
from collections.abc import Iterator
from urllib.parse import urlparse

from nasmlcn._tracking_uri import is_folder
from nasmlcn.errors import option


def first_line(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    return text[0] if text else type(err).__name__


def artifact_location(uri: str) -> str | None:
    """``mlartifacts/`` beside a SQLite store's file; None (MLflow's choice) otherwise."""
    from nasmlcn.study import sqlite_path

    if not uri.startswith("sqlite:"):
        return None
    path = sqlite_path(uri)
    return (path.resolve().parent / "mlartifacts").as_uri() if path is not None else None


_OPENING_ENV = {
    # A server that does not answer is reported in seconds, not after MLflow's
    # seven retries with backoff (four minutes); logging later keeps the retries.
    "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "1",
    "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "1",
    "MLFLOW_HTTP_REQUEST_TIMEOUT": "15",
}


@contextlib.contextmanager
def opening(uri: str) -> Iterator[None]:
    """The environment MLflow reads while the observer opens the store, then the
    caller's again (a variable the caller set is left as it is).

    A folder: MLflow 3 refuses its file store ("maintenance mode") unless
    ``MLFLOW_ALLOW_FILE_STORE`` is set; a folder given as the URI is the user's
    explicit choice, so it is allowed while the client is made (MLflow keeps the
    store it opened for the process, so logging needs no variable). Reading the
    folder back with MLflow 3 (``mlflow ui``, ``MlflowClient``) needs
    ``MLFLOW_ALLOW_FILE_STORE=true`` too; ``sqlite:///mlflow.db`` needs nothing.
    An ``http(s)://`` server: few retries, so a wrong address fails fast.
    """
    scheme = urlparse(uri).scheme.lower()
    if is_folder(uri):
        wanted = {"MLFLOW_ALLOW_FILE_STORE": "true"}
    elif scheme in ("http", "https"):
        wanted = _OPENING_ENV
    else:
        wanted = {}
    set_here = [k for k in wanted if k not in os.environ]
    for key in set_here:
        os.environ[key] = wanted[key]
    try:
        yield
    finally:
        for key in set_here:
            os.environ.pop(key, None)


_ERRNO = re.compile(r"\[Errno -?\d+\] [^'\")\]]+")


def open_error(shown: str, uri: str, err: BaseException) -> str:
    """One line for a store MLflow could not open: for a server, the reason it did
    not answer (MLflow's text quotes the whole request and its retries)."""
    text = str(err)
    if urlparse(uri).scheme.lower() in ("http", "https"):
        reasons = _ERRNO.findall(text)
        reason = reasons[-1].strip() if reasons else first_line(err)
        if len(reason) > 200:
            reason = reason[:197] + "..."
        return (
            f"{option('mlflow')} {shown!r}: no MLflow tracking server answered ({reason}); start one "
            "(mlflow server --port PORT) or give a folder or sqlite:///mlflow.db"
        )
    return f"{option('mlflow')} {shown!r}: MLflow cannot open it: {first_line(err)}"


@contextlib.contextmanager
def quiet_mlflow() -> Iterator[None]:
    """MLflow's and alembic's INFO lines (creating a SQLite store's tables) and
    urllib3's retry warnings (a server that does not answer: the error says it)
    unseen while the store is opened."""
    levels = {"mlflow": logging.WARNING, "alembic": logging.WARNING, "urllib3": logging.ERROR}
    loggers = {logging.getLogger(name): level for name, level in levels.items()}
    before = {lg: lg.level for lg in loggers}
    for lg, level in loggers.items():
        lg.setLevel(level)
    try:
        yield
    finally:
        for lg, level in before.items():
            lg.setLevel(level)
