"""The lane-pruning figure (thesis Fig. 4.6): (a) validation accuracy and (b)
inference speedup over the full model, against the number of lanes removed
(least important first), one curve per pruned run. Written as self-contained
HTML and, with Kaleido and Chromium as the report's figures, PNG."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from nasmlcn._text import counted
from nasmlcn.runs._lane_removal import FIGURE_NAME, LaneRemovalReport

if TYPE_CHECKING:
    import plotly.graph_objects as go

HEIGHT = 430


def lane_removal_figure(
    curves: Mapping[str, LaneRemovalReport], title: str | None = None
) -> go.Figure:
    """The figure of ``curves`` (label -> report)."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    from nasmlcn.dashboard import TEMPLATE, accuracy_range

    fig = make_subplots(
        rows=1,
        cols=2,
        subplot_titles=("(a) validation accuracy", "(b) inference speedup over all lanes"),
        horizontal_spacing=0.1,
    )
    for i, (label, report) in enumerate(curves.items()):
        color = f"hsl({(i * 137) % 360}, 65%, 42%)"
        removed = list(range(len(report.steps)))
        hover = [f"{label}<br>{step.lanes}<br>removed lane {step.removed}" for step in report.steps]
        for col, values in (
            (1, [s.accuracy for s in report.steps]),
            (2, [s.speedup for s in report.steps]),
        ):
            fig.add_trace(
                go.Scatter(
                    x=removed,
                    y=values,
                    mode="lines+markers",
                    name=label,
                    legendgroup=label,
                    showlegend=col == 1,
                    line={"color": color},
                    hovertext=hover,
                ),
                row=1,
                col=col,
            )
    first = next(iter(curves.values()))
    images = f"{first.images:,} validation images"
    timing = (
        f"batch {first.inference.batch}, median of {first.inference.passes} passes on "
        f"{first.device}, {counted(first.threads, 'thread')}"
    )
    text = title or f"Lane pruning of {first.run.arch.describe()} on {first.run.dataset}"
    fig.update_layout(
        title={"text": f"{text}<br><sup>{images}; inference {timing}</sup>", "x": 0.01},
        template=TEMPLATE,
        height=HEIGHT,
        margin={"l": 70, "r": 30, "t": 100, "b": 60},
        legend={"orientation": "h", "yanchor": "bottom", "y": -0.3, "x": 0},
    )
    fig.update_xaxes(
        title_text="lanes removed (least important first)",
        dtick=1 if len(first.steps) <= 16 else None,
    )
    # plotly's autorange pads a flat curve by a fixed amount (one step of 0.55 drew an
    # accuracy axis from -0.4 to 1.5): the range is set, inside what can occur
    accuracies = [s.accuracy for report in curves.values() for s in report.steps]
    fig.update_yaxes(title_text="accuracy", range=list(accuracy_range(accuracies)), row=1, col=1)
    speedups = [s.speedup for report in curves.values() for s in report.steps]
    top = max(speedups, default=1.0)
    fig.update_yaxes(title_text="speedup (x)", range=[0, top * 1.08 or 1.0], row=1, col=2)
    for trace in fig.data:
        trace.cliponaxis = False  # a marker on the axis's edge is drawn whole
    return fig


def write_lane_removal_figure(
    curves: Mapping[str, LaneRemovalReport],
    folder: Path,
    *,
    png: bool = True,
    title: str | None = None,
) -> list[Path]:
    """Writes ``lane_pruning.html`` (plotly.js inlined: it opens offline) and, with
    ``png``, ``lane_pruning.png`` into ``folder``; the paths written. Without ``png``,
    a ``lane_pruning.png`` already there (an earlier figure's) is removed: it would
    stand beside this figure as if it were its picture.

    Raises:
        ExportError: PNG asked for and Kaleido finds no Chromium.
    """
    from nasmlcn._io import atomic_path

    fig = lane_removal_figure(curves, title)
    folder.mkdir(parents=True, exist_ok=True)
    html = folder / f"{FIGURE_NAME}.html"
    with atomic_path(html) as tmp:
        fig.write_html(tmp, include_plotlyjs=True, include_mathjax=False, full_html=True)
    paths = [html]
    if png:
        from nasmlcn.dashboard import write_images

        paths += write_images({FIGURE_NAME: fig}, folder, ("png",))
    else:
        (folder / f"{FIGURE_NAME}.png").unlink(missing_ok=True)
    return paths
