"""The batching storage passes Optuna's own storage conformance suite
(``optuna.testing.pytest_storages.StorageTestCase``), on SQLite and on a private
PostgreSQL server: every read sees exactly what Optuna's own storage would."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from optuna.testing.pytest_storages import StorageTestCase

from nasmlcn.study import BufferedStorage, open_storage
from tests._postgres import PostgresServer


class TestBufferedStorageOnSQLite(StorageTestCase):
    @pytest.fixture
    def storage(self, tmp_path: Path) -> Iterator[BufferedStorage]:
        storage = open_storage(f"sqlite:///{tmp_path / 'conformance.db'}")
        yield storage
        storage._backend.engine.dispose()


class TestBufferedStorageOnPostgreSQL(StorageTestCase):
    @pytest.fixture
    def storage(self, postgres: PostgresServer) -> Iterator[BufferedStorage]:
        storage = open_storage(postgres.create_database().url)
        yield storage
        storage._backend.engine.dispose()
