"""The look shared by every figure: colours, template, sizes, layout, axis titles,
the shading of dominated trials, and the accuracy axis (fitted to the trials that
learned, with the others pinned to its edge)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from nasmlcn.dashboard._extract import ReportData, TrialRow

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
DASHBOARD_HEIGHT = 440
"""optuna-dashboard draws saved figures in 450-pixel-high cells."""
PANEL_GAP_PX = 60
"""Pixels between panels stacked in rows: the upper panel's tick labels (about 20)
and the lower panel's title (about 20), with room to spare."""


SUBTITLE_CHARS = 110
"""The longest subtitle line: one at 1000 pixels' width (the exports) holds about
140 characters of the subtitle's small type (measured on the PNG exports)."""
SUBTITLE_LINE_PX = 22


def wrap_subtitle(text: str, width: int = SUBTITLE_CHARS) -> list[str]:
    """``text`` in lines of at most ``width`` characters, broken after ``;`` where
    it can be and between words where it must (a figure cuts off what passes its
    edge); a no-break space (``\u00a0``) holds a name to its value."""
    import textwrap

    lines: list[str] = []
    for part in (p.strip() for p in text.split("; ")):
        if lines and len(lines[-1]) + 2 + len(part) <= width:
            lines[-1] += "; " + part
        else:
            lines.extend(textwrap.wrap(part, width) or [""])
    return lines


LEGEND_TOP = {"orientation": "h", "yanchor": "bottom", "y": 1.0, "x": 1, "xanchor": "right"}
LEGEND_RIGHT = {"orientation": "v", "yanchor": "top", "y": 1.0, "x": 1.02, "xanchor": "left"}
LEGEND_BELOW = {"orientation": "h", "yanchor": "top", "y": -0.2, "x": 0, "xanchor": "left"}


def layout(
    fig: go.Figure,
    title: str,
    height: int,
    subtitle: str | None = None,
    *,
    legend: dict[str, Any] | None = None,
    top: int | None = None,
    bottom: int = 50,
) -> go.Figure:
    lines = wrap_subtitle(subtitle) if subtitle else []
    text = title if not lines else f"{title}<br><sup>{'<br>'.join(lines)}</sup>"
    # room for the lines after the first: the plot area gives it up
    extra = SUBTITLE_LINE_PX * max(0, len(lines) - 1)
    fig.update_layout(
        title={"text": text, "x": 0.01, "xanchor": "left"},
        template=TEMPLATE,
        height=height,
        margin={"l": 70, "r": 30, "t": (top or (90 if subtitle else 70)) + extra, "b": bottom},
        legend=legend or LEGEND_TOP,
        hoverlabel={"namelength": -1},
    )
    return fig


def arrow(direction: str) -> str:
    return "↑" if direction == "maximize" else "↓"


def axis_title(name: str, direction: str, proxy: bool) -> str:
    label = f"{name} (proxy)" if proxy and name == "accuracy" else name
    return f"{label} {arrow(direction)}"


def time_scale(unit: str) -> tuple[float, str]:
    """Scale and label for times: seconds are shown in milliseconds."""
    return (1e3, "ms") if unit == "s" else (1.0, unit)


def hover_texts(rows: Sequence[TrialRow]) -> list[str]:
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
