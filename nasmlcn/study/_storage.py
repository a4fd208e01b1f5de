"""Opening a study storage: any SQLAlchemy URL, with SQLite made fast and safe.

SQLite files get WAL journaling and ``synchronous=NORMAL``: commits stay atomic
and the database consistent after a crash or Ctrl-C (WAL never leaves a half
transaction), but a commit no longer waits for the disk. A trial's writes are
batched into few transactions (:mod:`nasmlcn.study._buffered_storage`).
Together they make a trial's bookkeeping many times cheaper
(``benchmarks/search_overhead.py``). PostgreSQL and
MySQL URLs are passed to Optuna as written (``mysql://`` gets PyMySQL when
mysqlclient is missing, :func:`nasmlcn._storage_url.with_default_driver`); many
workers on many machines can share one study there.

Read-only opens (``nasmlcn best``, ``correlate``, ``export``) never write: the
database must already hold an Optuna schema (checked without writing, so a
foreign database is refused untouched), Optuna creates no tables, SQLite files
are opened with ``mode=ro`` and keep their journal mode, and PostgreSQL sessions
of psycopg and psycopg2 are read-only transactions.

No error shows a password: URLs appear as ``postgresql://user:***@host/db`` and
driver messages are scrubbed (:mod:`nasmlcn._storage_url`).
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import shlex
import sqlite3
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, quote, unquote

from nasmlcn._optuna_compat import read_schema_scripts_once
from nasmlcn._storage_url import (
    DEFAULT_STORAGE,
    STORAGE_ENV,
    driver_install,
    redact_url,
    resolve_storage,
    scrub,
    with_default_driver,
)
from nasmlcn.errors import StorageError, option
from nasmlcn.study._stop_cleanup import quiet_stop_cleanup

if TYPE_CHECKING:
    from optuna.storages import RDBStorage

    from nasmlcn.study._buffered_storage import BufferedStorage
    from nasmlcn.study._lock import StorageLock

__all__ = [
    "DEFAULT_STORAGE",
    "GRACE_SECONDS",
    "STORAGE_ENV",
    "heartbeat_interval",
    "open_storage",
    "resolve_storage",
    "sqlite_path",
    "study_names",
    "unknown_study",
]

logger = logging.getLogger(__name__)

OPTUNA_TABLES = ("studies", "version_info")
"""Tables every Optuna RDB schema has; a database without them is not a study database."""

GRACE_SECONDS = 120
"""A RUNNING trial whose worker sent no heartbeat for this long is failed as stale
(its worker died) by the next worker that looks, and retried (``--grace``)."""


def heartbeat_interval(grace: float) -> int:
    """Seconds between a trial's heartbeats: a quarter of the grace period (at most
    20 s), so a live worker misses several beats before its trial looks dead."""
    return int(max(1, min(20, grace // 4)))


def sqlite_path(url: str) -> Path | None:
    """The file of a ``sqlite:///`` URL (None for other URLs and in-memory SQLite).

    SQLite's URI form, ``sqlite:///file:PATH?mode=rw&uri=true`` (SQLAlchemy hands
    ``file:PATH?...`` to SQLite as a URI), names the file ``PATH``.
    """
    prefix = "sqlite:///"
    if not url.startswith(prefix):
        return None
    rest, _, query = url[len(prefix) :].partition("?")
    params = _sqlite_query(query)
    if params.get("uri", "").lower() == "true" and rest.startswith("file:"):
        if params.get("mode") == "memory":
            return None
        rest = unquote(rest[len("file:") :])
        if rest.startswith("//"):  # file://localhost/abs or file:///abs
            rest = "/" + rest[2:].partition("/")[2]
    if not rest or rest == ":memory:":
        return None
    return Path(rest)


def _sqlite_query(query: str) -> dict[str, str]:
    """The ``key=value`` pairs of a SQLite URL's query string (the last of each key)."""
    return {k.lower(): v for k, v in parse_qsl(query, keep_blank_values=True)}


_READ_ONLY_QUERY = (("mode", "ro"), ("immutable", "1"))
"""SQLite URI parameters that make every write fail."""


def _refuse_read_only_sqlite(url: str, shown: str) -> None:
    """A command that writes (a search, retrain, ``dashboard --refresh``) refuses a
    ``sqlite:///file:...?mode=ro&uri=true`` URL (or ``immutable=1``) before
    anything is opened."""
    params = _sqlite_query(url.partition("?")[2])
    for key, value in _READ_ONLY_QUERY:
        if params.get(key, "").lower() == value:
            raise StorageError(
                f"storage {shown!r} is opened read-only ({key}={value}), but this command "
                f"writes to the study; remove {key}={value} from the URL (nasmlcn best, "
                "correlate and export read a study without writing)"
            )


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    # Not for read-only opens: setting the journal mode writes the file's header.
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA busy_timeout=30000")  # wait for other workers' writes
    cursor.close()


def open_storage(
    url: str,
    *,
    create: bool = True,
    heartbeat: bool = True,
    read_only: bool = False,
    grace: float = GRACE_SECONDS,
) -> BufferedStorage:
    """An Optuna RDB storage for ``url``.

    Args:
        url: A SQLAlchemy URL (``sqlite:///studies/nasmlcn.db``, ``postgresql://...``).
        create: Create a missing SQLite file (and its folder) and Optuna's tables;
            otherwise the database must already hold an Optuna schema.
        heartbeat: Record trial heartbeats so a dead worker's trials can be failed.
        read_only: Never write (implies ``create=False``): for commands that only
            read, such as ``nasmlcn best``.
        grace: Seconds without a heartbeat after which a RUNNING trial is stale.

    The storage's ``lock`` (:class:`~nasmlcn.study._lock.StorageLock`) is held
    while the schema is created, so workers started together never race there.

    Raises:
        StorageError: The URL is malformed, its driver is missing, the database
            cannot be opened or (without ``create``) holds no Optuna schema; one
            line naming the URL with its password hidden.
    """
    from sqlalchemy import event

    shown = redact_url(url)  # and from here on, scrub() hides its password in any text
    engine_url = with_default_driver(url)
    create = create and not read_only
    path = sqlite_path(url)
    if path is not None:
        _prepare_sqlite_file(path, url, shown, create=create, read_only=read_only)
    driver = _check_driver(engine_url, shown)
    engine_kwargs = _engine_kwargs(engine_url, path, driver, read_only=read_only)
    if not create:
        if path is not None:
            _check_sqlite_schema(path, shown)
        else:
            _check_schema(engine_url, engine_kwargs, shown)
    from nasmlcn.study._lock import StorageLock

    lock = StorageLock(engine_url, path, engine_kwargs=engine_kwargs)
    storage = _rdb_storage(
        engine_url,
        engine_kwargs,
        lock,
        shown,
        create=create,
        options=_heartbeat_options(heartbeat, grace),
    )
    lock.engine = storage.engine
    quiet_stop_cleanup(storage.engine)
    if path is not None and not read_only:
        event.listen(storage.engine, "connect", _sqlite_pragmas)
        storage.engine.dispose()  # later connections get the pragmas
    if not read_only:
        _check_writes(storage.engine, shown, path)
    from nasmlcn.study._buffered_storage import BufferedStorage

    buffered = BufferedStorage(storage)
    buffered.lock = lock
    return buffered


def _prepare_sqlite_file(
    path: Path, url: str, shown: str, *, create: bool, read_only: bool
) -> None:
    """Checks a SQLite file before it is opened; with ``create``, its folder must exist
    (the default storage's, ``studies/``, is made)."""
    if not create and not path.is_file():
        where = "" if path.is_absolute() else f" (relative to {os.getcwd()})"
        raise StorageError(
            f"storage {shown!r}: no such database file {str(path)!r}{where}; name the "
            f"study's with {option('storage')} or $NASMLCN_STORAGE"
        )
    default_folder = Path(DEFAULT_STORAGE.removeprefix("sqlite:///")).parent  # studies/
    if create and not path.parent.exists() and path.parent != default_folder:
        # a folder missing from a URL the user typed is most likely a typo
        raise StorageError(
            f"storage {shown!r}: there is no folder {str(path.parent)!r} for the database "
            "file; check the path, or create the folder first (only the default storage's "
            "folder, studies/, is made)"
        )
    if not read_only:
        _refuse_read_only_sqlite(url, shown)
        _check_sqlite_writable(path, shown)
    if create:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise StorageError(
                f"storage {shown!r}: cannot create {str(path.parent)!r}: {err.strerror}"
            ) from None


def _engine_kwargs(
    engine_url: str, path: Path | None, driver: str, *, read_only: bool
) -> dict[str, Any]:
    """SQLAlchemy's engine arguments: SQLite's lock timeout, or read-only connections."""
    engine_kwargs: dict[str, Any] = {}
    if path is not None:
        engine_kwargs["connect_args"] = {"timeout": 30}
    if read_only:
        if path is not None:
            # SQLAlchemy keeps the URL; every connection is sqlite3's, read-only
            engine_kwargs = {"creator": functools.partial(_connect_sqlite_read_only, path)}
        elif driver in ("psycopg", "psycopg2"):
            engine_kwargs["connect_args"] = {"options": _read_only_options(engine_url)}
    return engine_kwargs


def _heartbeat_options(heartbeat: bool, grace: float) -> dict[str, Any]:
    """RDBStorage's heartbeat arguments (none without ``heartbeat``)."""
    if not heartbeat:
        return {}
    return {
        "heartbeat_interval": heartbeat_interval(grace),
        "grace_period": int(max(1, round(grace))),
    }


def _rdb_storage(
    engine_url: str,
    engine_kwargs: dict[str, Any],
    lock: StorageLock,
    shown: str,
    *,
    create: bool,
    options: dict[str, Any],
) -> RDBStorage:
    """Optuna's RDBStorage, creating the schema under ``lock`` when ``create``."""
    import optuna

    read_schema_scripts_once()

    try:
        # Creating the schema is a check-then-create: workers take turns.
        with lock.hold() if create else contextlib.nullcontext(), warnings.catch_warnings():
            # heartbeats are "experimental" in Optuna; they are what fails stale trials
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            return optuna.storages.RDBStorage(
                engine_url, engine_kwargs=engine_kwargs, skip_table_creation=not create, **options
            )
    except Exception as err:  # SQLAlchemy's URL, connection and schema errors
        raise _open_error(shown, err) from None


def _check_sqlite_writable(path: Path, shown: str) -> None:
    """The SQLite file ``path`` (if it exists) and its folder can be written (SQLite
    writes its journal and nasmlcn its lock file beside the database); checked
    before anything is opened. Root passes permission bits, so an existing folder
    gets a probe file as well (``/proc`` refuses it); a file root cannot write
    is found by :func:`_check_writes`."""
    from nasmlcn._io import probe_folder

    folder = path.parent if str(path.parent) else Path(".")
    fix = "make it writable or choose another ‹storage›"
    existing = folder
    while not existing.exists() and existing.parent != existing:
        existing = existing.parent
    if existing.exists() and not existing.is_dir():
        raise StorageError(
            f"storage {shown!r}: {str(existing)!r} is a file, not a folder; choose another "
            "‹storage›"
        )
    if path.exists() and not os.access(path, os.W_OK):
        raise StorageError(
            f"storage {shown!r}: the database file {str(path)!r} is read-only, but this "
            f"command writes to the study; {fix}"
        )
    problem = None
    if folder.is_dir():
        writable = os.access(folder, os.W_OK | os.X_OK)
        problem = "not writable" if not writable else _probe_problem(probe_folder(folder))
    if problem is not None:
        raise StorageError(
            f"storage {shown!r}: the folder {str(folder)!r} is {problem}, but SQLite "
            f"writes its journal (and nasmlcn its lock file) beside the database; {fix}"
        )


def _probe_problem(error: OSError | None) -> str | None:
    return None if error is None else f"not writable ({error.strerror or error})"


def _check_writes(engine: Any, shown: str, path: Path | None) -> None:
    """Writes a row of Optuna's ``version_info`` table unchanged and rolls it back,
    so a storage that cannot be written is refused here, in one line, and not by
    Optuna's ``StorageInternalError`` ("... e.g. exceeding max length") at the
    first trial. The study is not touched.

    Raises:
        StorageError: The write failed (a read-only file, folder, database or user).
    """
    import sqlalchemy

    try:
        with engine.connect() as connection, connection.begin() as transaction:
            connection.execute(
                sqlalchemy.text("UPDATE version_info SET schema_version = schema_version")
            )
            transaction.rollback()
    except Exception as err:  # the driver's error: read-only, permission denied
        cause = getattr(err, "orig", None) or err
        text = str(cause).strip()
        first = text.splitlines()[0] if text else type(cause).__name__
        where = (
            f"make {str(path)!r} and its folder writable"
            if path is not None
            else "give a user that may write to it"
        )
        raise StorageError(
            scrub(
                f"storage {shown!r} cannot be written ({first}), but this command writes "
                f"to the study; {where}, or choose another ‹storage›"
            )
        ) from None


def _open_error(shown: str, err: BaseException) -> StorageError:
    """``cannot open storage URL: <the first line of err>``, without any password."""
    text = str(err).strip()
    message = text.splitlines()[0] if text else type(err).__name__
    return StorageError(scrub(f"cannot open storage {shown!r}: {message}"))


def _check_driver(url: str, shown: str) -> str:
    """The driver of ``url`` (``psycopg``), after checking that it imports.

    Raises:
        StorageError: A malformed URL, an unknown database, or a driver that is
            not installed (naming the pip package that provides it).
    """
    from sqlalchemy.engine import make_url

    try:
        parsed = make_url(url)
    except Exception as err:
        if "://" not in url:  # a path: the SQLite file it most likely means
            raise StorageError(
                f"storage {shown!r} is not a URL; for the SQLite file {url!r} write sqlite:///{url}"
            ) from None
        raise StorageError(scrub(f"storage {shown!r} is not a valid URL: {err}")) from None
    try:
        dialect = parsed.get_dialect()
    except Exception:
        raise StorageError(
            f"storage {shown!r}: SQLAlchemy knows no database {parsed.drivername!r}; "
            "use e.g. sqlite:///PATH, postgresql://USER@HOST/DB or mysql://USER@HOST/DB"
        ) from None
    driver = str(dialect.driver)
    try:
        dialect.import_dbapi()
    except ImportError as err:
        install = f"install it with: pip install {shlex.quote(driver_install(driver))}"
        if isinstance(err, ModuleNotFoundError):
            raise StorageError(
                f"storage {shown!r}: the database driver {driver!r} is not installed; {install}"
            ) from None
        raise StorageError(
            scrub(
                f"storage {shown!r}: the database driver {driver!r} cannot be loaded ({err}); "
                f"{install}"
            )
        ) from None
    return driver


def _read_only_options(url: str) -> str:
    """libpq ``options`` that make every transaction read-only, after the URL's own
    ``?options=`` (a ``search_path``, say), which ``connect_args`` would replace."""
    from sqlalchemy.engine import make_url

    given = make_url(url).query.get("options", "")
    given = given if isinstance(given, str) else " ".join(given)
    return f"{given} -c default_transaction_read_only=on".strip()


def _connect_sqlite_read_only(path: Path) -> sqlite3.Connection:
    # mode=ro: SQLite itself refuses every write (a WAL database may still get
    # its -wal and -shm side files, which readers need; the database file stays as is)
    uri = f"file:{quote(str(path.resolve()))}?mode=ro"
    return sqlite3.connect(uri, uri=True, timeout=30, check_same_thread=False)


def _check_sqlite_schema(path: Path, shown: str) -> None:
    """Raises StorageError unless the SQLite file ``path`` holds Optuna's tables
    (read with ``mode=ro``: the check writes nothing)."""
    try:
        connection = _connect_sqlite_read_only(path)
        try:
            rows = connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            tables = {str(row[0]) for row in rows}
        finally:
            connection.close()
    except sqlite3.Error as err:
        raise StorageError(
            f"cannot open storage {shown!r}: {err}; is {str(path)!r} an SQLite database?"
        ) from None
    _require_tables(tables, str(path), shown)


def _check_schema(url: str, engine_kwargs: dict[str, Any], shown: str) -> None:
    """Raises StorageError unless the database at ``url`` holds Optuna's tables."""
    import sqlalchemy

    try:
        engine = sqlalchemy.create_engine(url, **engine_kwargs)
        try:
            inspector = sqlalchemy.inspect(engine)
            tables = {name for name in OPTUNA_TABLES if inspector.has_table(name)}
        finally:
            engine.dispose()
    except Exception as err:  # connection errors: wrong password, no server, no database
        raise _open_error(shown, err) from None
    from sqlalchemy.engine import make_url

    _require_tables(tables, str(make_url(url).database or shown), shown)


def _require_tables(tables: set[str], where: str, shown: str) -> None:
    missing = [name for name in OPTUNA_TABLES if name not in tables]
    if missing:
        raise StorageError(
            f"{where!r} is not an Optuna study database (no {missing[0]!r} table); "
            "nothing was written"
        )


def study_names(storage: RDBStorage | BufferedStorage) -> list[str]:
    """Names of the studies in ``storage``."""
    return [s.study_name for s in storage.get_all_studies()]


def unknown_study(name: str, storage: RDBStorage | BufferedStorage, url: str) -> StorageError:
    """The error for a study ``name`` that ``storage`` does not hold."""
    from nasmlcn.registry import did_you_mean

    names = study_names(storage)
    listed = ", ".join(names[:10]) + (" ..." if len(names) > 10 else "")
    hint = did_you_mean(
        name, names, otherwise=f"studies there: {listed}" if names else "it holds no studies"
    )
    return StorageError(f"no study {name!r} in {redact_url(url)}; {hint}")
