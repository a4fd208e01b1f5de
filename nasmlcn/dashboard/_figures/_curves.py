"""Values over time: every objective over the trials, the validation accuracy over
the epochs, and how well early epochs predict the last (NASCaps Table 2)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from nasmlcn.dashboard._extract import ObjectiveHistory, ReportData
from nasmlcn.dashboard._figures._registry import register_figure
from nasmlcn.dashboard._figures._style import (
    ACCURACY,
    DASHBOARD_HEIGHT,
    FEASIBLE_COLOR,
    FRONT_COLOR,
    INFEASIBLE_COLOR,
    LEGEND_BELOW,
    NOT_LEARNING_COLOR,
    accuracy_range,
    axis_title,
    layout,
    not_learning_name,
    pin,
)
from nasmlcn.dashboard._labels import metric_label, metric_unit

if TYPE_CHECKING:
    import plotly.graph_objects as go


# NASCaps Table 2, Fashion-MNIST: Pearson correlation between the accuracy after
# n epochs and after full training; shown next to the study's own correlation.
NASCAPS_FMNIST_PEARSON = {1: 0.83, 5: 0.90, 10: 0.99}


@register_figure(
    "optimization_history",
    "Optimisation history",
    "Each objective of every completed trial in trial order (trials over a budget as grey "
    "crosses, trials that did not learn as orange triangles, at the accuracy axis's lower "
    "edge when below the others), with the best feasible value so far as a red step line.",
    order=30,
)
def plot_optimization_history(data: ReportData, compact: bool = False) -> go.Figure | None:
    from plotly.subplots import make_subplots

    histories = data.histories
    if not histories or not histories[0].numbers:
        return None
    fig = make_subplots(rows=len(histories), cols=1, shared_xaxes=True, vertical_spacing=0.06)
    shown: set[str] = set()
    pinned = _accuracy_pinned(histories)
    for i, h in enumerate(histories):
        _add_history(fig, data, h, i + 1, pinned, shown)
    fig.update_xaxes(title_text="trial", row=len(histories), col=1)
    return layout(fig, "Optimisation history", 80 + 230 * len(histories))


def _accuracy_pinned(histories: Sequence[ObjectiveHistory]) -> bool:
    """Whether any trial that did not learn is drawn at the accuracy axis's edge."""
    pinned = False
    for h in histories:
        if h.name == ACCURACY and h.learned:
            ok = [v for v, learned in zip(h.values, h.learned, strict=True) if learned]
            idle = [v for v, learned in zip(h.values, h.learned, strict=True) if not learned]
            pinned = any(v < accuracy_range(ok, idle)[0] for v in idle)
    return pinned


def _history_styles(data: ReportData, pinned: bool) -> dict[str, tuple[str, dict[str, Any]]]:
    """Legend name and marker of the feasible, infeasible and not-learning trials."""
    return {
        "feasible": ("feasible trial", {"color": FEASIBLE_COLOR, "size": 5, "opacity": 0.6}),
        "infeasible": (
            "infeasible trial (over a budget)",
            {"color": INFEASIBLE_COLOR, "symbol": "x", "size": 5},
        ),
        "idle": (
            not_learning_name(data, pinned),
            {"color": NOT_LEARNING_COLOR, "symbol": "triangle-down", "size": 7},
        ),
    }


def _add_history(
    fig: go.Figure, data: ReportData, h: ObjectiveHistory, row: int, pinned: bool, shown: set[str]
) -> None:
    """Draws one objective's trials and best-so-far line in subplot row ``row``."""
    import plotly.graph_objects as go

    learned = h.learned or (True,) * len(h.numbers)
    groups = {
        "feasible": [j for j, f in enumerate(h.feasible) if f],
        "infeasible": [j for j, f in enumerate(h.feasible) if not f and learned[j]],
        "idle": [j for j, ok in enumerate(learned) if not ok],
    }
    unit = next((r.time_unit for r in data.study.models), "s")
    _, shown_unit, scale = metric_unit(h.name, unit)  # latency_s in ms, as everywhere
    values = [v * scale for v in h.values]
    bounds = None
    if h.name == ACCURACY:
        bounds = accuracy_range(
            [v for v, ok in zip(values, learned, strict=True) if ok],
            [values[j] for j in groups["idle"]],
        )
        fig.update_yaxes(range=list(bounds), row=row, col=1)
    for kind, (name, marker) in _history_styles(data, pinned).items():
        picked = groups[kind]
        if not picked:
            continue
        ys = [values[j] for j in picked]
        fig.add_trace(
            go.Scatter(
                x=[h.numbers[j] for j in picked],
                y=pin(ys, bounds) if bounds else ys,
                customdata=ys,
                mode="markers",
                marker=marker,
                name=name,
                legendgroup=kind,
                showlegend=kind not in shown,  # one legend entry each, not one per row
                cliponaxis=False,
                hovertemplate="trial %{x}: %{customdata:.4g}<extra></extra>",
            ),
            row=row,
            col=1,
        )
        shown.add(kind)
    _add_best_so_far(fig, h, row, scale)
    fig.update_yaxes(
        title_text=axis_title(
            metric_label(h.name, unit) if shown_unit else h.name,
            h.direction,
            data.study.accuracy_is_proxy,
        ),
        row=row,
        col=1,
    )


def _add_best_so_far(fig: go.Figure, h: ObjectiveHistory, row: int, scale: float = 1.0) -> None:
    """Draws the best feasible value so far as a red step line (one legend entry)."""
    import plotly.graph_objects as go

    fig.add_trace(
        go.Scatter(
            x=list(h.numbers),
            y=[None if v is None else v * scale for v in h.best_so_far],
            mode="lines",
            line={"shape": "hv", "color": FRONT_COLOR, "width": 2},
            name="best so far",
            legendgroup="best",
            showlegend=row == 1,
            hovertemplate="best after trial %{x}: %{y:.4g}<extra></extra>",
        ),
        row=row,
        col=1,
    )


@register_figure(
    "epoch_curves",
    "Validation accuracy per epoch",
    "The validation accuracy after every epoch of each completed trial (grey), with the "
    "best trials (Pareto front or top 5) highlighted; trials that did not learn are "
    "orange dots, drawn at the axis's lower edge when below the others.",
    order=70,
)
def plot_epoch_curves(data: ReportData, compact: bool = False) -> go.Figure | None:
    import plotly.graph_objects as go

    curves = [r for r in data.study.complete if r.accuracy_per_epoch]
    if not curves:
        return None
    learned = [r for r in curves if r.learned]
    idle = [r for r in curves if not r.learned]
    bounds = accuracy_range(
        [a for r in learned for a in r.accuracy_per_epoch],
        [a for r in idle for a in r.accuracy_per_epoch],
    )
    fig = go.Figure()
    for rows, name, line in (
        (learned, f"all completed trials ({len(learned)})", "rgba(120,120,120,0.25)"),
        (idle, None, NOT_LEARNING_COLOR),
    ):
        if not rows:
            continue
        xs: list[int | None] = []
        ys: list[float | None] = []
        for r in rows:  # one trace, curves separated by gaps: fast with hundreds of trials
            xs += [*range(1, len(r.accuracy_per_epoch) + 1), None]
            ys += [*pin(r.accuracy_per_epoch, bounds), None]
        pinned = any(a < bounds[0] for r in rows for a in r.accuracy_per_epoch)
        fig.add_trace(
            go.Scatter(
                x=xs,
                y=ys,
                mode="lines" if name else "lines+markers",
                line={"color": line, "width": 1, "dash": "solid" if name else "dot"},
                marker={"size": 4, "color": line},
                name=name or f"{not_learning_name(data, pinned)} ({len(rows)})",
                hoverinfo="skip",
                cliponaxis=False,
            )
        )
    highlight = sorted(
        (r for r in data.best if r.accuracy_per_epoch),
        key=lambda r: -r.accuracy_per_epoch[-1],
    )[:5]
    for r in highlight:
        fig.add_trace(
            go.Scatter(
                x=list(range(1, len(r.accuracy_per_epoch) + 1)),
                y=pin(r.accuracy_per_epoch, bounds),
                customdata=list(r.accuracy_per_epoch),
                mode="lines+markers",
                name=r.label if len(r.label) <= 60 else r.label[:57] + "...",
                hovertemplate="epoch %{x}: %{customdata:.4f}",
                cliponaxis=False,
            )
        )
    fig.update_xaxes(title_text="epoch", dtick=1)
    label = "validation accuracy (proxy)" if data.study.accuracy_is_proxy else "validation accuracy"
    fig.update_yaxes(title_text=label, range=list(bounds))
    entries = len(highlight) + bool(idle)
    return layout(
        fig,
        "Validation accuracy per epoch",
        460 + 20 * entries,
        legend=LEGEND_BELOW,
        bottom=80 + 20 * entries,
    )


@register_figure(
    "epoch_correlation",
    "Early-epoch correlation",
    "For every epoch n, the Pearson and Spearman correlation between the accuracy after n "
    "epochs and after the last one over the completed trials (NASCaps Table 2; "
    "`nasmlcn correlate` prints the same numbers). A high value at small n means "
    "short training ranks architectures as full training does.",
    order=80,
    dashboard=True,
)
def plot_epoch_correlation(data: ReportData, compact: bool = False) -> go.Figure | None:
    import plotly.graph_objects as go

    rows = [c for c in data.correlations if c.trials >= 3]
    if not rows:
        return None
    epochs = [c.epoch for c in rows]
    fig = go.Figure()
    for name, values, color in (
        ("Pearson r", [_finite(c.pearson) for c in rows], FEASIBLE_COLOR),
        ("Spearman ρ", [_finite(c.spearman) for c in rows], FRONT_COLOR),
    ):
        fig.add_trace(
            go.Scatter(
                x=epochs,
                y=values,
                mode="lines+markers",
                name=name,
                line={"color": color},
                hovertemplate=f"epoch %{{x}}: {name} %{{y:.3f}}<extra></extra>",
            )
        )
    reference = {e: v for e, v in NASCAPS_FMNIST_PEARSON.items() if e <= max(epochs)}
    if reference and data.study.record.dataset == "fashion-mnist":
        fig.add_trace(
            go.Scatter(
                x=list(reference),
                y=list(reference.values()),
                mode="markers",
                marker={"symbol": "diamond-open", "size": 10, "color": "black"},
                name="NASCaps Table 2 (Fashion-MNIST, Pearson)",
            )
        )
    fig.update_xaxes(title_text="epoch n", dtick=1)
    # a correlation lies in [-1, 1]; the last epoch's with itself is 1, on the edge
    values = [v for c in rows for v in (c.pearson, c.spearman)]
    lowest = min((v for v in values if v is not None and math.isfinite(v)), default=0.0)
    fig.update_yaxes(
        title_text="correlation with the last epoch", range=[-1.0 if lowest < 0 else 0.0, 1.0]
    )
    fig.update_traces(cliponaxis=False)
    return layout(
        fig,
        "Early-epoch correlation",
        DASHBOARD_HEIGHT if compact else 420,
        f"{rows[0].trials} completed trials",
    )


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None
