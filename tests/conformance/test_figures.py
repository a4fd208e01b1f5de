"""Conformance of every named figure (``nasmlcn.dashboard.FIGURES``).

The contract (``nasmlcn/dashboard/_figures/_registry.py``): a :class:`FigureSpec` has a
title, a description and a place in the report; ``build(data, compact)`` returns a
plotly figure, or None when the study has nothing to show (a single-objective
study has no Pareto front), never an error; a small multi-objective proxy study
with several epochs per trial has something to show in every figure; figures
saved for optuna-dashboard fit its 450-pixel cells when compact.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import plotly.graph_objects as go
import pytest

from nasmlcn.dashboard import FIGURES, FigureSpec, ReportData, extract_report
from nasmlcn.dashboard._figures import DASHBOARD_HEIGHT
from nasmlcn.search import SearchConfig, run_search
from nasmlcn.study import load_existing_study

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


# -- what a reader sees: axes, colour bars, controls, titles -------


@pytest.fixture(scope="module")
def one_generation(tmp_path_factory: pytest.TempPathFactory) -> ReportData:
    """10 NSGA-II trials (one generation of its population of 50) on one device:
    every trial of generation 0, and placement panels of one device each."""
    return _report(
        tmp_path_factory.mktemp("onegen"),
        trials=10,
        devices="1xK80",
        objectives=("accuracy", "latency"),
        sampler="nsga2",
    )


STUDIES = ["multi", "single", "one_generation"]
DASHBOARD_CELL_WIDTH = 560
"""About the width of a half-width cell of optuna-dashboard, in pixels."""
EXPORT_WIDTH = 1000
"""The width of the PNG/SVG exports in pixels (``export_study``'s ``scale`` 1)."""


def _figures(request: pytest.FixtureRequest, study: str, compact: bool) -> dict[str, go.Figure]:
    data: ReportData = request.getfixturevalue(study)
    built = {n: FIGURES.get(n).build(data, compact) for n in NAMES}
    return {n: f for n, f in built.items() if f is not None}


def _axes(fig: go.Figure, letter: str) -> list[tuple[str, dict[str, Any]]]:
    layout = fig.layout.to_plotly_json()
    return [(k, v) for k, v in layout.items() if k.startswith(f"{letter}axis")]


def _title(axis: dict[str, Any]) -> str:
    return str((axis.get("title") or {}).get("text") or "")


def _plot_size(fig: go.Figure, width: int) -> tuple[float, float]:
    margin = fig.layout.margin
    height = fig.layout.height or 450
    return width - (margin.l or 0) - (margin.r or 0), height - (margin.t or 0) - (margin.b or 0)


@pytest.mark.parametrize("compact", [False, True], ids=["report", "compact"])
@pytest.mark.parametrize("study", STUDIES)
def test_axes_stay_inside_what_their_values_can_be(
    request: pytest.FixtureRequest, study: str, compact: bool
) -> None:
    """An accuracy axis lies inside [0, 1] and a correlation axis inside [-1, 1]
    (set, not left to plotly's autorange, which padded a flat curve to -0.4..1.5);
    the hypervolume axis runs from 0 to its largest possible value and names it."""
    checked = 0
    for name, fig in _figures(request, study, compact).items():
        for key, axis in [*_axes(fig, "x"), *_axes(fig, "y")]:
            title = _title(axis)
            bounds = axis.get("range")
            if "accuracy" in title:
                assert bounds is not None, (name, key, title)
                assert 0.0 <= bounds[0] < bounds[1] <= 1.0, (name, key, bounds)
                checked += 1
            elif "correlation" in title:
                assert bounds is not None
                assert -1.0 <= bounds[0] < bounds[1] <= 1.0, (name, bounds)
            elif "hypervolume" in title:
                assert "unitless" in title, title
                assert bounds is not None
                assert bounds[0] == 0.0
                assert title.endswith(f"max {bounds[1]:.3g})"), (title, bounds)
                assert "reference point" in fig.layout.title.text
    assert checked  # every study here has an accuracy axis


@pytest.mark.parametrize("compact", [False, True], ids=["report", "compact"])
@pytest.mark.parametrize("study", STUDIES)
def test_colour_bars_span_the_values_they_colour(
    request: pytest.FixtureRequest, study: str, compact: bool
) -> None:
    """A colour bar runs from the smallest to the largest value it colours, and no
    bar is drawn for a single value (a one-generation NSGA-II study got -0.4..0.4)."""
    for name, fig in _figures(request, study, compact).items():
        for trace in fig.data:
            marker = getattr(trace, "marker", None)
            if marker is None or not marker.showscale:
                continue
            colours = [c for c in marker.color if isinstance(c, (int, float))]
            assert len(set(colours)) >= 2, (name, trace.name)
            if marker.cmin is not None:
                assert (marker.cmin, marker.cmax) == (min(colours), max(colours)), name


def test_a_one_generation_study_colours_by_trial_without_negative_bars(
    one_generation: ReportData,
) -> None:
    fig = FIGURES.get("pareto_front").build(one_generation, False)
    assert fig is not None
    (dominated,) = [t for t in fig.data if t.name.startswith("dominated")]
    assert dominated.name == "dominated (colour: trial)"
    if dominated.marker.showscale:
        assert dominated.marker.cmin >= 0


@pytest.mark.parametrize("compact", [False, True], ids=["report", "compact"])
@pytest.mark.parametrize("study", STUDIES)
def test_panel_titles_and_axes_do_not_collide(
    request: pytest.FixtureRequest, study: str, compact: bool
) -> None:
    """A panel's title stands clear of the tick labels of the panel above it (40
    pixels: a title line and a line of tick labels), and side-by-side panels leave
    room for the right one's tick labels and axis title (60 pixels)."""
    width = DASHBOARD_CELL_WIDTH if compact else EXPORT_WIDTH
    for name, fig in _figures(request, study, compact).items():
        plot_width, plot_height = _plot_size(fig, width)
        ydomains = [tuple(a["domain"]) for _, a in _axes(fig, "y") if "domain" in a]
        for note in fig.layout.annotations:
            if note.yref != "paper" or note.yanchor != "bottom":
                continue  # not a panel title
            above = [d[0] for d in ydomains if d[0] > note.y + 1e-9]
            if above:
                gap = (min(above) - note.y) * plot_height
                assert gap >= 40, (name, note.text, round(gap))
        xdomains = sorted({tuple(a["domain"]) for _, a in _axes(fig, "x") if "domain" in a})
        for left, right in itertools.pairwise(xdomains):
            if right[0] >= left[1]:  # side by side, not the same column
                gap = (right[0] - left[1]) * plot_width
                shared = name == "param_importances"  # one y axis for all: no labels between
                assert shared or gap >= 60, (name, round(gap))


def test_static_exports_have_no_buttons_or_menus(multi: ReportData) -> None:
    """PNG and SVG are paper: the Pareto front's buttons go (the HTML keeps them)."""
    from nasmlcn.dashboard._export import STATIC_CONTROLS, static_figure

    fig = FIGURES.get("pareto_front").build(multi, False)
    assert fig is not None
    assert fig.layout.updatemenus  # the interactive figure has them
    fig.update_layout(sliders=[{"steps": [{"label": "a"}]}])
    static = static_figure(fig)
    assert not set(STATIC_CONTROLS) & set(static["layout"])
    assert static["data"] == fig.to_plotly_json()["data"]
    assert fig.layout.updatemenus  # the figure itself is unchanged
