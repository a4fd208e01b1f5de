"""Studies made with the proxy evaluator, and one export of them, shared by the tests."""

from __future__ import annotations

import shutil
import warnings
from pathlib import Path
from typing import NamedTuple

import optuna
import pytest

from nasmlcn.dashboard import DashboardObserver
from nasmlcn.search import SearchConfig, run_search
from nasmlcn.study import load_existing_study

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


class Made(NamedTuple):
    url: str
    name: str
    path: Path

    def load(self, *, read_only: bool = True) -> optuna.Study:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return load_existing_study(self.name, self.url, read_only=read_only)


def _make(folder: Path, **kw: object) -> Made:
    path = folder / "studies.db"
    config = SearchConfig(
        **{  # type: ignore[arg-type]
            "evaluator": "proxy",
            "storage": f"sqlite:///{path}",
            "devices": "4xK80",
            "mem": "12GB",
            "epochs": 4,
            "prune": False,  # the tests read every trial's full curve
            **kw,
        }
    )
    result = run_search(config, observers=[DashboardObserver()])  # as the CLI does
    return Made(config.storage, result.study, path)


@pytest.fixture(scope="session")
def pareto_study(tmp_path_factory: pytest.TempPathFactory) -> Made:
    """40 trials, three objectives, NSGA-II, and a latency budget that some miss."""
    return _make(
        tmp_path_factory.mktemp("pareto"),
        trials=40,
        objectives=("accuracy", "latency", "memory"),
        sampler="nsga2",
        latency_budget=0.015,
        study="pareto",
    )


@pytest.fixture(scope="session")
def single_study(tmp_path_factory: pytest.TempPathFactory) -> Made:
    """8 trials, accuracy only."""
    return _make(tmp_path_factory.mktemp("single"), trials=8, study="single")


@pytest.fixture(scope="session")
def exported(pareto_study: Made, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The pareto study exported in every format (one Kaleido session)."""
    from nasmlcn.dashboard import export_study

    out = tmp_path_factory.mktemp("export") / "out"
    export_study(pareto_study.load(), out, storage=pareto_study.url)
    return out


@pytest.fixture(scope="session")
def exported_report(pareto_study: Made, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The pareto study's HTML report alone (what a browser opens: no images)."""
    from nasmlcn.dashboard import export_study

    out = tmp_path_factory.mktemp("report") / "out"
    export_study(pareto_study.load(), out, ["html"], storage=pareto_study.url)
    return out
