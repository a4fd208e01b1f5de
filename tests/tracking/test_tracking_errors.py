"""A tracking URI MLflow cannot open is one line, exit 2, before any study is made:
checked without MLflow where the URI alone shows it (a scheme with no store, a
bare ``*.db`` name, no host), and by opening the store where only MLflow can tell
(no server answers, a folder that cannot be made)."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import pytest

from nasmlcn.errors import NasmlcnError, TrackingError
from nasmlcn.search import SearchConfig, run_search
from tests.conftest import run_cli
from tests.tracking._tracked import tracked_search, tracked_workers

ACCEPTED = "give a folder, sqlite:///mlflow.db, or a tracking server's http(s)://host:port address"


@pytest.mark.parametrize(
    ("uri", "message"),
    [
        (
            "bogus://x",
            f"--mlflow 'bogus://x': MLflow has no tracking store for bogus://; {ACCEPTED}",
        ),
        (
            "mlflow.db",
            "--mlflow 'mlflow.db' would be a folder to MLflow; for a SQLite database write "
            "sqlite:///mlflow.db",
        ),
        ("http://", f"--mlflow 'http://' names no host; {ACCEPTED}"),
        ("  ", f"--mlflow is empty: {ACCEPTED}"),
        (
            "https://user:hunter2hunter2@host:1/x",  # checked, and the password hidden
            None,
        ),
    ],
)
def test_a_uri_mlflow_cannot_open_is_refused_by_the_config(uri: str, message: str | None) -> None:
    if message is None:
        assert SearchConfig(mlflow=uri).mlflow == uri
        assert "hunter2" not in str(SearchConfig(mlflow=uri).to_dict())
        return
    with pytest.raises(TrackingError) as info:
        SearchConfig(mlflow=uri)
    assert info.value.for_cli() == message
    assert str(info.value) == message.replace("--mlflow", "mlflow")  # a library caller's word


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _search(tmp_path: Path, *extra: str) -> tuple[int, str, float]:
    started = time.perf_counter()
    done = run_cli(
        "search", "--evaluator", "proxy", "--devices", "2xK80", "--mem", "12GB",
        "--trials", "1", "--epochs", "1", "--storage", f"sqlite:///{tmp_path / 's.db'}",
        "--quiet", *extra, cwd=tmp_path,
    )  # fmt: skip
    return done.returncode, done.stderr, time.perf_counter() - started


def test_no_server_at_the_address_is_one_line_in_seconds(tmp_path: Path) -> None:
    port = _closed_port()
    code, stderr, seconds = _search(tmp_path, "--mlflow", f"http://127.0.0.1:{port}")
    assert code == 2
    assert stderr == (
        f"error: --mlflow 'http://127.0.0.1:{port}': no MLflow tracking server answered "
        "([Errno 111] Connection refused); start one (mlflow server --port PORT) or give a "
        "folder or sqlite:///mlflow.db\n"
    )
    assert seconds < 60  # MLflow's own retries take four minutes
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # no study, no store


def test_a_folder_that_cannot_be_made_and_a_bad_recipe_value(tmp_path: Path) -> None:
    code, stderr, _ = _search(tmp_path, "--mlflow", "/proc/nope")
    assert code == 2
    assert stderr == (
        "error: --mlflow '/proc/nope': MLflow cannot open it: [Errno 2] No such file or "
        "directory: '/proc/nope'\n"
    )
    recipe = tmp_path / "r.toml"
    recipe.write_text('mlflow = "bogus://x"\n')
    code, stderr, _ = _search(tmp_path, "--config", str(recipe))
    assert code == 2
    assert stderr.startswith("error: ")
    assert "MLflow has no tracking store for bogus://" in stderr
    assert stderr.count("\n") == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.toml"]


def _one_trial(tmp_path: Path, mlflow: str, **kw: str) -> SearchConfig:
    """A one-trial proxy search into ``tmp_path/s.db`` that tracks to ``mlflow``."""
    return SearchConfig(
        evaluator="proxy",
        devices="2xK80",
        mem="12GB",
        trials=1,
        epochs=1,
        storage=f"sqlite:///{tmp_path / 's.db'}",
        mlflow=mlflow,
        **kw,  # type: ignore[arg-type]
    )


def test_the_library_refuses_before_the_study_is_made(tmp_path: Path) -> None:
    storage = tmp_path / "s.db"
    config = _one_trial(tmp_path, f"http://127.0.0.1:{_closed_port()}")
    with pytest.raises(NasmlcnError, match="no MLflow tracking server answered"):
        tracked_search(config)
    assert not storage.exists()


def test_a_bad_configuration_opens_no_tracking_store(tmp_path: Path) -> None:
    """The settings are checked before MLflow's store is opened (or made): a search
    that is refused leaves no mlflow.db behind, in one process or with workers."""

    tracking = tmp_path / "mlflow.db"
    config = _one_trial(
        tmp_path, f"sqlite:///{tracking}", space=str(tmp_path / "no-such-space.toml")
    )
    with pytest.raises(NasmlcnError, match=r"no-such-space\.toml"):
        tracked_search(config)
    with pytest.raises(NasmlcnError, match=r"no-such-space\.toml"):
        tracked_workers(config, workers=2)
    assert not tracking.exists()
    assert not (tmp_path / "s.db").exists()


def test_a_tracker_asked_for_and_not_given_is_refused(tmp_path: Path) -> None:
    """The search makes no tracker of its own: ``SearchConfig.mlflow`` without an
    observer logging there is refused in one line, before anything is written."""
    config = _one_trial(tmp_path, f"sqlite:///{tmp_path / 'mlflow.db'}")
    with pytest.raises(NasmlcnError, match="no tracker watches this search") as refused:
        run_search(config)
    assert refused.value.for_cli().startswith("--mlflow ")
    assert not (tmp_path / "s.db").exists()
    assert not (tmp_path / "mlflow.db").exists()
