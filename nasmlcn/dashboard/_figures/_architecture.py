"""What the best architectures are made of: how much each search-space parameter
explains each objective, and where the best trials' lanes run."""

from __future__ import annotations

from typing import TYPE_CHECKING

from nasmlcn.dashboard._extract import ReportData
from nasmlcn.dashboard._figures._registry import register_figure
from nasmlcn.dashboard._figures._style import (
    DASHBOARD_HEIGHT,
    FEASIBLE_COLOR,
    LEGEND_RIGHT,
    PANEL_GAP_PX,
    layout,
    time_scale,
)

if TYPE_CHECKING:
    import plotly.graph_objects as go


@register_figure(
    "param_importances",
    "Parameter importances",
    "How much each search-space parameter explains each objective (Optuna's default "
    "importance evaluator, PED-ANOVA in Optuna 5; importances of one objective sum to 1).",
    order=40,
)
def plot_param_importances(data: ReportData, compact: bool = False) -> go.Figure | None:
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    imp = data.importances
    if imp.skipped or not imp.params:
        return None
    fig = make_subplots(
        rows=1,
        cols=len(imp.objectives),
        shared_yaxes=True,
        subplot_titles=list(imp.objectives),
        horizontal_spacing=0.03,
    )
    params = list(reversed(imp.params))  # most important on top
    for i, values in enumerate(imp.values):
        lookup = dict(zip(imp.params, values, strict=True))
        fig.add_trace(
            go.Bar(
                x=[lookup[p] for p in params],
                y=params,
                orientation="h",
                marker={"color": FEASIBLE_COLOR},
                showlegend=False,
                name=imp.objectives[i],
                hovertemplate="%{y}: %{x:.3f}<extra></extra>",
            ),
            row=1,
            col=i + 1,
        )
        fig.update_xaxes(
            title_text="importance", range=[0, 1.02], tickvals=[0, 0.5, 1], row=1, col=i + 1
        )
    return layout(fig, "Parameter importances", max(300, 120 + 24 * len(params)))


@register_figure(
    "placement",
    "Lane placement of the best trials",
    "For the best trials (the Pareto front, best first objective first), the predicted "
    "time of one training step on every target device, stacked by the kind of lane "
    "placed there (type:widthxdepth; the bar text is the number of such lanes); the "
    "device labels give the memory used and the device's memory.",
    order=50,
    dashboard=True,
)
def plot_placement(data: ReportData, compact: bool = False) -> go.Figure | None:
    import plotly.graph_objects as go
    from plotly.colors import qualitative
    from plotly.subplots import make_subplots

    from nasmlcn.hardware import format_bytes

    shown = data.placements
    if not shown:
        return None
    if compact:  # a dashboard cell holds the best trial (two when devices are few)
        shown = shown[: 2 if len(shown[0].devices) <= 8 else 1]
    titles = []
    for p in shown:
        imbalance = f", imbalance {p.imbalance:.1%}" if p.imbalance is not None else ""
        width = 34 if compact else 90
        label = p.label if len(p.label) <= width else p.label[: width - 3] + "..."
        titles.append(f"{label} ({p.strategy}{imbalance})")
    devices = max(len(p.devices) for p in shown)
    height = DASHBOARD_HEIGHT if compact else 100 + len(shown) * (60 + 22 * devices)
    # a fixed gap in pixels between panels, for the tick labels of the panel above and
    # the title of the one below (a share of the height, as before, let the title of
    # a one-device panel run into the ticks above it)
    plot_height = height - 70 - 50  # layout's top and bottom margins
    spacing = min(PANEL_GAP_PX / plot_height, 0.5 / max(1, len(shown) - 1))
    fig = make_subplots(rows=len(shown), cols=1, subplot_titles=titles, vertical_spacing=spacing)
    kinds = sorted({g.kind for p in shown for d in p.devices for g in d.groups})
    palette = qualitative.Plotly + qualitative.D3 + qualitative.Set3
    colors = {k: palette[i % len(palette)] for i, k in enumerate(kinds)}
    scale, unit = time_scale(shown[0].time_unit)
    in_legend: set[str] = set()
    for i, p in enumerate(shown):
        labels = []
        for d in p.devices:
            memory = format_bytes(d.memory_bytes)
            if d.memory_limit_bytes:
                memory += f"/{format_bytes(d.memory_limit_bytes)}"
            labels.append(f"{d.name} · {memory}")
        for kind in kinds:
            xs, ys, text = [], [], []
            for d, label in zip(p.devices, labels, strict=True):
                for g in d.groups:
                    if g.kind == kind:
                        xs.append(g.time * scale)
                        ys.append(label)
                        text.append(f"{g.n_lanes}×")
            if not xs:
                continue
            fig.add_trace(
                go.Bar(
                    x=xs,
                    y=ys,
                    text=text,
                    orientation="h",
                    name=kind,
                    legendgroup=kind,
                    showlegend=kind not in in_legend,
                    marker={"color": colors[kind], "line": {"color": "white", "width": 0.5}},
                    textposition="inside",
                    insidetextanchor="middle",
                    hovertemplate=f"{kind}: %{{text}} lanes, %{{x:.3g}} {unit}<extra>%{{y}}</extra>",
                ),
                row=i + 1,
                col=1,
            )
            in_legend.add(kind)
        fig.update_yaxes(
            autorange="reversed", categoryorder="array", categoryarray=labels, row=i + 1, col=1
        )
    fig.update_xaxes(title_text=f"predicted time per training step ({unit})", row=len(shown), col=1)
    fig.update_layout(barmode="stack", uniformtext={"minsize": 8, "mode": "hide"})
    return layout(
        fig,
        "Lane placement of the best trials",
        height,
        legend={**LEGEND_RIGHT, "title": {"text": "lane kind"}},
    )
