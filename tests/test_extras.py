"""The optional extras: the core install leaves out the storage drivers, the live
dashboard, the ONNX exporter and experiment tracking, and what needs one of them
names its extra."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
import tomllib

from nasmlcn.errors import DashboardError, StorageError

ROOT = Path(__file__).resolve().parents[1]
EXTRAS = {
    "postgres": {"psycopg", "psycopg2-binary"},
    "mysql": {"pymysql"},
    "dashboard": {"optuna-dashboard"},
    "onnx": {"onnx", "onnxscript", "onnxruntime"},
    "tracking": {"mlflow-skinny"},
    "analysis": {"pandas"},
}


def _name(requirement: str) -> str:
    """``psycopg[binary]>=3.1`` -> ``psycopg`` (lower case, as pip compares them)."""
    match = re.match(r"[A-Za-z0-9._-]+", requirement)
    assert match is not None, requirement
    return match.group(0).lower()


def test_the_core_install_leaves_each_optional_part_to_its_extra() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    core = {_name(r) for r in project["dependencies"]}
    optional = project["optional-dependencies"]
    for extra, names in EXTRAS.items():
        assert {_name(r) for r in optional[extra]} == names
        assert not names & core
    assert optional["all"] == [f"nasmlcn[{','.join(EXTRAS)}]"]
    # the digits example's scikit-learn: a docs extra, neither core nor in [all] (nor a test's)
    assert {_name(r) for r in optional["docs"]} == {"scikit-learn"}
    assert "scikit-learn" not in core


def test_a_postgresql_url_without_the_driver_names_the_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from nasmlcn.study import open_storage

    monkeypatch.setitem(sys.modules, "psycopg", None)  # as if it were not installed
    with pytest.raises(StorageError) as info:
        open_storage("postgresql://user:hunter2hunter2@127.0.0.1:1/db")
    assert str(info.value) == (
        "storage 'postgresql://user:***@127.0.0.1:1/db': the database driver 'psycopg' is "
        "not installed; install it with: pip install 'nasmlcn[postgres]'"
    )


def test_the_dashboard_without_optuna_dashboard_names_the_extra(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from nasmlcn.dashboard import make_dashboard_server

    monkeypatch.setitem(sys.modules, "optuna_dashboard", None)
    with pytest.raises(DashboardError, match=r"pip install 'nasmlcn\[dashboard\]'"):
        make_dashboard_server(f"sqlite:///{tmp_path / 'none.db'}", port=0)
    assert not (tmp_path / "none.db").exists()  # refused before the storage is opened


def test_tracking_without_mlflow_names_the_extra(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from nasmlcn.errors import TrackingError
    from nasmlcn.search import SearchConfig, run_search
    from nasmlcn.tracking import MlflowObserver

    for name in ("mlflow", "mlflow.tracking"):
        monkeypatch.setitem(sys.modules, name, None)  # as if it were not installed
    storage = tmp_path / "s.db"
    config = SearchConfig(
        evaluator="proxy", trials=1, storage=f"sqlite:///{storage}", mlflow=str(tmp_path / "ml")
    )
    with pytest.raises(TrackingError) as info:  # the tracker the search is handed
        run_search(config, [MlflowObserver(str(config.mlflow))])
    assert str(info.value) == (
        "--mlflow needs MLflow, which is not installed: pip install 'nasmlcn[tracking]' "
        "(or pip install mlflow)"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # refused before the study


def test_a_study_s_trials_come_as_a_dataframe_with_all(tmp_path: Path) -> None:
    # study.trials_dataframe() failed: pandas was in no extra
    import optuna

    from nasmlcn.search import SearchConfig, run_search

    storage = f"sqlite:///{tmp_path / 's.db'}"
    run_search(SearchConfig(evaluator="proxy", trials=3, storage=storage, study="d"))
    frame = optuna.load_study(study_name="d", storage=storage).trials_dataframe()
    assert len(frame) == 3
    assert "user_attrs_lanes" in frame.columns
