"""Opening a study storage: any SQLAlchemy URL, with SQLite made fast and safe.

SQLite files get WAL journaling and ``synchronous=NORMAL``: commits stay atomic
and the database consistent after a crash or Ctrl-C (WAL never leaves a half
transaction), but a commit no longer waits for the disk. A trial's writes are
batched into few transactions (:mod:`nasmlcn.search._buffered_storage`).
Together they make a trial's bookkeeping many times cheaper
(``benchmarks/search_overhead.py``). PostgreSQL and
MySQL URLs are passed to Optuna unchanged; many workers on many machines can
share one study there.
"""

from __future__ import annotations

import logging
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nasmlcn.errors import StorageError

if TYPE_CHECKING:
    from optuna.storages import RDBStorage

    from nasmlcn.search._buffered_storage import BufferedStorage

logger = logging.getLogger(__name__)

HEARTBEAT_SECONDS = 60
GRACE_SECONDS = 600
"""A RUNNING trial whose process sent no heartbeat for this long is failed as
stale when a search starts (its worker died)."""


def sqlite_path(url: str) -> Path | None:
    """The file of a ``sqlite:///`` URL (None for other URLs and in-memory SQLite)."""
    prefix = "sqlite:///"
    if not url.startswith(prefix):
        return None
    rest = url[len(prefix) :].split("?", 1)[0]
    if not rest or rest == ":memory:":
        return None
    return Path(rest)


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA busy_timeout=30000")  # wait for other workers' writes
    cursor.close()


def open_storage(url: str, *, create: bool = True, heartbeat: bool = True) -> BufferedStorage:
    """An Optuna RDB storage for ``url``.

    Args:
        url: A SQLAlchemy URL (``sqlite:///studies/nasmlcn.db``, ``postgresql://...``).
        create: Create a missing SQLite file (and its folder); otherwise a missing
            file is an error (for read-only commands such as ``nasmlcn best``).
        heartbeat: Record trial heartbeats so a dead worker's trials can be failed.

    Raises:
        StorageError: The URL is malformed, its driver is missing, or the
            database cannot be opened; one line naming the URL.
    """
    import optuna
    from sqlalchemy import event

    path = sqlite_path(url)
    if path is not None:
        if not create and not path.is_file():
            raise StorageError(f"storage {url!r}: no such database file {str(path)!r}")
        if create:
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as err:
                raise StorageError(
                    f"storage {url!r}: cannot create {str(path.parent)!r}: {err.strerror}"
                ) from None
    options: dict[str, Any] = {}
    if heartbeat:
        options = {"heartbeat_interval": HEARTBEAT_SECONDS, "grace_period": GRACE_SECONDS}
    engine_kwargs: dict[str, Any] = {}
    if path is not None:
        engine_kwargs["connect_args"] = {"timeout": 30}
    try:
        with warnings.catch_warnings():
            # heartbeats are "experimental" in Optuna; they are what fails stale trials
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            storage = optuna.storages.RDBStorage(url, engine_kwargs=engine_kwargs, **options)
    except ImportError as err:
        raise StorageError(
            f"storage {url!r}: its database driver is not installed ({err})"
        ) from None
    except Exception as err:  # SQLAlchemy's URL, connection and schema errors
        message = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise StorageError(f"cannot open storage {url!r}: {message}") from None
    if path is not None:
        event.listen(storage.engine, "connect", _sqlite_pragmas)
        storage.engine.dispose()  # later connections get the pragmas
    from nasmlcn.search._buffered_storage import BufferedStorage

    return BufferedStorage(storage)


def study_names(storage: RDBStorage | BufferedStorage) -> list[str]:
    """Names of the studies in ``storage``."""
    return [s.study_name for s in storage.get_all_studies()]


def unknown_study(name: str, storage: RDBStorage | BufferedStorage, url: str) -> StorageError:
    """The error for a study ``name`` that ``storage`` does not hold."""
    import difflib

    names = study_names(storage)
    close = difflib.get_close_matches(name, names, n=3, cutoff=0.5)
    if close:
        hint = "did you mean " + " or ".join(repr(c) for c in close) + "?"
    elif names:
        hint = "studies there: " + ", ".join(names[:10]) + (" ..." if len(names) > 10 else "")
    else:
        hint = "it holds no studies"
    return StorageError(f"no study {name!r} in {url}; {hint}")
