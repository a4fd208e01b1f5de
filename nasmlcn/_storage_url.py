"""Storage URLs as users write them, and their passwords kept out of sight.

- :func:`resolve_storage`: ``--storage``, else ``$NASMLCN_STORAGE`` (which keeps a
  URL and its password out of shell history and process lists), else
  :data:`DEFAULT_STORAGE` (or a recipe's storage).
- :func:`with_default_driver`: ``mysql://`` URLs, as Optuna's documentation
  writes them, use the pure-Python PyMySQL when mysqlclient is not installed.
- :func:`redact_url` and :func:`scrub`: nothing nasmlcn prints or stores shows a
  database password. A URL is shown as ``postgresql://user:***@host/db``; every
  password of a URL opened or shown in this process is remembered, so
  :func:`scrub` also removes it (and its URL-encoded forms) from any text, such as
  a database driver's error that echoes it.

Import-light: SQLAlchemy is imported only when a URL is parsed, so the CLI can
use this module at import time.
"""

from __future__ import annotations

import importlib.util
import os
import re
import threading
from urllib.parse import quote, quote_plus, unquote

DEFAULT_STORAGE = "sqlite:///studies/nasmlcn.db"
"""The study storage when neither ``--storage`` nor ``$NASMLCN_STORAGE`` names one."""

STORAGE_ENV = "NASMLCN_STORAGE"
"""The environment variable read when ``--storage`` is not given."""

STORAGE_HELP = (
    "SQLAlchemy URL of the study storage, e.g. postgresql://USER:PASSWORD@HOST/DB "
    f"[default: ${STORAGE_ENV}, else {DEFAULT_STORAGE}]. Set ${STORAGE_ENV} instead of "
    "--storage to keep the URL and its password out of shell history and process lists."
)
"""``--storage``'s help, the same for every command that opens a study."""

MASK = "***"

MIN_SCRUB_LENGTH = 4
"""Shorter passwords are redacted inside URLs but not searched for in free text:
replacing every ``pw`` in a message would garble it."""

# scheme://[user]:PASSWORD@ -- greedy up to the token's last "@", so a password with
# an unencoded "@" is hidden whole (SQLAlchemy would split it at its first "@").
_CREDENTIALS = re.compile(r"(?P<head>\b[A-Za-z][A-Za-z0-9+.\-]*://[^\s:/@'\"]*:)(?P<secret>\S*)@")
# libpq / driver keyword arguments in the query string: ?password=..., &passwd=...
_QUERY_SECRET = re.compile(r"(?P<head>[?&](?:password|passwd|pwd)=)(?P<secret>[^&\s'\"]*)", re.I)

_PERCENT = re.compile(r"%[0-9A-Fa-f]{2}")  # a URL escape; its hex digits match in any case

_secrets: set[str] = set()
_pattern: re.Pattern[str] | None = None  # built from _secrets when first needed
_lock = threading.Lock()


def resolve_storage(url: str | None, fallback: str = DEFAULT_STORAGE) -> str:
    """The storage to use: ``url`` (``--storage``), else ``$NASMLCN_STORAGE``,
    else ``fallback``.

    Raises:
        StorageError: ``url`` is given but empty (it would silently mean the default).
    """
    if url is not None and not url.strip():
        from nasmlcn.errors import StorageError, option

        raise StorageError(
            f"{option('storage')} {url!r} is empty; give a URL such as sqlite:///studies/nasmlcn.db, "
            f"or leave it out for ${STORAGE_ENV} or {fallback}"
        )
    if url:
        return url
    return os.environ.get(STORAGE_ENV, "").strip() or fallback


def with_default_driver(url: str) -> str:
    """``url`` with the driver SQLAlchemy should use when the URL names none.

    ``mysql://`` and ``mariadb://`` mean mysqlclient (``MySQLdb``) to SQLAlchemy,
    which needs C headers to install; when it is not importable they become
    ``mysql+pymysql://`` (PyMySQL, pure Python, nasmlcn's ``mysql`` extra). URLs with
    an explicit driver (``mysql+mysqlconnector://``) and every other database are
    returned unchanged.
    """
    scheme, sep, rest = url.partition("://")
    if sep and scheme.lower() in ("mysql", "mariadb") and not _importable("MySQLdb"):
        return f"{scheme}+pymysql://{rest}"
    return url


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


_DRIVER_PACKAGES = {
    "psycopg": "psycopg[binary]",
    "psycopg2": "psycopg2-binary",
    "psycopg2cffi": "psycopg2cffi",
    "pg8000": "pg8000",
    "asyncpg": "asyncpg",
    "mysqldb": "mysqlclient",
    "pymysql": "PyMySQL",
    "mysqlconnector": "mysql-connector-python",
    "mariadbconnector": "mariadb",
    "asyncmy": "asyncmy",
    "aiomysql": "aiomysql",
    "pyodbc": "pyodbc",
    "pymssql": "pymssql",
    "oracledb": "oracledb",
    "cx_oracle": "cx_Oracle",
}


# The drivers nasmlcn's own extras install (pyproject.toml's optional dependencies).
_DRIVER_EXTRAS = {"psycopg": "postgres", "psycopg2": "postgres", "pymysql": "mysql"}


def driver_package(driver: str) -> str:
    """The pip package that provides SQLAlchemy's driver ``driver`` (``psycopg2`` ->
    ``psycopg2-binary``); unknown drivers are their own package name."""
    return _DRIVER_PACKAGES.get(driver.lower(), driver)


def driver_install(driver: str) -> str:
    """What to ``pip install`` for ``driver``: nasmlcn's extra where one carries it
    (``psycopg`` -> ``nasmlcn[postgres]``), else the driver's own package."""
    extra = _DRIVER_EXTRAS.get(driver.lower())
    return f"nasmlcn[{extra}]" if extra else driver_package(driver)


def register_url(url: str) -> None:
    """Remembers the password of ``url`` (if any) for :func:`scrub`."""
    found = [m.group("secret") for m in _CREDENTIALS.finditer(url)]
    found += [m.group("secret") for m in _QUERY_SECRET.finditer(url)]
    try:
        from sqlalchemy.engine import make_url

        parsed = make_url(url).password
    except Exception:  # not a URL SQLAlchemy parses: the raw text is all there is
        parsed = None
    if parsed is not None:
        found.append(str(parsed))
    for secret in found:
        register_secret(secret)
        # a raw '@', ':' or '/' in a password splits it between a parser's fields:
        # a driver's message then quotes a piece as part of the host or database
        for piece in re.split(r"[@:/?#]", secret):
            register_secret(piece)


def register_secret(secret: str) -> None:
    """Remembers ``secret`` and its URL-encoded and decoded forms for :func:`scrub`."""
    forms = {secret, unquote(secret), quote(secret, safe=""), quote(secret), quote_plus(secret)}
    global _pattern
    with _lock:
        _secrets.update(f for f in forms if len(f) >= MIN_SCRUB_LENGTH and f != MASK)
        _pattern = None


def redact_url(url: str) -> str:
    """``url`` with its password shown as ``***`` (``postgresql://user:***@host/db``).

    URLs without a password come back as written. The password is also
    remembered, so :func:`scrub` removes it from other text.
    """
    register_url(url)
    return _redact(url)


def scrub(text: str) -> str:
    """``text`` without any password this process has seen in a storage URL (any
    encoding of it), and with the password of any URL in it shown as ``***``."""
    pattern = _secrets_pattern()
    if pattern is not None:
        text = pattern.sub(MASK, text)
    return _redact(text)


def _secrets_pattern() -> re.Pattern[str] | None:
    """One regex matching every registered secret, longer forms first; ``%2F`` in
    a secret also matches ``%2f``."""
    global _pattern
    with _lock:
        if _pattern is None and _secrets:
            alternatives = (
                _PERCENT.sub(lambda m: f"(?i:{m.group()})", re.escape(secret))
                for secret in sorted(_secrets, key=len, reverse=True)
            )
            _pattern = re.compile("|".join(alternatives))
        return _pattern


def _redact(text: str) -> str:
    text = _CREDENTIALS.sub(lambda m: f"{m.group('head')}{MASK}@", text)
    return _QUERY_SECRET.sub(lambda m: f"{m.group('head')}{MASK}", text)
