"""Trials that did not learn, shown apart: in the search's summary
and in every figure with an accuracy axis, without squeezing that axis.

One real search from the command line: four trials whose learning rate is searched
from 1e-9 to 1e-2 (as ``tests/search/test_learning.py``), so that the trials
trained at a rate near zero stay at chance while the others learn.
"""

from __future__ import annotations

from typing import NamedTuple

import plotly.graph_objects as go
import pytest

from nasmlcn.dashboard import FIGURES, ReportData, accuracy_range, extract_report
from nasmlcn.study import TrialRecord, load_existing_study
from tests.conformance.test_figures import NAMES, _axes, _title
from tests.conftest import lr_space, run_cli


class Searched(NamedTuple):
    stdout: str
    data: ReportData
    idle: dict[int, float]
    """Trials that did not learn: number -> accuracy."""
    learned: dict[int, float]


@pytest.fixture(scope="module")
def searched(tmp_path_factory: pytest.TempPathFactory) -> Searched:
    folder = tmp_path_factory.mktemp("idle")
    space = lr_space(folder)
    storage = f"sqlite:///{folder / 's.db'}"
    result = run_cli(
        "search", "--evaluator", "train", "--devices", "1xK80", "--mem", "12GB",
        "--flops", "0.05x", "--dataset", "synthetic", "--epochs", "2", "--batch-size", "10",
        "--train-limit", "300", "--val-limit", "50", "--sampler", "random", "--seed", "0",
        "--trials", "4", "--objectives", "accuracy,latency", "--space", str(space),
        "--storage", storage, "--study", "s", "--run-on", "cpu", "--quiet",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    study = load_existing_study("s", storage)
    records = [TrialRecord.of(t) for t in study.trials]
    idle = {r.number: r.values[0] for r in records if r.values and not r.learned}
    learned = {r.number: r.values[0] for r in records if r.values and r.learned}
    assert idle, "the study needs trials that did not learn"
    assert learned, "and trials that did"
    return Searched(result.stdout, extract_report(study), idle, learned)


def test_the_search_summary_names_them(searched: Searched) -> None:
    numbers = ", ".join(f"#{n}" for n in sorted(searched.idle))
    trials = "trial" if len(searched.idle) == 1 else "trials"
    line = (
        f"{len(searched.idle)} {trials} did not learn (accuracy below 0.19): {numbers} — "
        "kept in the study, not on the front"
    )
    assert line in searched.stdout, searched.stdout


def test_the_extracted_rows_know_them(searched: Searched) -> None:
    study = searched.data.study
    assert study.learning_threshold == pytest.approx(0.19)
    assert {r.number for r in study.rows if not r.learned} == set(searched.idle)
    assert not any(r.pareto for r in study.rows if not r.learned)


def _idle_trace(fig: go.Figure) -> go.Scatter:
    """The trace of the trials that did not learn on the first accuracy axis (one
    per panel; the first panel's has the legend entry)."""
    traces = [t for t in fig.data if (t.name or "").startswith("did not learn")]
    assert [t.showlegend is not False for t in traces].count(True) == 1
    return traces[0]


@pytest.mark.parametrize("compact", [False, True], ids=["report", "compact"])
@pytest.mark.parametrize(
    "name", ["pareto_front", "optimization_history", "accuracy_vs_latency", "epoch_curves"]
)
def test_figures_show_them_apart_without_squeezing_the_axis(
    searched: Searched, name: str, compact: bool
) -> None:
    """Their own legend entry and marker, apart from trials over a budget; the
    accuracy axis fitted to the trials that learned (inside [0, 1]), the others
    drawn at its lower edge with their true accuracy in the hover data."""
    fig = FIGURES.get(name).build(searched.data, compact)
    assert fig is not None
    trace = _idle_trace(fig)
    assert trace.name.startswith("did not learn (accuracy < 0.19")
    assert trace.showlegend is not False
    assert trace.marker.color == "#ff7f0e"
    others = [
        t
        for t in fig.data
        if t.marker and t.marker.color == trace.marker.color and t.name != trace.name
    ]
    assert not others  # no other kind of trial looks like them
    infeasible = [t for t in fig.data if "infeasible" in (t.name or "")]
    assert all(not t.x or "budget" in t.name for t in infeasible)  # budgets apart
    ranges = [
        a["range"] for _, a in [*_axes(fig, "x"), *_axes(fig, "y")] if "accuracy" in _title(a)
    ]
    assert ranges
    learned = list(searched.learned.values())
    if name == "epoch_curves":
        learned = [
            a for r in searched.data.study.complete if r.learned for a in r.accuracy_per_epoch
        ]
    expected = accuracy_range(learned)
    for bounds in ranges:
        assert tuple(bounds) == pytest.approx(expected)
        assert 0.0 <= bounds[0] < bounds[1] <= 1.0
    if name == "epoch_curves":
        return
    (low, _high) = expected
    drawn = list(trace.x if name == "pareto_front" else trace.y)  # accuracy: x there, y here
    true = list(trace.customdata if name != "pareto_front" else [c[0] for c in trace.customdata])
    assert sorted(true) == pytest.approx(sorted(searched.idle.values()))
    for at, value in zip(drawn, true, strict=True):
        assert at == pytest.approx(max(value, low))


def test_every_figure_keeps_its_axes_inside_zero_and_one(searched: Searched) -> None:
    for name in NAMES:
        fig = FIGURES.get(name).build(searched.data, False)
        if fig is None:
            continue
        for _, axis in [*_axes(fig, "x"), *_axes(fig, "y")]:
            if "accuracy" in _title(axis):
                assert 0.0 <= axis["range"][0] < axis["range"][1] <= 1.0, name
