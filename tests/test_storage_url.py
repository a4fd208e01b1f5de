"""Storage URLs without a server: redaction, scrubbing, drivers, $NASMLCN_STORAGE."""

from __future__ import annotations

import secrets
from urllib.parse import quote, quote_plus

import pytest

import nasmlcn._storage_url as _storage_url
from nasmlcn._storage_url import (
    DEFAULT_STORAGE,
    STORAGE_ENV,
    driver_install,
    driver_package,
    redact_url,
    register_url,
    resolve_storage,
    scrub,
    with_default_driver,
)


def _password(special: str = "") -> str:
    """A password no other test uses (the registry is per process)."""
    return f"{secrets.token_hex(6)}{special}{secrets.token_hex(6)}"


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        (
            "postgresql://alice:PW@db.example:5432/studies",
            "postgresql://alice:***@db.example:5432/studies",
        ),
        (
            "postgresql+psycopg2://alice:PW@host/db?sslmode=require",
            "postgresql+psycopg2://alice:***@host/db?sslmode=require",
        ),
        ("mysql://:PW@host/db", "mysql://:***@host/db"),
        # an unencoded "@" in the password: SQLAlchemy would show the part after it
        ("postgresql://alice:P@W@host/db", "postgresql://alice:***@host/db"),
        (
            "postgresql://host/db?user=alice&password=PW&x=1",
            "postgresql://host/db?user=alice&password=***&x=1",
        ),
    ],
)
def test_redact_url_hides_the_password(url: str, shown: str) -> None:
    password = _password()
    url = url.replace("PW", password)
    assert redact_url(url) == shown
    assert password not in redact_url(url)


@pytest.mark.parametrize(
    "url",
    [
        "sqlite:///studies/nasmlcn.db",
        "sqlite:////abs/path/x.db",
        "postgresql://alice@host/db",
        "sqlite://",
    ],
)
def test_urls_without_a_password_are_shown_as_written(url: str) -> None:
    assert redact_url(url) == url


def test_scrub_removes_every_form_of_a_registered_password() -> None:
    password = _password("@%/:")
    encoded = quote(password, safe="")
    register_url(f"postgresql://alice:{encoded}@host/db")
    lower = encoded.replace("%2F", "%2f")
    text = f"a {password} b {encoded} c {quote_plus(password)} d {lower} e"
    assert scrub(text) == "a *** b *** c *** d *** e"


@pytest.mark.parametrize("separator", ["@", ":", "/"])
def test_scrub_removes_the_pieces_of_a_password_a_parser_splits(separator: str) -> None:
    # a raw '@' in the password: SQLAlchemy takes its first piece as the password and
    # psycopg's error quotes the rest as the host ("failed to resolve host '2S...@...'")
    head, tail = secrets.token_hex(4), secrets.token_hex(5)
    redact_url(f"postgresql://alice:{head}{separator}{tail}@127.0.0.1:1/db")
    message = scrub(f"failed to resolve host '{tail}@127.0.0.1'; password {head}")
    assert head not in message
    assert tail not in message


def test_scrub_hides_passwords_of_unregistered_urls_in_text() -> None:
    password = _password()
    text = f"could not connect to 'postgresql://bob:{password}@10.0.0.1/db': timeout"
    assert scrub(text) == "could not connect to 'postgresql://bob:***@10.0.0.1/db': timeout"


def test_short_passwords_are_redacted_in_urls_but_not_searched_in_text() -> None:
    assert redact_url("postgresql://u:pw@host/db") == "postgresql://u:***@host/db"
    assert scrub("a pwd of pw") == "a pwd of pw"  # "pw" everywhere would garble messages


def test_scrub_leaves_text_without_secrets_alone() -> None:
    text = "optuna-dashboard on http://127.0.0.1:8080/dashboard; sqlite:///studies/x.db"
    assert scrub(text) == text


def test_mysql_urls_use_pymysql_when_mysqlclient_is_missing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_storage_url, "_importable", lambda module: False)
    assert with_default_driver("mysql://u:p@h/db") == "mysql+pymysql://u:p@h/db"
    assert with_default_driver("mariadb://u:p@h/db") == "mariadb+pymysql://u:p@h/db"
    # an explicit driver, and other databases, are left alone
    assert (
        with_default_driver("mysql+mysqlconnector://u:p@h/db") == "mysql+mysqlconnector://u:p@h/db"
    )
    assert with_default_driver("postgresql://u:p@h/db") == "postgresql://u:p@h/db"
    assert with_default_driver(DEFAULT_STORAGE) == DEFAULT_STORAGE


def test_mysql_urls_keep_mysqlclient_when_it_is_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_storage_url, "_importable", lambda module: module == "MySQLdb")
    assert with_default_driver("mysql://u:p@h/db") == "mysql://u:p@h/db"


def test_the_default_mysql_url_gets_a_driver_that_is_installed_here() -> None:
    """PyMySQL is a dependency, so ``mysql://`` always resolves to an importable driver."""
    from sqlalchemy.engine import make_url

    dialect = make_url(with_default_driver("mysql://u:p@h/db")).get_dialect()
    dialect.import_dbapi()  # raises ImportError when the chosen driver is missing


def test_plain_postgresql_urls_get_a_driver_that_is_installed_here() -> None:
    """Whatever driver this SQLAlchemy picks for ``postgresql://`` is declared."""
    from sqlalchemy.engine import make_url

    for url in (
        "postgresql://u:p@h/db",
        "postgresql+psycopg2://u:p@h/db",
        "postgresql+psycopg://u:p@h/db",
    ):
        make_url(url).get_dialect().import_dbapi()


@pytest.mark.parametrize(
    ("driver", "package"),
    [
        ("psycopg", "psycopg[binary]"),
        ("psycopg2", "psycopg2-binary"),
        ("mysqldb", "mysqlclient"),
        ("pymysql", "PyMySQL"),
        ("pg8000", "pg8000"),
    ],
)
def test_driver_package(driver: str, package: str) -> None:
    assert driver_package(driver) == package


@pytest.mark.parametrize(
    ("driver", "install"),
    [
        ("psycopg", "nasmlcn[postgres]"),
        ("psycopg2", "nasmlcn[postgres]"),
        ("pymysql", "nasmlcn[mysql]"),
        ("mysqldb", "mysqlclient"),  # no extra carries it: the driver's own package
        ("pg8000", "pg8000"),
    ],
)
def test_driver_install_names_nasmlcns_extra_where_one_carries_the_driver(
    driver: str, install: str
) -> None:
    assert driver_install(driver) == install


def test_resolve_storage(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(STORAGE_ENV, raising=False)
    assert resolve_storage(None) == DEFAULT_STORAGE
    assert resolve_storage(None, fallback="sqlite:///recipe.db") == "sqlite:///recipe.db"
    monkeypatch.setenv(STORAGE_ENV, "postgresql://u@h/env")
    assert resolve_storage(None) == "postgresql://u@h/env"
    assert resolve_storage(None, fallback="sqlite:///recipe.db") == "postgresql://u@h/env"
    assert resolve_storage("sqlite:///given.db") == "sqlite:///given.db"
    monkeypatch.setenv(STORAGE_ENV, "  ")
    assert resolve_storage(None) == DEFAULT_STORAGE


def test_search_config_stores_the_redacted_url() -> None:
    from nasmlcn.search import SearchConfig

    password = _password()
    config = SearchConfig(storage=f"postgresql://alice:{password}@host/db")
    assert config.to_dict()["storage"] == "postgresql://alice:***@host/db"
    assert config.storage.endswith(f"{password}@host/db")  # the search itself still connects
