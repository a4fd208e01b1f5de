"""``search_vs_hand.py``'s figure: thesis Fig. 6.5's plot of a search beside the
hand-designed models."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from nasmlcn.reproduce.engines.common import running_best

if TYPE_CHECKING:
    import plotly.graph_objects as go


def figure(trials: Sequence[Any], hand: Sequence[Mapping[str, Any]], title: str) -> go.Figure:
    """Thesis Fig. 6.5's plot: the best model's accuracy found so far per search
    iteration, with every trial's accuracy, their mean, and the hand models'."""
    import plotly.graph_objects as go

    from nasmlcn.search import is_feasible

    ordered = sorted(trials, key=lambda t: t.number)
    x = list(range(1, len(ordered) + 1))
    values = [t.values[0] if is_feasible(t) else None for t in ordered]
    curve = running_best(values)
    done = [v for v in values if v is not None]
    fig = go.Figure()
    fig.add_trace(
        go.Scatter(x=x, y=values, mode="markers", name="each trial", marker={"color": "#9aa"})
    )
    fig.add_trace(
        go.Scatter(x=x, y=curve, mode="lines", name="search: best so far", line_shape="hv")
    )
    if done:
        mean = sum(done) / len(done)
        fig.add_trace(
            go.Scatter(
                x=[1, len(x)],
                y=[mean, mean],
                mode="lines",
                line={"dash": "dashdot", "color": "#9aa"},
                name=f"mean of the trials ({mean:.3f})",
            )
        )
    for row, dash in zip(hand, ("dash", "dot"), strict=False):
        fig.add_trace(
            go.Scatter(
                x=[1, max(len(x), 2)],
                y=[row["search_val_accuracy"]] * 2,
                mode="lines",
                line={"dash": dash},
                name=f"hand: {row['lanes']}",
            )
        )
    fig.update_layout(
        title=title,
        xaxis_title="search iteration (trial)",
        yaxis_title="validation accuracy (search fidelity)",
        template="plotly_white",
        legend={"orientation": "h", "y": -0.2},
    )
    return fig
