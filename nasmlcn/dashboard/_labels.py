"""Which device a figure is for: predicted for the target devices, or measured
where the trial trained.

A study's predictions (training step time, inference latency, memory, energy)
are for the *target* devices it was asked about (``--devices 8xK80``); what the
``train`` evaluator measures (inference latency after training) is for the
machine that trained the trial (``cpu``, ``cuda:0``). The two differ by orders
of magnitude (0.58 ms predicted on K80s, 33.4 ms measured on a laptop CPU), so
every table and report names the device on each figure and keeps the two apart:
the predicted figures' headings name the pool, the measured ones sit in their
own table or column group with their device and their spread over the timed
passes (the interquartile range, see :mod:`nasmlcn.measure._inference`).

Every report (``nasmlcn search``, ``best``, ``retrain``, the dashboard) takes its
headings and cells from here, so that they say the same thing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

PREDICTED_METRICS = {
    "latency_s": "training step",
    "inference_latency_s": "inference per image",
    "memory_MiB": "training memory",
    "energy_mJ": "energy per inference",
}
"""Objectives (by metric name) whose values are predictions for the target
devices, and what each predicts."""


def predicted_on(devices: str | None) -> str:
    """``predicted on 8xK80`` (``predicted for the target devices`` when unknown)."""
    return f"predicted on {devices}" if devices else "predicted for the target devices"


def metric_heading(name: str, devices: str | None) -> str:
    """A table heading for objective ``name``: ``latency_s (predicted on 8xK80)``
    for one predicted for the target devices; other names as they are
    (``accuracy`` is measured on the validation set, ``params`` holds anywhere)."""
    if name not in PREDICTED_METRICS:
        return name
    return f"{name} ({predicted_on(devices)})"


METRIC_LABELS = {
    "latency_s": ("latency", "ms", 1e3),
    "inference_latency_s": ("inference", "ms", 1e3),
    "memory_MiB": ("memory", "MiB", 1.0),
    "energy_mJ": ("energy", "mJ", 1.0),
}
"""Objectives (by metric name) shown in a unit of their own: the name tables and
figures give them, the unit, and the factor from the stored value (``latency_s``
is stored in seconds, shown in milliseconds everywhere)."""


def metric_unit(name: str, time_unit: str = "s") -> tuple[str, str | None, float]:
    """``(label, unit, scale)`` of objective ``name`` in tables and figures:
    ``("latency", "ms", 1000.0)``; a time in another cost model's unit (``w2d``)
    keeps it, unscaled; ``accuracy`` and ``params`` have no unit."""
    if name not in METRIC_LABELS:
        return name, None, 1.0
    label, unit, scale = METRIC_LABELS[name]
    if name.endswith("_s") and time_unit != "s":
        return label, time_unit, 1.0
    return label, unit, scale


def metric_label(name: str, time_unit: str = "s") -> str:
    """``latency (ms)``: objective ``name`` with its unit, as every table heading
    and figure axis writes it."""
    label, unit, _ = metric_unit(name, time_unit)
    return f"{label} ({unit})" if unit else label


def format_column(values: Iterable[Any], digits: int = 4) -> list[str]:
    """Numbers of one table column with one number of decimals: ``digits``
    significant ones for its largest value (``539.8``, ``6.000``), ``-`` for none."""
    import math

    numbers = [v if _is_number(v) else None for v in values]
    largest = max((abs(v) for v in numbers if v is not None), default=0.0)
    magnitude = math.floor(math.log10(largest)) if largest > 0 else 0
    decimals = min(6, max(0, digits - 1 - magnitude))
    return ["-" if v is None else f"{v:.{decimals}f}" for v in numbers]


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value == value


def format_seconds(value: Any, unit: str = "s") -> str:
    """Seconds as ``2.54 ms`` (``1.2 s`` from a second up); other units (the
    thesis's ``w2d``) as numbers with the unit; ``-`` for no value."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return "-"
    if unit != "s":
        return f"{value:.4g} {unit}"
    return f"{value * 1e3:.3g} ms" if abs(value) < 1 else f"{value:.3g} s"


def metric_cell(name: str, value: Any, unit: str = "s") -> str:
    """A table cell of objective ``name``: times (``*_s``) as :func:`format_seconds`
    writes every other time column (``2.54 ms``), others to 4 significant digits."""
    if not _is_number(value):
        return "-"
    return format_seconds(value, unit) if name.endswith("_s") else f"{value:.4g}"


def shown_predictions(names: Iterable[str]) -> set[str]:
    """The predicted columns (``latency_s``, ``memory_MiB``, ``inference_latency_s``)
    a table of objectives ``names`` shows beside them: those not already objectives."""
    return {"latency_s", "memory_MiB", "inference_latency_s"} - set(names)


def format_measured(measured: Mapping[str, Any], *, device: bool = True) -> str:
    """A measured inference latency with its spread and device:
    ``2.54 ms (IQR 2.41-2.70 ms) on cpu``; ``-`` where nothing was measured.

    Args:
        measured: A trial's measured figures (``TrialSummary.measured``, or its
            ``training`` attribute): ``measured_inference_latency_s`` and, where
            kept, ``measured_inference_p25_s``, ``measured_inference_p75_s`` and
            ``measured_inference_device``.
        device: Name the device (off when a heading names it already).
    """
    median = measured.get("measured_inference_latency_s")
    if not isinstance(median, (int, float)):
        return "-"
    text = format_seconds(median)
    low, high = measured.get("measured_inference_p25_s"), measured.get("measured_inference_p75_s")
    if isinstance(low, (int, float)) and isinstance(high, (int, float)):
        text += f" (IQR {_bare_ms(low)}-{format_seconds(high)})"
    where = measured.get("measured_inference_device")
    if device and where:
        text += f" on {where}"
    return text


def _bare_ms(value: float) -> str:
    """The lower end of a range without its unit when the upper end has the same."""
    shown = format_seconds(value)
    return shown.removesuffix(" ms") if shown.endswith(" ms") else shown


def common_device(measured: Iterable[Mapping[str, Any]]) -> str | None:
    """The one device every measured row was measured on (None: none measured,
    or several devices, then each cell names its own)."""
    devices = {
        m.get("measured_inference_device")
        for m in measured
        if isinstance(m.get("measured_inference_latency_s"), (int, float))
    }
    return str(devices.pop()) if len(devices) == 1 and None not in devices else None


def measured_heading(device: str | None) -> str:
    """``inference measured on cpu (median, IQR)``: the heading of measured
    latencies; ``where each trial trained`` when they differ."""
    where = f"on {device}" if device else "where each trial trained"
    return f"inference measured {where} (median, IQR)"
