"""The plot: best-so-far accuracy and hypervolume against trials, and the
multi-fidelity pair against compute."""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    import plotly.graph_objects as go


from _search_quality.figures import best_within
from _search_quality.settings import TrialRecord


class Curve(NamedTuple):
    """One run's figure against trials (or compute): the mean over seeds and the
    min-max band."""

    panel: str  # "accuracy", "hypervolume" or "fidelity"
    key: str
    label: str
    n: tuple[float, ...]
    mean: tuple[float, ...]
    low: tuple[float, ...]
    high: tuple[float, ...]
    runs: int


def _band(x: float, values: Sequence[float | None]) -> tuple[float, float, float, float] | None:
    present = [v for v in values if v is not None]
    if not present:
        return None
    return x, statistics.fmean(present), min(present), max(present)


def plot_curves(runs: Mapping[str, Any]) -> list[Curve]:
    out = []
    longest = max(  # the multi-fidelity panel's x range: the dearer long run's
        (
            sum(t["compute"] for t in v["trials"])
            for r in runs.values()
            if r["long"]
            for v in r["seeds"].values()
        ),
        default=0.0,
    )
    for key, run in runs.items():
        points: list[tuple[float, float, float, float]] = []
        if run["long"]:  # best full-length accuracy against training compute
            panel = "fidelity"
            per_seed = [[TrialRecord(**t) for t in v["trials"]] for v in run["seeds"].values()]
            for i in range(1, 41):
                budget = longest * i / 40
                band = _band(budget, [best_within(seed, budget) for seed in per_seed])
                if band:
                    points.append(band)
        else:
            panel = "hypervolume" if "latency" in run["objectives"] else "accuracy"
            curves = run["curves"]["hypervolume" if panel == "hypervolume" else "best_accuracy"]
            for i in range(1, max(len(c) for c in curves) + 1):
                band = _band(i, [c[i - 1] if len(c) >= i else None for c in curves])
                if band:
                    points.append(band)
        n, mean, low, high = (tuple(column) for column in zip(*points, strict=True))
        out.append(Curve(panel, key, run["label"], n, mean, low, high, len(run["seeds"])))
    return out


COLORS = {
    "random/mlcn-thesis": "#444444",
    "random/mlcn-buckets": "#1f77b4",
    "tpe/mlcn-buckets": "#d62728",
    "gp/mlcn-buckets": "#ff7f0e",
    "nsga2/mlcn-buckets": "#2ca02c",
    "tpe/mlcn-buckets/long": "#d62728",
    "tpe/mlcn-buckets/long+halving": "#9467bd",
}
PANELS = ("accuracy", "hypervolume", "fidelity")


def figure(curves: Sequence[Curve], title: str, long_epochs: int) -> go.Figure:
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    fig = make_subplots(
        rows=1,
        cols=3,
        subplot_titles=(
            "best accuracy so far (accuracy)",
            "hypervolume so far (accuracy, latency)",
            f"TPE, {long_epochs} epochs, +- halving",
        ),
    )
    shown: set[str] = set()
    for c in curves:
        col = PANELS.index(c.panel) + 1
        sampler_space = "/".join(c.key.split("/")[1:])
        color = COLORS.get(sampler_space, "#8c564b")
        r, g, b = (int(color[i : i + 2], 16) for i in (1, 3, 5))
        fig.add_trace(
            go.Scatter(
                x=[*c.n, *reversed(c.n)],
                y=[*c.high, *reversed(c.low)],
                mode="lines",
                fill="toself",
                fillcolor=f"rgba({r},{g},{b},0.12)",
                line={"width": 0},
                hoverinfo="skip",
                showlegend=False,
                legendgroup=sampler_space,
            ),
            row=1,
            col=col,
        )
        label = c.label + (f", {long_epochs} epochs" if c.panel == "fidelity" else "")
        fig.add_trace(
            go.Scatter(
                x=list(c.n),
                y=list(c.mean),
                mode="lines+markers",
                name=f"{label} ({c.runs} seeds)",
                line={
                    "color": color,
                    "dash": "dash" if "thesis" in sampler_space else "solid",
                    "width": 3 if sampler_space.startswith("random/") else 2,
                },
                marker={"size": 4},
                legendgroup=sampler_space,
                showlegend=sampler_space not in shown,
            ),
            row=1,
            col=col,
        )
        shown.add(sampler_space)
    fig.update_xaxes(title_text="trials", row=1, col=1)
    fig.update_xaxes(title_text="trials", row=1, col=2)
    fig.update_xaxes(title_text="CPU seconds of training", row=1, col=3)
    fig.update_yaxes(title_text="validation accuracy", row=1, col=1)
    fig.update_yaxes(title_text="normalised hypervolume", row=1, col=2)
    fig.update_yaxes(title_text="validation accuracy", row=1, col=3)
    fig.update_layout(
        title=title,
        height=540,
        width=1500,
        template="plotly_white",
        legend={"orientation": "h", "y": -0.2},
    )
    return fig
