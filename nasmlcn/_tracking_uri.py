"""The MLflow tracking URIs ``--mlflow`` accepts, checked without importing MLflow
(a top-level module: ``SearchConfig`` checks its ``mlflow`` field with it, and the
search imports nothing of :mod:`nasmlcn.tracking`).

A search refuses a URI MLflow cannot open before any study is made, in one line
that names what is accepted, instead of MLflow's own multi-line exception (which,
for an unknown scheme, speaks of the model registry). Two slips get a hint of
their own: a bare file name such as ``mlflow.db`` (to MLflow a folder, so a file
store would be made in a folder called ``mlflow.db``; the user meant
``sqlite:///mlflow.db``, as with ``--storage``), and an ``http://`` address with
no host.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlparse

from nasmlcn._storage_url import redact_url
from nasmlcn.errors import TrackingError, option

ACCEPTED = "a folder, sqlite:///mlflow.db, or a tracking server's http(s)://host:port address"
"""What ``--mlflow`` takes, as the error messages name it."""

SCHEMES = frozenset(
    {"", "file", "sqlite", "postgresql", "mysql", "mssql", "http", "https", "databricks"}
)
"""URI schemes MLflow opens a tracking store for (a database URL may add a driver,
``postgresql+psycopg://``)."""

_SQLITE_SUFFIXES = (".db", ".sqlite", ".sqlite3")


def is_folder(uri: str) -> bool:
    """Whether MLflow reads ``uri`` as a folder (its file store)."""
    scheme = urlparse(uri).scheme
    return scheme in ("", "file") or len(scheme) == 1  # C:\\ on Windows


def check_tracking_uri(uri: str) -> str:
    """``uri`` without surrounding blanks, if MLflow can open a tracking store there.

    Raises:
        TrackingError: An empty URI, a scheme MLflow has no store for, a bare
            ``*.db`` file name, or an ``http(s)://`` address without a host.
    """
    text = uri.strip()
    if not text:
        raise TrackingError(f"{option('mlflow')} is empty: give {ACCEPTED}")
    shown = redact_url(text)
    parsed = urlparse(text)
    scheme = parsed.scheme.lower().split("+")[0]
    if is_folder(text):
        path = Path(parsed.path if parsed.scheme == "file" else text)
        if path.suffix.lower() in _SQLITE_SUFFIXES and not path.is_dir():
            raise TrackingError(
                f"{option('mlflow')} {shown!r} would be a folder to MLflow; for a SQLite database "
                f"write sqlite:///{path}"
            )
        return text
    if scheme not in SCHEMES:
        raise TrackingError(
            f"{option('mlflow')} {shown!r}: MLflow has no tracking store for {parsed.scheme}://; "
            f"give {ACCEPTED}"
        )
    if scheme in ("http", "https") and not parsed.hostname:
        raise TrackingError(f"{option('mlflow')} {shown!r} names no host; give {ACCEPTED}")
    return text
