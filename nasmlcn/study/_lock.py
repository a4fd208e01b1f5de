"""One lock per study database, held by a worker while it changes who runs what.

Workers started at the same instant race wherever Optuna checks and then acts:
two create the schema (``table ... already exists``, ``pg_type_typname_nsp_index``),
two create the study, or both see 19 of 20 trials finished and both start one
more. Each of those steps runs under :class:`StorageLock`, so workers take turns
for the few milliseconds it lasts (never while a trial trains):

- SQLite: ``fcntl.flock`` on ``<database>.lock`` beside the file (the workers of
  one SQLite file share a machine; SQLite is not for network file systems);
- PostgreSQL: a session-level advisory lock (``pg_advisory_lock``), which works for
  workers on many machines and is released by the server if a worker dies;
- MySQL: ``GET_LOCK``, likewise held by the connection;
- other databases: no lock (their workers keep Optuna's own behaviour).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

LOCK_NAME = "nasmlcn-study"
ADVISORY_KEY = zlib.crc32(LOCK_NAME.encode())
"""The advisory-lock key every nasmlcn worker of a PostgreSQL database uses."""


class StorageLock:
    """An exclusive, re-entrant (within a process) lock over one study database.

    Args:
        url: The storage URL (a driver-qualified SQLAlchemy URL).
        sqlite_file: The database file of a ``sqlite:///`` URL (None otherwise).
        engine: The SQLAlchemy engine of a server database (None: made from ``url``
            when first needed, for the schema creation that happens before Optuna
            has an engine).
        engine_kwargs: Arguments for that engine.
    """

    def __init__(
        self,
        url: str,
        sqlite_file: Path | None,
        engine: Any = None,
        engine_kwargs: dict[str, Any] | None = None,
    ) -> None:
        self.url = url
        self.sqlite_file = sqlite_file
        self.engine = engine
        self.engine_kwargs = engine_kwargs or {}
        self._depth = 0
        self._release: contextlib.ExitStack | None = None
        self.dialect = "sqlite" if sqlite_file is not None else _dialect(url)

    def __getstate__(self) -> dict[str, Any]:
        # a copy in another process makes its own engine and holds nothing yet
        return {**self.__dict__, "engine": None, "_depth": 0, "_release": None}

    @contextlib.contextmanager
    def hold(self) -> Iterator[None]:
        """Holds the lock for the ``with`` block (nested holds are free)."""
        if self._depth:
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
            return
        stack = contextlib.ExitStack()
        try:
            self._acquire(stack)
        except BaseException:
            stack.close()
            raise
        self._depth = 1
        try:
            yield
        finally:
            self._depth = 0
            stack.close()

    def _acquire(self, stack: contextlib.ExitStack) -> None:
        if self.sqlite_file is not None:
            path = Path(f"{self.sqlite_file}.lock")
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
            stack.callback(os.close, fd)
            fcntl.flock(fd, fcntl.LOCK_EX)
            stack.callback(fcntl.flock, fd, fcntl.LOCK_UN)
            return
        if self.dialect not in ("postgresql", "mysql"):
            return
        from sqlalchemy import text

        engine = self.engine
        if engine is None:
            import sqlalchemy

            engine = sqlalchemy.create_engine(self.url, **self.engine_kwargs)
            stack.callback(engine.dispose)
        connection = engine.connect()
        stack.callback(connection.close)
        if self.dialect == "postgresql":
            connection.execute(text("SELECT pg_advisory_lock(:key)"), {"key": ADVISORY_KEY})
            connection.commit()
            stack.callback(_unlock, connection, "SELECT pg_advisory_unlock(:key)", ADVISORY_KEY)
        else:
            connection.execute(text("SELECT GET_LOCK(:key, -1)"), {"key": LOCK_NAME})
            connection.commit()
            stack.callback(_unlock, connection, "SELECT RELEASE_LOCK(:key)", LOCK_NAME)


def hold(storage: Any) -> contextlib.AbstractContextManager[None]:
    """Holds ``storage``'s lock (storages not opened by ``open_storage`` have none)."""
    lock = getattr(storage, "lock", None)
    return lock.hold() if isinstance(lock, StorageLock) else contextlib.nullcontext()


def _unlock(connection: Any, statement: str, key: Any) -> None:
    from sqlalchemy import text

    try:
        connection.execute(text(statement), {"key": key})
        connection.commit()
    except Exception:  # the connection is closed next, which releases it as well
        connection.invalidate()


def _dialect(url: str) -> str:
    scheme = url.split(":", 1)[0]
    return scheme.split("+", 1)[0]
