"""The batching storage passes Optuna's own storage conformance suite
(``optuna.testing.pytest_storages.StorageTestCase``), on SQLite and on a private
PostgreSQL server: every read sees exactly what Optuna's own storage would. The
schema is made once per backend: on SQLite each test opens a copy of the empty file;
on PostgreSQL each test empties the tables of the one database (``TRUNCATE ...
RESTART IDENTITY``: as new, ids included, and 0.2 s a test less than a copy)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from optuna.testing.pytest_storages import StorageTestCase

from nasmlcn.study import BufferedStorage, open_storage
from tests._postgres import Database, PostgresServer


class TestBufferedStorageOnSQLite(StorageTestCase):
    @pytest.fixture(scope="class")
    @classmethod
    def empty(cls, tmp_path_factory: pytest.TempPathFactory) -> Path:
        """A storage's empty schema, made once; each test gets a copy of the file."""
        path = tmp_path_factory.mktemp("conformance") / "empty.db"
        open_storage(f"sqlite:///{path}")._backend.engine.dispose()
        return path

    @pytest.fixture
    def storage(self, empty: Path, tmp_path: Path) -> Iterator[BufferedStorage]:
        shutil.copyfile(empty, tmp_path / "conformance.db")
        storage = open_storage(f"sqlite:///{tmp_path / 'conformance.db'}")
        yield storage
        storage._backend.engine.dispose()


class TestBufferedStorageOnPostgreSQL(StorageTestCase):
    @pytest.fixture(scope="class")
    @classmethod
    def empty(cls, postgres: PostgresServer) -> Database:
        """A storage's schema, made once; each test empties its tables first."""
        db = postgres.create_database()
        open_storage(db.url)._backend.engine.dispose()
        return db

    @pytest.fixture
    def storage(self, postgres: PostgresServer, empty: Database) -> Iterator[BufferedStorage]:
        from psycopg import sql

        with postgres.admin(empty.name) as conn:
            tables = [
                row[0]
                for row in conn.execute(
                    "SELECT tablename FROM pg_tables WHERE schemaname = 'public' "
                    "AND tablename NOT IN ('alembic_version', 'version_info')"
                )
            ]
            assert "studies" in tables
            conn.execute(
                sql.SQL("TRUNCATE {} RESTART IDENTITY CASCADE").format(
                    sql.SQL(", ").join(map(sql.Identifier, tables))
                )
            )
        storage = open_storage(empty.url)
        yield storage
        storage._backend.engine.dispose()
