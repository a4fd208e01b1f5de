"""Opening storages: driver errors, and read-only opens that never write."""

from __future__ import annotations

import hashlib
import importlib.util
import sqlite3
import warnings
from pathlib import Path

import optuna
import pytest

from nasmlcn._signals import Terminated
from nasmlcn.errors import StorageError
from nasmlcn.search import SearchConfig, run_search
from nasmlcn.study import load_existing_study, open_storage
from tests._postgres import PostgresServer, free_port


def _fingerprint(path: Path) -> tuple[str, int, int]:
    """Content hash, size and modification time of ``path``."""
    stat = path.stat()
    return hashlib.sha256(path.read_bytes()).hexdigest(), stat.st_size, stat.st_mtime_ns


def _foreign_db(path: Path) -> Path:
    """An SQLite file of some other program: a table with rows, no Optuna schema."""
    connection = sqlite3.connect(path)
    connection.execute("CREATE TABLE people (name TEXT, age INTEGER)")
    connection.executemany("INSERT INTO people VALUES (?, ?)", [("ada", 36), ("alan", 41)])
    connection.commit()
    connection.close()
    return path


def test_a_missing_driver_is_one_line_naming_the_package() -> None:
    if importlib.util.find_spec("pg8000") is not None:
        pytest.skip("pg8000 is installed here")
    with pytest.raises(StorageError) as info:
        open_storage("postgresql+pg8000://user:hunter2hunter2@host/db")
    assert str(info.value) == (
        "storage 'postgresql+pg8000://user:***@host/db': the database driver 'pg8000' is not "
        "installed; install it with: pip install pg8000"
    )


def test_an_unknown_database_kind_is_named() -> None:
    with pytest.raises(StorageError, match="SQLAlchemy knows no database 'nosuchdb'"):
        open_storage("nosuchdb://u@h/db")


def test_mysql_urls_as_in_optunas_docs_reach_the_server_with_pymysql() -> None:
    """``mysql://`` (no driver) needs no mysqlclient: the error comes from PyMySQL
    trying to connect (nothing listens on the port), not from a missing driver."""
    if importlib.util.find_spec("MySQLdb") is not None:
        pytest.skip("mysqlclient is installed here, so mysql:// uses it")
    port = free_port()
    with pytest.raises(StorageError) as info:
        open_storage(f"mysql://optuna:s3cret-mysql-pw@127.0.0.1:{port}/optuna")
    message = str(info.value)
    assert message.startswith(f"cannot open storage 'mysql://optuna:***@127.0.0.1:{port}/optuna': ")
    assert "pymysql" in message
    assert "\n" not in message
    assert "s3cret-mysql-pw" not in message


@pytest.mark.parametrize("read_only", [True, False], ids=["read-only", "no-create"])
def test_a_foreign_sqlite_file_is_refused_untouched(tmp_path: Path, read_only: bool) -> None:
    path = _foreign_db(tmp_path / "other.db")
    before, files = _fingerprint(path), sorted(tmp_path.iterdir())
    with pytest.raises(StorageError) as info:
        open_storage(f"sqlite:///{path}", create=False, heartbeat=False, read_only=read_only)
    assert str(info.value) == (
        f"{str(path)!r} is not an Optuna study database (no 'studies' table); nothing was written"
    )
    assert _fingerprint(path) == before
    assert sorted(tmp_path.iterdir()) == files  # no journal or side file either


def test_a_file_that_is_not_sqlite_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "notes.db"
    path.write_text("not a database\n" * 100)
    with pytest.raises(StorageError, match=r"is .* an SQLite database"):
        open_storage(f"sqlite:///{path}", read_only=True)
    assert path.read_text() == "not a database\n" * 100


def test_reading_a_study_leaves_its_file_unchanged(tmp_path: Path) -> None:
    """A nasmlcn study file (WAL journal) read by ``load_existing_study``: same
    bytes, same mtime. (SQLite readers of a WAL database may leave its empty
    ``-wal`` and ``-shm`` side files; the database file itself is not written.)"""
    url = f"sqlite:///{tmp_path / 's.db'}"
    result = run_search(SearchConfig(evaluator="proxy", storage=url, trials=3, epochs=2))
    path = tmp_path / "s.db"
    before = _fingerprint(path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        study = load_existing_study(result.study, url)
    assert len(study.trials) == 3
    assert study.best_trial.user_attrs["lanes"]
    study._storage._backend.engine.dispose()  # type: ignore[attr-defined]
    assert _fingerprint(path) == before


def test_a_read_only_open_keeps_the_journal_mode_and_refuses_writes(tmp_path: Path) -> None:
    """An Optuna database in SQLite's default rollback journal (made by Optuna
    itself): reading it does not switch it to WAL, and a write fails."""
    path = tmp_path / "plain.db"
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    rdb = optuna.storages.RDBStorage(f"sqlite:///{path}")
    plain = optuna.create_study(study_name="plain", storage=rdb)
    plain.optimize(lambda t: t.suggest_float("x", 0, 1), n_trials=2)
    rdb.engine.dispose()
    before = _fingerprint(path)
    storage = open_storage(f"sqlite:///{path}", heartbeat=False, read_only=True)
    study_id = storage.get_study_id_from_name("plain")
    assert len(storage.get_all_trials(study_id)) == 2
    with pytest.raises(optuna.exceptions.StorageInternalError) as info:
        storage._backend.set_study_user_attr(study_id, "x", 1)
    assert "attempt to write a readonly database" in str(info.value.__cause__)
    storage._backend.engine.dispose()
    assert _fingerprint(path) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plain.db"]
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as connection:
        assert connection.execute("PRAGMA journal_mode").fetchone()[0] == "delete"


def test_a_read_only_postgresql_session_refuses_writes(postgres: PostgresServer) -> None:
    db = postgres.create_database()
    run_search(SearchConfig(evaluator="proxy", storage=db.url, trials=1, epochs=1, study="s"))
    # the URL's own libpq options are kept beside the read-only one
    url = f"{db.url}?options=-c%20application_name%3Dnasmlcn-reader"
    storage = open_storage(url, heartbeat=False, read_only=True)
    study_id = storage.get_study_id_from_name("s")
    assert len(storage.get_all_trials(study_id)) == 1
    with pytest.raises(optuna.exceptions.StorageInternalError) as info:
        storage._backend.set_study_user_attr(study_id, "x", 1)
    assert "read-only transaction" in str(info.value.__cause__)
    with storage._backend.engine.connect() as connection:
        assert connection.exec_driver_sql("SHOW application_name").scalar() == "nasmlcn-reader"
    storage._backend.engine.dispose()


def _interrupt_the_next_query(monkeypatch: pytest.MonkeyPatch) -> None:
    """The next ORM query raises KeyboardInterrupt after its statement ran and before
    its rows are read, as a Ctrl-C lands: the statement stays open on its connection."""
    from sqlalchemy.orm import context

    original = context.QueryContext.__init__

    def interrupted(self: object, *args: object, **kwargs: object) -> None:
        monkeypatch.setattr(context.QueryContext, "__init__", original)
        raise KeyboardInterrupt

    monkeypatch.setattr(context.QueryContext, "__init__", interrupted)


def test_a_query_cut_by_ctrl_c_does_not_lock_the_next_write_after_dropping_connections(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Ctrl-C inside a query pinned its connection's snapshot: once another worker
    committed, the stopped trial's write failed at once, "database is locked"."""
    url = f"sqlite:///{tmp_path / 's.db'}"
    mine, other = open_storage(url, heartbeat=False), open_storage(url, heartbeat=False)
    study = optuna.create_study(storage=mine, study_name="s")
    for _ in range(2):
        done = study.ask()
        done.set_user_attr("lanes", "mlcn1:3x3")
        study.tell(done, 0.5)
    trial = study.ask()
    trial.set_user_attr("lanes", "mlcn1:3x3")
    mine.flush()
    _interrupt_the_next_query(monkeypatch)
    # the stop is written down while its traceback (which holds the cursor) lives,
    # as the runner does, in its except block
    with pytest.raises(KeyboardInterrupt) as stop:  # as the pruner reads finished trials
        study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,))
    elsewhere = optuna.load_study(storage=other, study_name="s")
    elsewhere.tell(elsewhere.ask(), 0.7)  # another worker commits meanwhile
    mine.drop_connections()
    trial.set_user_attr("failure", "interrupted")
    study.tell(trial, state=optuna.trial.TrialState.FAIL)
    states = [t.state for t in optuna.load_study(storage=url, study_name="s").trials]
    assert states[2] == optuna.trial.TrialState.FAIL
    assert stop.traceback  # alive until here


def _reset_raises(monkeypatch: pytest.MonkeyPatch, error: BaseException) -> None:
    """The next rollback that resets a connection handed back to its pool raises
    ``error`` (as a stop lands there), then rollbacks work again."""
    from sqlalchemy.dialects.sqlite.base import SQLiteDialect

    original = SQLiteDialect.do_rollback

    def cut(self: object, dbapi_connection: object) -> None:
        monkeypatch.setattr(SQLiteDialect, "do_rollback", original)
        raise error

    monkeypatch.setattr(SQLiteDialect, "do_rollback", cut)


def _pool_errors(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name.startswith("sqlalchemy.pool")]


@pytest.mark.parametrize("stop", [KeyboardInterrupt(), Terminated()], ids=["ctrl-c", "sigterm"])
def test_sqlalchemy_s_report_of_a_cleanup_a_stop_cut_short_is_kept_off_stderr(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    stop: KeyboardInterrupt,
) -> None:
    """A stop inside a pool's reset: SQLAlchemy printed "Exception during reset or
    similar" and a traceback under the run's one-line report of the stop; a cursor
    closed after it, "Error closing cursor". Other errors it reports still show."""
    storage = open_storage(f"sqlite:///{tmp_path / 's.db'}", heartbeat=False)
    engine = storage._backend.engine
    connection = engine.raw_connection()
    connection.cursor().execute("SELECT 1")
    _reset_raises(monkeypatch, stop)
    with pytest.raises(KeyboardInterrupt):
        connection.close()  # handed back: the reset's rollback is cut by the stop
    try:  # a cleanup that fails while the stop is handled is dropped too
        raise stop
    except KeyboardInterrupt:
        engine.pool.logger.error("Error closing cursor", exc_info=True)
    assert _pool_errors(caplog) == []
    connection = engine.raw_connection()
    connection.cursor().execute("SELECT 1")
    _reset_raises(monkeypatch, RuntimeError("disk gone"))
    connection.close()  # not a stop: SQLAlchemy reports it, and goes on
    assert _pool_errors(caplog) == ["Exception during reset or similar"]


def test_optuna_s_schema_scripts_are_read_once_a_process_and_stamp_the_newest_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each open executed Optuna's ~30 alembic migration scripts again (0.04-0.1 s
    of every storage opened), to learn the schema version a new study is stamped with
    and an existing one is checked against."""
    from alembic import util
    from alembic.config import Config
    from alembic.script import ScriptDirectory

    open_storage(f"sqlite:///{tmp_path / 'first.db'}", heartbeat=False)
    loaded: list[str] = []
    load = util.load_python_file

    def counted(directory: str, filename: str) -> object:
        loaded.append(filename)
        return load(directory, filename)

    monkeypatch.setattr(util, "load_python_file", counted)
    for name in ("second", "first"):  # a new file, then the existing one again
        storage = open_storage(f"sqlite:///{tmp_path / name}.db", heartbeat=False)
        optuna.create_study(storage=storage, study_name=f"s-{name}-{len(loaded)}")
    assert loaded == []
    config = Config()  # the scripts read afresh, as Optuna would
    config.set_main_option(
        "script_location", str(Path(optuna.storages.__file__).parent / "_rdb" / "alembic")
    )
    head = ScriptDirectory.from_config(config).get_current_head()
    assert loaded  # that read them
    for name in ("first", "second"):
        with sqlite3.connect(tmp_path / f"{name}.db") as db:
            assert db.execute("SELECT version_num FROM alembic_version").fetchall() == [(head,)]


def test_a_finished_trial_is_read_once_and_a_change_past_optuna_is_read_again(
    tmp_path: Path,
) -> None:
    """The trial a process finished was read whole (six queries) by tell, the
    dashboard note and each repeat lookup: now the first read after it finished is
    kept, and an artifact record removed from it is seen at once."""
    from sqlalchemy import event

    from nasmlcn.study import discard_weights, open_store, storage_of

    storage = open_storage(f"sqlite:///{tmp_path / 's.db'}", heartbeat=False)
    study = optuna.create_study(storage=storage)
    trial = study.ask()
    trial.set_user_attr("weights", {"artifact_id": "w1"})  # as a trial keeping its weights
    storage.set_trial_system_attr(trial._trial_id, "artifacts:w1", '{"artifact_id": "w1"}')
    study.tell(trial, 1.0)
    assert storage_of(study) is storage
    fresh = storage.get_trial(trial._trial_id)  # read from the database, then kept
    statements = []
    engine = storage._backend.engine
    event.listen(engine, "before_cursor_execute", lambda *a: statements.append(a[2]))
    again = storage.get_trial(trial._trial_id)
    assert statements == []
    assert again == fresh
    assert again.state == optuna.trial.TrialState.COMPLETE
    assert "artifacts:w1" in again.system_attrs

    # its weights removed (--keep-weights), as a search does after a trial
    assert discard_weights(study, open_store(tmp_path / "artifacts"), kept=()) == [trial.number]
    assert "artifacts:w1" not in storage.get_trial(trial._trial_id).system_attrs
    assert [t.system_attrs for t in study.get_trials()] == [{}]

    running = study.ask()  # a running trial is read afresh each time
    statements.clear()
    storage.get_trial(running._trial_id)
    assert statements


def test_weights_are_discarded_only_among_the_trials_the_kept_set_was_chosen_from(
    tmp_path: Path,
) -> None:
    """Another worker tells its trials without the storage's lock: a trial it finished
    after the kept set was chosen (from a read where it still ran) must keep its
    weights. A second read lost the weights of the best trial of a 2-worker search."""
    from nasmlcn.study import discard_weights, open_store

    storage = open_storage(f"sqlite:///{tmp_path / 's.db'}", heartbeat=False)
    study = optuna.create_study(storage=storage, direction="maximize")
    store = open_store(tmp_path / "artifacts")
    trial = study.ask()
    trial.set_user_attr("weights", {"artifact_id": "w1"})  # as a trial keeping its weights
    storage.set_trial_system_attr(trial._trial_id, "artifacts:w1", '{"artifact_id": "w1"}')
    snapshot = study.get_trials()  # it runs: no kept set can name it yet
    study.tell(trial, 0.9)  # the other worker finishes it
    assert discard_weights(study, store, kept=(), trials=snapshot) == []
    assert "artifacts:w1" in storage.get_trial(trial._trial_id).system_attrs
    # chosen from a read where it finished, and not kept: its weights go
    assert discard_weights(study, store, kept=(), trials=study.get_trials()) == [trial.number]


def test_retrained_models_stored_side_by_side_are_all_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two ``nasmlcn retrain`` processes on one study store a model each: both stay.
    Each read the study's attribute, added its model and wrote the whole back, and
    the one that wrote second dropped the other's."""
    import threading
    import time

    from nasmlcn.study import RetrainedModel, retrained_models, store_retrained, study_info

    def model(number: int) -> RetrainedModel:
        return RetrainedModel(
            number=number, dataset="synthetic", lanes="2*mlcn1:1x1", test_accuracy=0.5,
            test_loss=0.1, test_images=10, params=5, epochs=1, batch_size=10, lr=1e-3,
            train_images=10, train_images_per_second=1.0, inference_images_per_second=2.0,
            inference_batch_size=10, device="cpu", seconds=1.0, search_accuracy=0.5,
            search_epochs=2,
        )  # fmt: skip

    url = f"sqlite:///{tmp_path / 's.db'}"
    mine, other = open_storage(url, heartbeat=False), open_storage(url, heartbeat=False)
    first = optuna.create_study(storage=mine, study_name="s")
    second = optuna.load_study(study_name="s", storage=other)
    read = threading.Event()
    read_attrs = mine.get_study_user_attrs

    def slow_read(study_id: int) -> dict[str, object]:
        attrs = read_attrs(study_id)
        read.set()  # the first process has what it will add its model to
        time.sleep(1.0)
        return attrs

    monkeypatch.setattr(mine, "get_study_user_attrs", slow_read)
    storing = threading.Thread(target=store_retrained, args=(first, model(1)))
    storing.start()
    assert read.wait(30)
    store_retrained(second, model(2))
    storing.join(30)
    stored = retrained_models(study_info(optuna.load_study(study_name="s", storage=url)))
    assert [m.number for m in stored] == [1, 2]
