"""The named figures of the report and the dashboard (plotly).

Each figure is a :class:`FigureSpec` in the ``FIGURES`` registry: a name, a
title, a sentence saying what it shows (``dashboards/README.md`` and the report
print it), and a builder from :class:`~nasmlcn.dashboard.ReportData` to a plotly
figure, or None when the study has nothing to show (a single-objective study
has no Pareto front). Figures marked ``dashboard`` are also saved into the study
for optuna-dashboard, which has its own history and importance views.

Builders read only the extracted data; all plotly imports happen when a figure
is built.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from nasmlcn.dashboard._extract import HYPERVOLUME_MARGIN, MIB, ReportData, TrialRow
from nasmlcn.registry import Registry

if TYPE_CHECKING:
    import plotly.graph_objects as go

FRONT_COLOR = "#d62728"
FEASIBLE_COLOR = "#1f77b4"
INFEASIBLE_COLOR = "#9e9e9e"
TEMPLATE = "plotly_white"
WIDTH = 1000
"""Width of the PNG/SVG exports in pixels (heights depend on the figure)."""

# NASCaps Table 2, Fashion-MNIST: Pearson correlation between the accuracy after
# n epochs and after full training; shown next to the study's own correlation.
NASCAPS_FMNIST_PEARSON = {1: 0.83, 5: 0.90, 10: 0.99}


Builder = Callable[[ReportData, bool], "go.Figure | None"]
"""``build(data, compact)``: a figure, or None when the study has nothing to show."""


@dataclass(frozen=True)
class FigureSpec:
    """One named figure.

    Attributes:
        name: Registry name, file stem of its PNG/SVG and HTML anchor.
        title: Title shown above the figure.
        description: What the figure shows, in one or two sentences.
        build: Builds the figure (``compact``: for a 450-pixel-high, half-width cell
            of optuna-dashboard), or returns None when there is nothing to show.
        dashboard: Also saved into the study for optuna-dashboard.
        order: Position in the report.
    """

    name: str
    title: str
    description: str
    build: Builder
    dashboard: bool
    order: int


FIGURES: Registry[FigureSpec] = Registry("figure")
DASHBOARD_HEIGHT = 440
"""optuna-dashboard draws saved figures in 450-pixel-high cells."""


def _figure(
    name: str, title: str, description: str, *, order: int, dashboard: bool = False
) -> Callable[[Builder], Builder]:
    def register(build: Builder) -> Builder:
        FIGURES.register(name, FigureSpec(name, title, description, build, dashboard, order))
        return build

    return register


def figure_specs() -> list[FigureSpec]:
    """Every registered figure, in report order."""
    return sorted((FIGURES.get(n) for n in FIGURES.names()), key=lambda s: s.order)


def build_figures(
    data: ReportData, names: Sequence[str] | None = None, *, compact: bool = False
) -> dict[str, go.Figure]:
    """Builds the figures called ``names`` (default: all), in report order; figures
    with nothing to show are left out."""
    specs = figure_specs() if names is None else [FIGURES.get(n) for n in names]
    out = {}
    for spec in specs:
        fig = spec.build(data, compact)
        if fig is not None:
            out[spec.name] = fig
    return out


def dashboard_figures(data: ReportData) -> dict[str, go.Figure]:
    """The figures nasmlcn saves into a study for optuna-dashboard (compact)."""
    return build_figures(data, [s.name for s in figure_specs() if s.dashboard], compact=True)


# -- helpers ------------------------------------------------------------------


LEGEND_TOP = {"orientation": "h", "yanchor": "bottom", "y": 1.0, "x": 1, "xanchor": "right"}
LEGEND_RIGHT = {"orientation": "v", "yanchor": "top", "y": 1.0, "x": 1.02, "xanchor": "left"}
LEGEND_BELOW = {"orientation": "h", "yanchor": "top", "y": -0.2, "x": 0, "xanchor": "left"}


def _layout(
    fig: go.Figure,
    title: str,
    height: int,
    subtitle: str | None = None,
    *,
    legend: dict[str, Any] | None = None,
    top: int | None = None,
    bottom: int = 50,
) -> go.Figure:
    text = title if not subtitle else f"{title}<br><sup>{subtitle}</sup>"
    fig.update_layout(
        title={"text": text, "x": 0.01, "xanchor": "left"},
        template=TEMPLATE,
        height=height,
        margin={"l": 70, "r": 30, "t": top or (90 if subtitle else 70), "b": bottom},
        legend=legend or LEGEND_TOP,
        hoverlabel={"namelength": -1},
    )
    return fig


def _arrow(direction: str) -> str:
    return "↑" if direction == "maximize" else "↓"


def _axis_title(name: str, direction: str, proxy: bool) -> str:
    label = f"{name} (proxy)" if proxy and name == "accuracy" else name
    return f"{label} {_arrow(direction)}"


def _ms(unit: str) -> tuple[float, str]:
    """Scale and label for times: seconds are shown in milliseconds."""
    return (1e3, "ms") if unit == "s" else (1.0, unit)


def _hover(rows: Sequence[TrialRow]) -> list[str]:
    return [r.label for r in rows]


def dominated_shade(rows: Sequence[TrialRow]) -> tuple[list[int], str]:
    """The colour values of dominated trials and what they are.

    NSGA-II generations when the trials span more than one (one generation, as in
    a study shorter than NSGA-II's population, would colour every point alike);
    trial numbers otherwise.
    """
    generations = {r.generation for r in rows if r.generation is not None}
    if len(generations) > 1:
        return [r.number if r.generation is None else r.generation for r in rows], "generation"
    return [r.number for r in rows], "trial"


# -- figures ------------------------------------------------------------------


@_figure(
    "pareto_front",
    "Pareto front",
    "Every completed trial in each pair of objectives: the feasible Pareto front "
    "(computed over all objectives) in red, dominated feasible trials coloured by the "
    "NSGA-II generation (or trial number) in which they appeared, as in NASCaps Fig. 10, "
    "and infeasible trials as grey crosses. The buttons show or hide dominated and "
    "infeasible trials.",
    order=10,
    dashboard=True,
)
def pareto_front(data: ReportData, compact: bool = False) -> go.Figure | None:
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    study = data.study
    if not study.multi_objective or not study.complete:
        return None
    names, directions = study.metric_names, study.directions
    pairs = list(itertools.combinations(range(len(directions)), 2))
    if compact:  # a dashboard cell: the first objective against (at most) two others
        pairs = pairs[: min(2, len(directions) - 1)]
    cols = min(3, len(pairs))
    nrows = math.ceil(len(pairs) / cols)
    fig = make_subplots(rows=nrows, cols=cols, horizontal_spacing=0.08, vertical_spacing=0.14)
    done = study.complete
    front = sorted((r for r in done if r.pareto), key=lambda r: r.values or ())
    dominated = [r for r in done if r.feasible and not r.pareto]
    infeasible = [r for r in done if not r.feasible]
    shade, shade_name = dominated_shade(dominated)
    kinds: list[str] = []
    for k, (a, b) in enumerate(pairs):
        row, col = k // cols + 1, k % cols + 1
        first = k == 0

        def xy(rows: Sequence[TrialRow], a: int = a, b: int = b) -> dict[str, Any]:
            return {
                "x": [r.values[a] for r in rows if r.values],
                "y": [r.values[b] for r in rows if r.values],
                "text": _hover(rows),
                "hovertemplate": f"%{{text}}<br>{names[a]} %{{x:.4g}}<br>{names[b]} %{{y:.4g}}",
            }

        fig.add_trace(
            go.Scatter(
                **xy(dominated),
                mode="markers",
                name=f"dominated (colour: {shade_name})",
                legendgroup="dominated",
                showlegend=first,
                marker={
                    "color": shade,
                    "colorscale": "Viridis",
                    "size": 6,
                    "opacity": 0.75,
                    "showscale": first,
                    "colorbar": {"title": {"text": shade_name}, "thickness": 12, "len": 0.6},
                },
            ),
            row=row,
            col=col,
        )
        fig.add_trace(
            go.Scatter(
                **xy(infeasible),
                mode="markers",
                name="infeasible",
                legendgroup="infeasible",
                showlegend=first,
                marker={"color": INFEASIBLE_COLOR, "symbol": "x", "size": 6},
            ),
            row=row,
            col=col,
        )
        ordered = sorted(front, key=lambda r: r.values[a] if r.values else 0.0)
        fig.add_trace(
            go.Scatter(
                **xy(ordered),
                mode="lines+markers" if len(pairs) == 1 else "markers",
                line={"color": FRONT_COLOR, "width": 1, "dash": "dot"},
                name=f"Pareto front ({len(front)})",
                legendgroup="front",
                showlegend=first,
                marker={
                    "color": FRONT_COLOR,
                    "size": 9,
                    "line": {"color": "black", "width": 0.5},
                },
            ),
            row=row,
            col=col,
        )
        kinds += ["dominated", "infeasible", "front"]
        fig.update_xaxes(
            title_text=_axis_title(names[a], directions[a], study.accuracy_is_proxy),
            row=row,
            col=col,
        )
        fig.update_yaxes(
            title_text=_axis_title(names[b], directions[b], study.accuracy_is_proxy),
            row=row,
            col=col,
        )

    def visible(*hidden: str) -> list[bool]:
        return [kind not in hidden for kind in kinds]

    fig.update_layout(
        updatemenus=[
            {
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
                        "args": [{"visible": visible("dominated", "infeasible")}],
                    },
                ],
            }
        ]
    )
    counts = (
        f"{len(done)} completed trials, {len(infeasible)} infeasible, {len(front)} on the front"
    )
    if compact:  # buttons above, legend below: a half-width cell has no room for both
        return _layout(
            fig, "Pareto front", DASHBOARD_HEIGHT, counts, top=120, legend=LEGEND_BELOW, bottom=90
        )
    return _layout(fig, "Pareto front", 150 + 380 * nrows, counts, top=130)


@_figure(
    "hypervolume_history",
    "Hypervolume history",
    "Hypervolume of the feasible Pareto front after each completed trial (optuna-dashboard "
    "has no view of its own). Objectives are scaled to [0, 1] between the best and worst "
    "feasible values of the study; the reference point is the worst value plus 10% of the "
    "range in every objective, so the largest possible value is 1.1^(number of objectives).",
    order=20,
    dashboard=True,
)
def hypervolume(data: ReportData, compact: bool = False) -> go.Figure | None:
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
            name="hypervolume",
            hovertemplate="after trial %{x}: %{y:.4f}<extra></extra>",
        )
    )
    fig.update_xaxes(title_text="trial")
    upper = (1 + HYPERVOLUME_MARGIN) ** len(hv.reference_point)
    fig.update_yaxes(title_text=f"hypervolume (scaled; at most {upper:.3g})", rangemode="tozero")
    reference = ", ".join(
        f"{n} {v:.4g}" for n, v in zip(data.study.metric_names, hv.reference_point, strict=False)
    )
    return _layout(
        fig,
        "Hypervolume history",
        DASHBOARD_HEIGHT if compact else 420,
        f"final {hv.values[-1]:.4f}; reference point: {reference}" if hv.values else None,
    )


@_figure(
    "optimization_history",
    "Optimisation history",
    "Each objective of every completed trial in trial order (infeasible trials as grey "
    "crosses), with the best feasible value so far as a red step line.",
    order=30,
)
def optimization_history(data: ReportData, compact: bool = False) -> go.Figure | None:
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    histories = data.histories
    if not histories or not histories[0].numbers:
        return None
    fig = make_subplots(rows=len(histories), cols=1, shared_xaxes=True, vertical_spacing=0.06)
    for i, h in enumerate(histories):
        row = i + 1
        ok = [j for j, f in enumerate(h.feasible) if f]
        bad = [j for j, f in enumerate(h.feasible) if not f]
        fig.add_trace(
            go.Scatter(
                x=[h.numbers[j] for j in ok],
                y=[h.values[j] for j in ok],
                mode="markers",
                marker={"color": FEASIBLE_COLOR, "size": 5, "opacity": 0.6},
                name="feasible trial",
                legendgroup="feasible",
                showlegend=i == 0,
                hovertemplate="trial %{x}: %{y:.4g}<extra></extra>",
            ),
            row=row,
            col=1,
        )
        if bad:
            fig.add_trace(
                go.Scatter(
                    x=[h.numbers[j] for j in bad],
                    y=[h.values[j] for j in bad],
                    mode="markers",
                    marker={"color": INFEASIBLE_COLOR, "symbol": "x", "size": 5},
                    name="infeasible trial",
                    legendgroup="infeasible",
                    showlegend=True,
                    hovertemplate="trial %{x}: %{y:.4g}<extra></extra>",
                ),
                row=row,
                col=1,
            )
        fig.add_trace(
            go.Scatter(
                x=list(h.numbers),
                y=list(h.best_so_far),
                mode="lines",
                line={"shape": "hv", "color": FRONT_COLOR, "width": 2},
                name="best so far",
                legendgroup="best",
                showlegend=i == 0,
                hovertemplate="best after trial %{x}: %{y:.4g}<extra></extra>",
            ),
            row=row,
            col=1,
        )
        fig.update_yaxes(
            title_text=_axis_title(h.name, h.direction, data.study.accuracy_is_proxy),
            row=row,
            col=1,
        )
    fig.update_xaxes(title_text="trial", row=len(histories), col=1)
    return _layout(fig, "Optimisation history", 80 + 230 * len(histories))


@_figure(
    "param_importances",
    "Parameter importances",
    "How much each search-space parameter explains each objective (Optuna's default "
    "importance evaluator, PED-ANOVA in Optuna 5; importances of one objective sum to 1).",
    order=40,
)
def param_importances(data: ReportData, compact: bool = False) -> go.Figure | None:
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
    return _layout(fig, "Parameter importances", max(300, 120 + 24 * len(params)))


@_figure(
    "placement",
    "Lane placement of the best trials",
    "For the best trials (the Pareto front, best first objective first), the predicted "
    "time of one training step on every target device, stacked by the kind of lane "
    "placed there (type:widthxdepth; the bar text is the number of such lanes); the "
    "device labels give the memory used and the device's memory.",
    order=50,
    dashboard=True,
)
def placement(data: ReportData, compact: bool = False) -> go.Figure | None:
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
    fig = make_subplots(
        rows=len(shown), cols=1, subplot_titles=titles, vertical_spacing=0.3 / len(shown)
    )
    kinds = sorted({g.kind for p in shown for d in p.devices for g in d.groups})
    palette = qualitative.Plotly + qualitative.D3 + qualitative.Set3
    colors = {k: palette[i % len(palette)] for i, k in enumerate(kinds)}
    scale, unit = _ms(shown[0].time_unit)
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
    devices = max(len(p.devices) for p in shown)
    return _layout(
        fig,
        "Lane placement of the best trials",
        DASHBOARD_HEIGHT if compact else 100 + len(shown) * (60 + 22 * devices),
        legend={**LEGEND_RIGHT, "title": {"text": "lane kind"}},
    )


@_figure(
    "accuracy_vs_latency",
    "Accuracy vs predicted latency",
    "Accuracy of every completed trial against its predicted step latency on the target "
    "devices, coloured by predicted peak memory per device; Pareto-front trials have a "
    "black outline and infeasible trials are crosses.",
    order=60,
    dashboard=True,
)
def accuracy_vs_latency(data: ReportData, compact: bool = False) -> go.Figure | None:
    import plotly.graph_objects as go

    study = data.study
    rows = [r for r in study.complete if r.latency is not None and _accuracy(study, r) is not None]
    if not rows:
        return None
    scale, unit = _ms(rows[0].time_unit)
    fig = go.Figure(
        go.Scatter(
            x=[(r.latency or 0.0) * scale for r in rows],
            y=[_accuracy(study, r) for r in rows],
            mode="markers",
            text=_hover(rows),
            customdata=[(r.peak_memory_bytes or 0.0) / MIB for r in rows],
            hovertemplate=(
                "%{text}<br>latency %{x:.4g} " + unit + "<br>accuracy %{y:.4f}"
                "<br>memory %{customdata:.4g} MiB<extra></extra>"
            ),
            marker={
                "color": [(r.peak_memory_bytes or 0.0) / MIB for r in rows],
                "colorscale": "Plasma",
                "colorbar": {"title": {"text": "peak memory (MiB)"}, "thickness": 12},
                "size": [10 if r.pareto else 7 for r in rows],
                "symbol": ["circle" if r.feasible else "x" for r in rows],
                "line": {
                    "color": "black",
                    "width": [1.5 if r.pareto else 0 for r in rows],
                },
                "opacity": 0.85,
            },
            name="trials",
        )
    )
    fig.update_xaxes(title_text=f"predicted latency per training step ({unit}) ↓")
    fig.update_yaxes(title_text="accuracy (proxy) ↑" if study.accuracy_is_proxy else "accuracy ↑")
    return _layout(
        fig,
        "Accuracy vs predicted latency (colour: peak memory)",
        DASHBOARD_HEIGHT if compact else 480,
    )


def _accuracy(study: Any, row: TrialRow) -> float | None:
    if "accuracy" in study.metric_names and row.values is not None:
        return row.values[study.metric_names.index("accuracy")]
    if row.accuracy_per_epoch:
        return row.accuracy_per_epoch[-1]
    return None


@_figure(
    "epoch_curves",
    "Validation accuracy per epoch",
    "The validation accuracy after every epoch of each completed trial (grey), with the "
    "best trials (Pareto front or top 5) highlighted.",
    order=70,
)
def epoch_curves(data: ReportData, compact: bool = False) -> go.Figure | None:
    import plotly.graph_objects as go

    curves = [r for r in data.study.complete if r.accuracy_per_epoch]
    if not curves:
        return None
    xs: list[int | None] = []
    ys: list[float | None] = []
    for r in curves:  # one trace, curves separated by gaps: fast with hundreds of trials
        xs += [*range(1, len(r.accuracy_per_epoch) + 1), None]
        ys += [*r.accuracy_per_epoch, None]
    fig = go.Figure(
        go.Scatter(
            x=xs,
            y=ys,
            mode="lines",
            line={"color": "rgba(120,120,120,0.25)", "width": 1},
            name=f"all completed trials ({len(curves)})",
            hoverinfo="skip",
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
                y=list(r.accuracy_per_epoch),
                mode="lines+markers",
                name=r.label if len(r.label) <= 60 else r.label[:57] + "...",
                hovertemplate="epoch %{x}: %{y:.4f}",
            )
        )
    fig.update_xaxes(title_text="epoch", dtick=1)
    label = "validation accuracy (proxy)" if data.study.accuracy_is_proxy else "validation accuracy"
    fig.update_yaxes(title_text=label)
    return _layout(
        fig,
        "Validation accuracy per epoch",
        460 + 20 * len(highlight),
        legend=LEGEND_BELOW,
        bottom=80 + 20 * len(highlight),
    )


@_figure(
    "epoch_correlation",
    "Early-epoch correlation",
    "For every epoch n, the Pearson and Spearman correlation between the accuracy after n "
    "epochs and after the last one over the completed trials (NASCaps Table 2; "
    "`nasmlcn correlate` prints the same numbers). A high value at small n means "
    "short training ranks architectures as full training does.",
    order=80,
    dashboard=True,
)
def epoch_correlation(data: ReportData, compact: bool = False) -> go.Figure | None:
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
    if reference and data.study.info.get("identity", {}).get("dataset") == "fashion-mnist":
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
    fig.update_yaxes(title_text="correlation with the last epoch", range=[-0.05, 1.05])
    return _layout(
        fig,
        "Early-epoch correlation",
        DASHBOARD_HEIGHT if compact else 420,
        f"{rows[0].trials} completed trials",
    )


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None
