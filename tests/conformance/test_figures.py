"""Conformance of every named figure (``nasmlcn.dashboard.FIGURES``).

The contract (``nasmlcn/dashboard/_figures.py``): a :class:`FigureSpec` has a
title, a description and a place in the report; ``build(data, compact)`` returns a
plotly figure, or None when the study has nothing to show (a single-objective
study has no Pareto front), never an error; a small multi-objective proxy study
with several epochs per trial has something to show in every figure; figures
saved for optuna-dashboard fit its 450-pixel cells when compact.
"""

from __future__ import annotations

from pathlib import Path

import plotly.graph_objects as go
import pytest

from nasmlcn.dashboard import FIGURES, FigureSpec, ReportData, extract_report
from nasmlcn.dashboard._figures import DASHBOARD_HEIGHT
from nasmlcn.search import SearchConfig, run_search
from nasmlcn.search._study_access import load_existing_study

NAMES = list(FIGURES)


def _report(folder: Path, **kw: object) -> ReportData:
    config = SearchConfig(
        **{  # type: ignore[arg-type]
            "evaluator": "proxy",
            "storage": f"sqlite:///{folder / 's.db'}",
            "devices": "4xK80",
            "mem": "12GB",
            "epochs": 3,
            "prune": False,
            **kw,
        }
    )
    result = run_search(config)
    return extract_report(load_existing_study(result.study, config.storage))


@pytest.fixture(scope="module")
def multi(tmp_path_factory: pytest.TempPathFactory) -> ReportData:
    """8 trials, accuracy and latency, with a latency budget that some miss."""
    return _report(
        tmp_path_factory.mktemp("multi"),
        trials=8,
        objectives=("accuracy", "latency"),
        sampler="random",
        latency_budget=0.02,
    )


@pytest.fixture(scope="module")
def single(tmp_path_factory: pytest.TempPathFactory) -> ReportData:
    """4 trials, accuracy only."""
    return _report(tmp_path_factory.mktemp("single"), trials=4, sampler="random")


@pytest.mark.parametrize("name", NAMES)
def test_entry(name: str) -> None:
    spec = FIGURES.get(name)
    assert isinstance(spec, FigureSpec)
    assert spec.name == name
    assert spec.title
    assert spec.description
    assert isinstance(spec.dashboard, bool)
    assert [FIGURES.get(n).order for n in NAMES].count(spec.order) == 1  # one place each


@pytest.mark.parametrize("compact", [False, True], ids=["report", "compact"])
@pytest.mark.parametrize("name", NAMES)
def test_builds_on_a_small_multi_objective_study(
    name: str, compact: bool, multi: ReportData
) -> None:
    spec = FIGURES.get(name)
    fig = spec.build(multi, compact)
    assert isinstance(fig, go.Figure), f"{name} shows nothing for a multi-objective study"
    assert fig.data, name  # at least one trace
    assert fig.layout.title.text, name
    fig.to_json()  # saved into the study for optuna-dashboard, or written to the report
    if compact and spec.dashboard:
        assert fig.layout.height == DASHBOARD_HEIGHT


@pytest.mark.parametrize("compact", [False, True], ids=["report", "compact"])
@pytest.mark.parametrize("name", NAMES)
def test_a_single_objective_study_builds_or_shows_nothing(
    name: str, compact: bool, single: ReportData
) -> None:
    fig = FIGURES.get(name).build(single, compact)
    assert fig is None or (isinstance(fig, go.Figure) and fig.data)
