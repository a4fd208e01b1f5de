"""The trade-off between the objectives: the Pareto front, its hypervolume over the
trials, and accuracy against predicted latency."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from nasmlcn.dashboard._extract import HYPERVOLUME_MARGIN, MIB, ReportData, StudyData, TrialRow
from nasmlcn.dashboard._figures._registry import register_figure
from nasmlcn.dashboard._figures._style import (
    ACCURACY,
    DASHBOARD_HEIGHT,
    FRONT_COLOR,
    INFEASIBLE_COLOR,
    LEGEND_BELOW,
    NOT_LEARNING_COLOR,
    accuracy_range,
    axis_title,
    dominated_shade,
    hover_texts,
    layout,
    not_learning_name,
    pin,
    shade_marker,
    time_scale,
)
from nasmlcn.dashboard._labels import metric_label, metric_unit

if TYPE_CHECKING:
    import plotly.graph_objects as go


@register_figure(
    "pareto_front",
    "Pareto front",
    "Every completed trial in each pair of objectives: the feasible Pareto front "
    "(computed over all objectives) in red, dominated feasible trials coloured by the "
    "NSGA-II generation (or trial number) in which they appeared, as in NASCaps Fig. 10, "
    "trials over a budget as grey crosses, and trials that did not learn (accuracy near "
    "chance) as orange triangles, drawn at the accuracy axis's lower edge when they lie "
    "below the trials that learned. The buttons (interactive views only) show or hide "
    "dominated and infeasible trials.",
    order=10,
    dashboard=True,
)
def plot_pareto_front(data: ReportData, compact: bool = False) -> go.Figure | None:
    from plotly.subplots import make_subplots

    study = data.study
    if not study.multi_objective or not study.complete:
        return None
    pairs = list(itertools.combinations(range(len(study.directions)), 2))
    if compact:  # a dashboard cell: the first objective against (at most) two others
        pairs = pairs[: min(2, len(study.directions) - 1)]
    cols = min(3, len(pairs))
    nrows = math.ceil(len(pairs) / cols)
    # room between panels for the next panel's tick labels and axis title (at 0.08 a
    # half-width dashboard cell drew one over the panel beside it)
    fig = make_subplots(
        rows=nrows,
        cols=cols,
        horizontal_spacing=0.16 if compact else 0.1,
        vertical_spacing=0.16,
    )
    front = _split_trials(study)
    kinds: list[str] = []
    for k, (a, b) in enumerate(pairs):
        _add_panel(
            fig, data, front, a, b, row=k // cols + 1, col=k % cols + 1, lines=len(pairs) == 1
        )
        kinds += ["dominated", "infeasible", "idle", "front"]
    fig.update_layout(updatemenus=[_visibility_buttons(kinds)])
    counts = _front_counts(study, front)
    if compact:  # buttons above, legend below: a half-width cell has no room for both
        return layout(
            fig, "Pareto front", DASHBOARD_HEIGHT, counts, top=120, legend=LEGEND_BELOW, bottom=90
        )
    return layout(fig, "Pareto front", 150 + 380 * nrows, counts, top=130)


class _FrontTrials(NamedTuple):
    """The completed trials of the Pareto front figure, in groups, and its axes."""

    models: list[TrialRow]
    front: list[TrialRow]
    dominated: list[TrialRow]
    over_budget: list[TrialRow]
    idle: list[TrialRow]
    shade: list[int]
    shade_name: str
    accuracy: int | None
    """The accuracy objective's index (None when accuracy is no objective)."""
    bounds: tuple[float, float] | None
    pinned: bool
    """Whether a trial that did not learn is drawn at the accuracy axis's edge."""
    scales: list[float]
    labels: list[str]


def _split_trials(study: StudyData) -> _FrontTrials:
    """The study's models grouped (front, dominated, over a budget, did not learn)."""
    names = study.metric_names
    done = study.models  # each model once
    front = sorted((r for r in done if r.pareto), key=lambda r: r.values or ())
    dominated = [r for r in done if r.feasible and not r.pareto]
    over_budget = [r for r in done if not r.feasible and r.learned]
    idle = [r for r in done if not r.learned]
    shade, shade_name = dominated_shade(dominated)
    accuracy = names.index(ACCURACY) if ACCURACY in names else None
    bounds = None
    pinned = False
    if accuracy is not None:
        learned = [r.values[accuracy] for r in done if r.learned and r.values]
        bounds = accuracy_range(learned, [r.values[accuracy] for r in idle if r.values])
        pinned = any(r.values[accuracy] < bounds[0] for r in idle if r.values)
    # each objective in the unit the tables show it in (latency in ms, memory in MiB)
    unit = next((r.time_unit for r in done), "s")
    scales = [metric_unit(n, unit)[2] for n in names]
    labels = [metric_label(n, unit) for n in names]
    return _FrontTrials(
        models=done,
        front=front,
        dominated=dominated,
        over_budget=over_budget,
        idle=idle,
        shade=shade,
        shade_name=shade_name,
        accuracy=accuracy,
        bounds=bounds,
        pinned=pinned,
        scales=scales,
        labels=labels,
    )


def _points(f: _FrontTrials, rows: Sequence[TrialRow], a: int, b: int) -> dict[str, Any]:
    """Scatter arguments of ``rows`` in objectives ``a`` (x) and ``b`` (y)."""
    xs = [r.values[a] * f.scales[a] for r in rows if r.values]
    ys = [r.values[b] * f.scales[b] for r in rows if r.values]
    bounds = f.bounds
    return {
        "x": pin(xs, bounds) if bounds and a == f.accuracy else xs,
        "y": pin(ys, bounds) if bounds and b == f.accuracy else ys,
        # the true values: a pinned point's position is not its value
        "customdata": list(zip(xs, ys, strict=True)),
        "text": hover_texts(rows),
        "hovertemplate": f"%{{text}}<br>{f.labels[a]} %{{customdata[0]:.4g}}"
        f"<br>{f.labels[b]} %{{customdata[1]:.4g}}<extra></extra>",
        "cliponaxis": False,
    }


def _add_panel(
    fig: go.Figure,
    data: ReportData,
    f: _FrontTrials,
    a: int,
    b: int,
    *,
    row: int,
    col: int,
    lines: bool,
) -> None:
    """Draws objective ``a`` against ``b``: the four groups of trials and the axes."""
    first = row == 1 and col == 1
    for trace in _panel_traces(data, f, a, b, first=first, lines=lines):
        fig.add_trace(trace, row=row, col=col)
    study = data.study
    fig.update_xaxes(
        title_text=axis_title(f.labels[a], study.directions[a], study.accuracy_is_proxy),
        range=list(f.bounds) if f.bounds and a == f.accuracy else None,
        row=row,
        col=col,
    )
    fig.update_yaxes(
        title_text=axis_title(f.labels[b], study.directions[b], study.accuracy_is_proxy),
        range=list(f.bounds) if f.bounds and b == f.accuracy else None,
        row=row,
        col=col,
    )


def _panel_traces(
    data: ReportData, f: _FrontTrials, a: int, b: int, *, first: bool, lines: bool
) -> list[go.Scatter]:
    """One panel's traces: dominated, infeasible, did not learn, and the front."""
    import plotly.graph_objects as go

    ordered = sorted(f.front, key=lambda r: r.values[a] if r.values else 0.0)
    return [
        go.Scatter(
            **_points(f, f.dominated, a, b),
            mode="markers",
            name=f"dominated (colour: {f.shade_name})",
            legendgroup="dominated",
            showlegend=first,
            marker=shade_marker(f.shade, f.shade_name, showscale=first),
        ),
        go.Scatter(
            **_points(f, f.over_budget, a, b),
            mode="markers",
            name="infeasible (over a budget)",
            legendgroup="infeasible",
            showlegend=first and bool(f.over_budget),
            marker={"color": INFEASIBLE_COLOR, "symbol": "x", "size": 6},
        ),
        go.Scatter(
            **_points(f, f.idle, a, b),
            mode="markers",
            name=not_learning_name(data, f.pinned),
            legendgroup="idle",
            showlegend=first and bool(f.idle),
            # pointing off the axis edge they are drawn at: lower accuracies lie there
            marker={
                "color": NOT_LEARNING_COLOR,
                "symbol": "triangle-left" if a == f.accuracy else "triangle-down",
                "size": 7,
            },
        ),
        go.Scatter(
            **_points(f, ordered, a, b),
            mode="lines+markers" if lines else "markers",
            line={"color": FRONT_COLOR, "width": 1, "dash": "dot"},
            name=f"Pareto front ({len(f.front)})",
            legendgroup="front",
            showlegend=first,
            marker={"color": FRONT_COLOR, "size": 9, "line": {"color": "black", "width": 0.5}},
        ),
    ]


def _visibility_buttons(kinds: Sequence[str]) -> dict[str, Any]:
    """The buttons that show or hide dominated and infeasible trials (per trace kind)."""

    def visible(*hidden: str) -> list[bool]:
        return [kind not in hidden for kind in kinds]

    return {
        "type": "buttons",
        "direction": "right",
        "x": 0.0,
        "xanchor": "left",
        "y": 1.02,
        "yanchor": "bottom",
        "pad": {"t": 0, "b": 0},
        "buttons": [
            {"label": "all trials", "method": "restyle", "args": [{"visible": visible()}]},
            {
                "label": "hide dominated",
                "method": "restyle",
                "args": [{"visible": visible("dominated")}],
            },
            {
                "label": "feasible front only",
                "method": "restyle",
                "args": [{"visible": visible("dominated", "infeasible", "idle")}],
            },
        ],
    }


def _front_counts(study: StudyData, f: _FrontTrials) -> str:
    """The subtitle: how many trials are complete, over a budget, idle, on the front."""
    idle_count = f"{len(f.idle)} did not learn, " if f.idle else ""
    # the tables count complete trials; a repeat is its original's point, drawn once
    repeats = len(study.complete) - len(f.models)
    models = f" ({len(f.models)} models, {repeats} repeats)" if repeats else ""
    return (
        f"{len(study.complete)} complete trials{models}, {len(f.over_budget)} over a budget, "
        f"{idle_count}{len(f.front)} on the front"
    )


@register_figure(
    "hypervolume_history",
    "Hypervolume history",
    "Hypervolume of the feasible Pareto front after each completed trial (optuna-dashboard "
    "has no view of its own). Objectives are scaled to [0, 1] between the best and worst "
    "feasible values of the study; the reference point is the worst value plus 10% of the "
    "range in every objective, so the largest possible value is 1.1^(number of objectives).",
    order=20,
    dashboard=True,
)
def plot_hypervolume(data: ReportData, compact: bool = False) -> go.Figure | None:
    import plotly.graph_objects as go

    hv = data.hypervolume
    if hv is None:
        return None
    fig = go.Figure(
        go.Scatter(
            x=list(hv.numbers),
            y=list(hv.values),
            mode="lines",
            line={"shape": "hv", "color": FRONT_COLOR, "width": 2},
            cliponaxis=False,
            name="hypervolume",
            hovertemplate="after trial %{x}: %{y:.4f}<extra></extra>",
        )
    )
    fig.update_xaxes(title_text="trial")
    upper = (1 + HYPERVOLUME_MARGIN) ** len(hv.reference_point)
    # a volume in objectives scaled to [0, 1]: no unit; the axis says so, and where
    # it ends (the reference point, given in the objectives' own units below)
    fig.update_yaxes(
        title_text=f"hypervolume (unitless, max {upper:.3g})",
        range=[0, upper],
    )
    unit = next((r.time_unit for r in data.study.models), "s")
    reference = ", ".join(
        f"{metric_label(n, unit)} {v * metric_unit(n, unit)[2]:.4g}".replace(" ", "\u00a0")
        for n, v in zip(data.study.metric_names, hv.reference_point, strict=False)
    )
    subtitle = (
        f"objectives scaled to [0, 1] between the best and worst feasible value; "
        f"reference point (worst + {HYPERVOLUME_MARGIN:.0%} of the range): {reference}"
    )
    final = f"final {hv.values[-1]:.4f}; " if hv.values else ""
    return layout(
        fig,
        "Hypervolume history",
        DASHBOARD_HEIGHT if compact else 420,
        final + subtitle,
    )


@register_figure(
    "accuracy_vs_latency",
    "Accuracy vs predicted latency",
    "Accuracy of every completed trial against its predicted step latency on the target "
    "devices, coloured by predicted peak memory per device; Pareto-front trials have a "
    "black outline, trials over a budget are crosses, and trials that did not learn are "
    "orange triangles (at the accuracy axis's lower edge when below the others).",
    order=60,
    dashboard=True,
)
def plot_accuracy_vs_latency(data: ReportData, compact: bool = False) -> go.Figure | None:
    import plotly.graph_objects as go

    study = data.study
    rows = [r for r in study.models if r.latency is not None and _accuracy(study, r) is not None]
    if not rows:
        return None
    scale, unit = time_scale(rows[0].time_unit)
    learned = [r for r in rows if r.learned]
    idle = [r for r in rows if not r.learned]

    def accuracies(rows: Sequence[TrialRow]) -> list[float]:
        return [a for a in (_accuracy(study, r) for r in rows) if a is not None]

    bounds = accuracy_range(accuracies(learned), accuracies(idle))
    devices = data.study.target_devices
    fig = go.Figure(
        go.Scatter(
            x=[(r.latency or 0.0) * scale for r in learned],
            y=accuracies(learned),
            mode="markers",
            text=hover_texts(learned),
            customdata=[(r.peak_memory_bytes or 0.0) / MIB for r in learned],
            hovertemplate=(
                "%{text}<br>latency %{x:.4g} " + unit + "<br>accuracy %{y:.4f}"
                "<br>memory %{customdata:.4g} MiB<extra></extra>"
            ),
            marker={
                "color": [(r.peak_memory_bytes or 0.0) / MIB for r in learned],
                "colorscale": "Plasma",
                "colorbar": {"title": {"text": "peak memory (MiB)"}, "thickness": 12},
                "size": [10 if r.pareto else 7 for r in learned],
                "symbol": ["circle" if r.feasible else "x" for r in learned],
                "line": {
                    "color": "black",
                    "width": [1.5 if r.pareto else 0 for r in learned],
                },
                "opacity": 0.85,
            },
            name="trials",
            showlegend=bool(idle),
            cliponaxis=False,
        )
    )
    if idle:
        true = accuracies(idle)
        fig.add_trace(
            go.Scatter(
                x=[(r.latency or 0.0) * scale for r in idle],
                y=pin(true, bounds),
                customdata=true,
                text=hover_texts(idle),
                mode="markers",
                marker={"color": NOT_LEARNING_COLOR, "symbol": "triangle-down", "size": 8},
                name=not_learning_name(data, any(a < bounds[0] for a in true)),
                hovertemplate="%{text}<br>latency %{x:.4g} "
                + unit
                + "<br>accuracy %{customdata:.4f}<extra></extra>",
                cliponaxis=False,
            )
        )
    where = f" on {devices}" if devices else ""
    fig.update_xaxes(title_text=f"predicted lanes' training step (makespan){where} ({unit}) ↓")
    fig.update_yaxes(
        title_text="accuracy (proxy) ↑" if study.accuracy_is_proxy else "accuracy ↑",
        range=list(bounds),
    )
    return layout(
        fig,
        "Accuracy vs predicted latency (colour: peak memory)",
        DASHBOARD_HEIGHT if compact else 480,
        legend=LEGEND_BELOW if idle else None,
        bottom=90 if idle else 50,
    )


def _accuracy(study: Any, row: TrialRow) -> float | None:
    if "accuracy" in study.metric_names and row.values is not None:
        return row.values[study.metric_names.index("accuracy")]
    if row.accuracy_per_epoch:
        return row.accuracy_per_epoch[-1]
    return None
