"""``best``, ``correlate`` and ``export`` only read: a database that is not an
Optuna study is refused untouched, and a study's file keeps its bytes."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import pytest

from tests._postgres import PostgresServer
from tests.conftest import run_cli


def _fingerprint(path: Path) -> tuple[str, int]:
    """Content hash and modification time of ``path``."""
    return hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mtime_ns


@pytest.fixture(scope="module")
def foreign_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An SQLite file of another program: one table with rows, no Optuna schema."""
    path = tmp_path_factory.mktemp("foreign") / "inventory.db"
    connection = sqlite3.connect(path)
    connection.execute("CREATE TABLE parts (id INTEGER PRIMARY KEY, name TEXT, count INTEGER)")
    connection.executemany(
        "INSERT INTO parts (name, count) VALUES (?, ?)", [("bolt", 40), ("nut", 55)]
    )
    connection.commit()
    connection.close()
    return path


@pytest.mark.parametrize(
    "command",
    [("best",), ("correlate",), ("export", "--format", "csv")],
    ids=lambda c: c[0],
)
def test_a_database_that_is_not_a_study_is_refused_untouched(
    foreign_db: Path, tmp_path: Path, command: tuple[str, ...]
) -> None:
    before = _fingerprint(foreign_db)
    files = sorted(foreign_db.parent.iterdir())
    result = run_cli(*command, "--storage", f"sqlite:///{foreign_db}", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"error: {str(foreign_db)!r} is not an Optuna study database (no 'studies' table); "
        "nothing was written"
    ]
    assert _fingerprint(foreign_db) == before
    assert sorted(foreign_db.parent.iterdir()) == files
    assert list(tmp_path.iterdir()) == []  # nor an export folder


def test_best_leaves_a_study_file_byte_for_byte_unchanged(tmp_path: Path) -> None:
    """The database file keeps its bytes and mtime. (Reading a WAL database, as
    nasmlcn's are, SQLite may leave its empty ``-wal`` and the ``-shm`` index
    beside it: reader side files, not writes to the database.)"""
    db = tmp_path / "s.db"
    made = run_cli(
        *("search", "--evaluator", "proxy", "--devices", "2xK80", "--mem", "12GB"),
        *("--trials", "3", "--epochs", "2", "--storage", f"sqlite:///{db}", "-q"),
    )
    assert made.returncode == 0, made.stderr
    before = _fingerprint(db)
    best = run_cli("best", "--storage", f"sqlite:///{db}", "--json")
    assert best.returncode == 0, best.stderr
    assert _fingerprint(db) == before
    # s.db.lock: the workers' lock file, made by search (nasmlcn/study/_lock.py)
    assert {p.name for p in tmp_path.iterdir()} <= {"s.db", "s.db-wal", "s.db-shm", "s.db.lock"}
    wal = tmp_path / "s.db-wal"
    assert not wal.exists() or wal.stat().st_size == 0


def test_a_postgresql_database_without_a_study_is_refused_untouched(
    postgres: PostgresServer,
) -> None:
    db = postgres.create_database()
    result = run_cli("best", "--storage", db.url)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"error: {db.name!r} is not an Optuna study database (no 'studies' table); "
        "nothing was written"
    ]
    with postgres.admin(db.name) as admin:
        tables = admin.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
        assert tables.fetchall() == []
