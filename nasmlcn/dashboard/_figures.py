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
NOT_LEARNING_COLOR = "#ff7f0e"
"""Trials that did not learn (accuracy near chance): apart from those over a budget."""
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
PANEL_GAP_PX = 60
"""Pixels between panels stacked in rows: the upper panel's tick labels (about 20)
and the lower panel's title (about 20), with room to spare."""


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


def shade_marker(shade: Sequence[int], name: str, *, showscale: bool) -> dict[str, Any]:
    """The marker of the dominated trials: coloured by ``shade`` with a colour bar
    over exactly its range, in whole steps. Fewer than two distinct values get one
    colour and no bar (plotly would draw a bar around the single value, e.g. -0.4
    to 0.4 for generation 0 of a one-generation NSGA-II study)."""
    if len(set(shade)) < 2:
        return {"color": FEASIBLE_COLOR, "size": 6, "opacity": 0.75}
    low, high = min(shade), max(shade)
    return {
        "color": list(shade),
        "colorscale": "Viridis",
        "cmin": low,
        "cmax": high,
        "size": 6,
        "opacity": 0.75,
        "showscale": showscale,
        "colorbar": {
            "title": {"text": name},
            "thickness": 12,
            "len": 0.6,
            "tickmode": "auto",
            "nticks": min(6, high - low + 1),
            "tickformat": "d",
        },
    }


ACCURACY = "accuracy"
AXIS_PAD = 0.05
"""Share of the shown accuracies' range left free at each end of an accuracy axis."""


def accuracy_range(learned: Sequence[float], idle: Sequence[float] = ()) -> tuple[float, float]:
    """The range of an accuracy axis: inside [0, 1] (no accuracy lies outside it),
    fitted to the trials that learned, so that one model at chance (0.098 against
    models at 0.9) does not squeeze their spread into a strip; with no trial that
    learned, fitted to ``idle``. The trials that did not learn are drawn at the
    lower edge when they lie below it (:func:`pin`), with their own marker."""
    shown = list(learned) or list(idle)
    if not shown:
        return (0.0, 1.0)
    low, high = min(shown), max(shown)
    pad = max(AXIS_PAD * (high - low), 0.01)
    return (max(0.0, low - pad), min(1.0, high + pad))


def pin(values: Sequence[float], bounds: tuple[float, float]) -> list[float]:
    """``values`` clamped into ``bounds`` (drawn at the axis's edge)."""
    return [min(max(v, bounds[0]), bounds[1]) for v in values]


def not_learning_name(data: ReportData, pinned: bool) -> str:
    """The legend entry of the trials that did not learn."""
    threshold = data.study.learning_threshold
    below = f"accuracy < {threshold:.2g}" if threshold is not None else "near chance"
    return f"did not learn ({below}{'; at the axis edge' if pinned else ''})"


# -- figures ------------------------------------------------------------------


@_figure(
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
    # room between panels for the next panel's tick labels and axis title (at 0.08 a
    # half-width dashboard cell drew one over the panel beside it)
    fig = make_subplots(
        rows=nrows,
        cols=cols,
        horizontal_spacing=0.16 if compact else 0.1,
        vertical_spacing=0.16,
    )
    done = study.complete
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
    kinds: list[str] = []
    for k, (a, b) in enumerate(pairs):
        row, col = k // cols + 1, k % cols + 1
        first = k == 0

        def xy(rows: Sequence[TrialRow], a: int = a, b: int = b) -> dict[str, Any]:
            xs = [r.values[a] for r in rows if r.values]
            ys = [r.values[b] for r in rows if r.values]
            return {
                "x": pin(xs, bounds) if bounds and a == accuracy else xs,
                "y": pin(ys, bounds) if bounds and b == accuracy else ys,
                # the true values: a pinned point's position is not its value
                "customdata": list(zip(xs, ys, strict=True)),
                "text": _hover(rows),
                "hovertemplate": f"%{{text}}<br>{names[a]} %{{customdata[0]:.4g}}"
                f"<br>{names[b]} %{{customdata[1]:.4g}}<extra></extra>",
                "cliponaxis": False,
            }

        fig.add_trace(
            go.Scatter(
                **xy(dominated),
                mode="markers",
                name=f"dominated (colour: {shade_name})",
                legendgroup="dominated",
                showlegend=first,
                marker=shade_marker(shade, shade_name, showscale=first),
            ),
            row=row,
            col=col,
        )
        fig.add_trace(
            go.Scatter(
                **xy(over_budget),
                mode="markers",
                name="infeasible (over a budget)",
                legendgroup="infeasible",
                showlegend=first and bool(over_budget),
                marker={"color": INFEASIBLE_COLOR, "symbol": "x", "size": 6},
            ),
            row=row,
            col=col,
        )
        fig.add_trace(
            go.Scatter(
                **xy(idle),
                mode="markers",
                name=not_learning_name(data, pinned),
                legendgroup="idle",
                showlegend=first and bool(idle),
                # pointing off the axis edge they are drawn at: lower accuracies lie there
                marker={
                    "color": NOT_LEARNING_COLOR,
                    "symbol": "triangle-left" if a == accuracy else "triangle-down",
                    "size": 7,
                },
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
        kinds += ["dominated", "infeasible", "idle", "front"]
        fig.update_xaxes(
            title_text=_axis_title(names[a], directions[a], study.accuracy_is_proxy),
            range=list(bounds) if bounds and a == accuracy else None,
            row=row,
            col=col,
        )
        fig.update_yaxes(
            title_text=_axis_title(names[b], directions[b], study.accuracy_is_proxy),
            range=list(bounds) if bounds and b == accuracy else None,
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
                        "args": [{"visible": visible("dominated", "infeasible", "idle")}],
                    },
                ],
            }
        ]
    )
    idle_count = f"{len(idle)} did not learn, " if idle else ""
    counts = (
        f"{len(done)} completed trials, {len(over_budget)} over a budget, {idle_count}"
        f"{len(front)} on the front"
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
    reference = ", ".join(
        f"{n} {v:.4g}" for n, v in zip(data.study.metric_names, hv.reference_point, strict=False)
    )
    subtitle = (
        f"objectives scaled to [0, 1] between the best and worst feasible value; "
        f"reference point (worst + {HYPERVOLUME_MARGIN:.0%} of the range): {reference}"
    )
    final = f"final {hv.values[-1]:.4f}; " if hv.values else ""
    return _layout(
        fig,
        "Hypervolume history",
        DASHBOARD_HEIGHT if compact else 420,
        final + subtitle,
    )


@_figure(
    "optimization_history",
    "Optimisation history",
    "Each objective of every completed trial in trial order (trials over a budget as grey "
    "crosses, trials that did not learn as orange triangles, at the accuracy axis's lower "
    "edge when below the others), with the best feasible value so far as a red step line.",
    order=30,
)
def optimization_history(data: ReportData, compact: bool = False) -> go.Figure | None:
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    histories = data.histories
    if not histories or not histories[0].numbers:
        return None
    fig = make_subplots(rows=len(histories), cols=1, shared_xaxes=True, vertical_spacing=0.06)
    shown: set[str] = set()
    pinned = False  # any trial that did not learn drawn at the accuracy axis's edge
    for h in histories:
        if h.name == ACCURACY and h.learned:
            ok = [v for v, learned in zip(h.values, h.learned, strict=True) if learned]
            idle = [v for v, learned in zip(h.values, h.learned, strict=True) if not learned]
            pinned = any(v < accuracy_range(ok, idle)[0] for v in idle)
    for i, h in enumerate(histories):
        row = i + 1
        learned = h.learned or (True,) * len(h.numbers)
        groups = {
            "feasible": [j for j, f in enumerate(h.feasible) if f],
            "infeasible": [j for j, f in enumerate(h.feasible) if not f and learned[j]],
            "idle": [j for j, ok in enumerate(learned) if not ok],
        }
        values = list(h.values)
        bounds = None
        if h.name == ACCURACY:
            bounds = accuracy_range(
                [v for v, ok in zip(values, learned, strict=True) if ok],
                [values[j] for j in groups["idle"]],
            )
            fig.update_yaxes(range=list(bounds), row=row, col=1)
        styles = {
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
        for kind, (name, marker) in styles.items():
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
    devices = max(len(p.devices) for p in shown)
    height = DASHBOARD_HEIGHT if compact else 100 + len(shown) * (60 + 22 * devices)
    # a fixed gap in pixels between panels, for the tick labels of the panel above and
    # the title of the one below (a share of the height, as before, let the title of
    # a one-device panel run into the ticks above it)
    plot_height = height - 70 - 50  # _layout's top and bottom margins
    spacing = min(PANEL_GAP_PX / plot_height, 0.5 / max(1, len(shown) - 1))
    fig = make_subplots(rows=len(shown), cols=1, subplot_titles=titles, vertical_spacing=spacing)
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
    return _layout(
        fig,
        "Lane placement of the best trials",
        height,
        legend={**LEGEND_RIGHT, "title": {"text": "lane kind"}},
    )


@_figure(
    "accuracy_vs_latency",
    "Accuracy vs predicted latency",
    "Accuracy of every completed trial against its predicted step latency on the target "
    "devices, coloured by predicted peak memory per device; Pareto-front trials have a "
    "black outline, trials over a budget are crosses, and trials that did not learn are "
    "orange triangles (at the accuracy axis's lower edge when below the others).",
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
            text=_hover(learned),
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
                text=_hover(idle),
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
    fig.update_xaxes(title_text=f"predicted latency per training step{where} ({unit}) ↓")
    fig.update_yaxes(
        title_text="accuracy (proxy) ↑" if study.accuracy_is_proxy else "accuracy ↑",
        range=list(bounds),
    )
    return _layout(
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


@_figure(
    "epoch_curves",
    "Validation accuracy per epoch",
    "The validation accuracy after every epoch of each completed trial (grey), with the "
    "best trials (Pareto front or top 5) highlighted; trials that did not learn are "
    "orange dots, drawn at the axis's lower edge when below the others.",
    order=70,
)
def epoch_curves(data: ReportData, compact: bool = False) -> go.Figure | None:
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
    return _layout(
        fig,
        "Validation accuracy per epoch",
        460 + 20 * entries,
        legend=LEGEND_BELOW,
        bottom=80 + 20 * entries,
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
    # a correlation lies in [-1, 1]; the last epoch's with itself is 1, on the edge
    values = [v for c in rows for v in (c.pearson, c.spearman)]
    lowest = min((v for v in values if v is not None and math.isfinite(v)), default=0.0)
    fig.update_yaxes(
        title_text="correlation with the last epoch", range=[-1.0 if lowest < 0 else 0.0, 1.0]
    )
    fig.update_traces(cliponaxis=False)
    return _layout(
        fig,
        "Early-epoch correlation",
        DASHBOARD_HEIGHT if compact else 420,
        f"{rows[0].trials} completed trials",
    )


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None
