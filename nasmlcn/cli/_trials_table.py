"""The table of a study's best trials, as ``nasmlcn search`` and ``nasmlcn best``
print it: it fits an 80-column terminal.

Each objective's unit is in its heading once (``latency`` over ``(ms)``), every cell
of a column has the same number of decimals, the devices the predictions are for
are named once above the table, and a long lane mix is cut (``…``); ``--json``
has it whole. Times are in milliseconds and memory in MiB, as the figures draw
them (:func:`nasmlcn.dashboard.metric_unit`). The measured inference latencies get
a table of their own (:func:`print_measured`), and a proxy study or an empty one a
line that says so (:data:`PROXY_NOTE`, :func:`why_none_feasible`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from nasmlcn._text import percent

if TYPE_CHECKING:
    from rich.table import Table

    from nasmlcn.study import RetrainedModel

MIB = 2**20

LANE_MIX_MIN = 12
"""The narrowest the lane-mix column gets before the table may pass the width."""

PREDICTED = {
    "latency_s": lambda p: p.get("latency"),
    "memory_MiB": lambda p: _mib(p.get("peak_memory_bytes")),
    "inference_latency_s": lambda p: p.get("inference_latency_s"),
}
"""Predicted figures a table shows beside the objectives, from a trial's ``predicted``."""


def _mib(value: Any) -> float | None:
    return value / MIB if isinstance(value, (int, float)) else None


def number_cell(row: dict[str, Any]) -> str:
    """A trial's number, ``(x3)`` when 3 trials proposed its model (repeats), and ``*``
    on the trial ``best --pick`` picked."""
    proposed = int(row.get("proposed") or 1)
    picked = " *" if row.get("picked") else ""
    return str(row["number"]) + (f" (x{proposed})" if proposed > 1 else "") + picked


def devices_line(devices: str | None) -> str:
    """What the line above the table says the predictions are for."""
    from nasmlcn.dashboard import predicted_on

    return (
        f"{predicted_on(devices)}: latency = the lanes' training step (makespan), "
        "inference = one image at batch 1 without the decoder, memory = the fullest device"
    )


def trials_table(
    title: str,
    rows: Sequence[dict[str, Any]],
    names: Sequence[str],
    *,
    retrained: bool = False,
    inference: bool = False,
    width: int = 80,
) -> Table:
    """The table of ``rows`` (:class:`~nasmlcn.study.TrialSummary` dicts) with
    objectives ``names``; the predicted step time and memory beside them where
    they are no objective, ``inference`` adds the predicted inference latency and
    ``retrained`` the retrained test accuracy (its details go under the table:
    :func:`retrained_notes`); lane mixes cut to fit ``width`` columns."""
    from rich import box
    from rich.table import Table

    from nasmlcn.dashboard import format_column, metric_unit, shown_predictions

    extra = shown_predictions(names)
    shown = [n for n in PREDICTED if n in extra and (n != "inference_latency_s" or inference)]
    unit = next((r["predicted"].get("time_unit", "s") for r in rows if r.get("predicted")), "s")
    columns: list[tuple[str, list[str]]] = [
        ("#", [number_cell(r) for r in rows]),
        ("lane mix", [r.get("lane_mix") or r.get("lanes") or "" for r in rows]),
    ]
    for name in [*names, *shown]:
        label, symbol, scale = metric_unit(name, unit)
        raw = [
            (r.get("values") or {}).get(name)
            if name in names
            else PREDICTED[name](r.get("predicted") or {})
            for r in rows
        ]
        scaled = [v * scale if isinstance(v, (int, float)) else None for v in raw]
        heading = f"{label}\n({symbol})" if symbol else label
        columns.append((heading, format_column(scaled)))
        if name == names[0] and retrained:
            columns.append(("retrained\ntest acc", [_retrained_cell(r) for r in rows]))
    columns.append(("lanes", [str(r.get("num_lanes") or "-") for r in rows]))
    imbalance = [percent((r.get("predicted") or {}).get("imbalance")) for r in rows]
    columns.append(("imbal-\nance %", ["-" if v is None else f"{v:.1f}" for v in imbalance]))
    fit_lane_mix(columns, width)
    table = Table(title=title, box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    for heading, _ in columns:
        table.add_column(
            heading, justify="left" if heading == "lane mix" else "right", no_wrap=True
        )
    for i in range(len(rows)):
        table.add_row(*(cells[i] for _, cells in columns))
    return table


def fit_lane_mix(columns: list[tuple[str, list[str]]], width: int) -> None:
    """Cuts the ``lane mix`` column's cells (``…`` at the end) so that the table
    of ``columns`` (heading, cells) fits ``width`` terminal columns, down to
    :data:`LANE_MIX_MIN` characters. The table has no edges and puts 3 characters
    between columns (``box.SIMPLE_HEAD``, ``show_edge=False``, ``pad_edge=False``)."""
    others = sum(
        max(
            (len(line) for text in (heading, *cells) for line in text.split("\n")),
            default=0,
        )
        for heading, cells in columns
        if heading != "lane mix"
    )
    room = max(LANE_MIX_MIN, width - others - 3 * (len(columns) - 1))
    for i, (heading, cells) in enumerate(columns):
        if heading == "lane mix":
            columns[i] = (heading, [c if len(c) <= room else c[: room - 1] + "…" for c in cells])


def _retrained(row: dict[str, Any]) -> RetrainedModel | None:
    from nasmlcn.study import RetrainedModel

    data = row.get("retrained")
    return RetrainedModel.from_dict(data) if data else None


def _retrained_cell(row: dict[str, Any]) -> str:
    model = _retrained(row)
    return "-" if model is None else f"{model.test_accuracy:.4f}"


def retrained_notes(rows: Sequence[dict[str, Any]]) -> list[str]:
    """One line per retrained trial of the table: what was tested, and its caveats."""
    notes = []
    for row in rows:
        model = _retrained(row)
        if model is not None:
            notes.append(f"#{row['number']} retrained: test acc {retrained_text(model)}")
    return notes


def retrained_text(model: RetrainedModel) -> str:
    """A retrained model's test accuracy, what was tested and its caveats."""
    from nasmlcn.search import retrained_caveats

    caveats = retrained_caveats(model)
    return f"{model.test_accuracy:.4f} ({model.tested})" + (
        f"; {'; '.join(caveats)}" if caveats else ""
    )


PROXY_NOTE = (
    "[yellow]proxy evaluator: these accuracies are an analytic stand-in, nothing was "
    "trained[/] (search with --evaluator train for measured ones)"
)
"""What every table of a proxy study says under it."""


def why_none_feasible(completed: int, latency_budget: float | None, idle: int = 0) -> str:
    """Why a study lists no trial: none of its ``completed`` trials yet, none learned
    (``idle`` of them did not), or the latency budget (``--latency-budget``) excludes
    every one."""
    if completed and idle == completed:
        return (
            f"none of the {completed} completed trials learned (accuracy near chance; kept "
            "in the study, never on the front): train longer (--epochs) or on more images "
            "(--train-limit)"
        )
    if not completed or latency_budget is None:
        return "no completed feasible trials yet"
    from nasmlcn.dashboard import format_seconds

    return (
        f"none of the {completed} completed trials meets --latency-budget "
        f"{format_seconds(latency_budget)} "
        "(the predicted training step of the lanes on the target devices); raise the budget, "
        "or give devices, a space or --flops that hold smaller models"
    )


def print_measured(rows: list[dict[str, Any]], devices: str | None) -> bool:
    """The measured inference latencies, in a table of their own (the device in
    its heading when all share one, else in each cell); whether any was measured."""
    from rich import box
    from rich.table import Table

    from nasmlcn.cli._console import out
    from nasmlcn.dashboard import common_device, format_measured, measured_heading
    from nasmlcn.hardware import crowded_record

    measured = [r["measured"] for r in rows]
    if not any(m.get("measured_inference_latency_s") is not None for m in measured):
        out.print(
            "inference measured: nothing (the evaluator measured nothing, e.g. the proxy)",
            highlight=False,
        )
        return False
    device = common_device(measured)
    target = devices or "the target devices"
    table = Table(
        title=f"measured where trained, not on {target}",
        box=box.SIMPLE_HEAD,
        show_edge=False,
        pad_edge=False,
    )
    for column in ("#", "lane mix", measured_heading(device)):
        mix = column == "lane mix"
        table.add_column(
            column,
            justify="left" if mix else "right",
            no_wrap=mix,
            overflow="ellipsis" if mix else "fold",
            min_width=LANE_MIX_MIN if mix else None,
        )
    crowded = {r["number"]: crowded_record(r["measured"].get("machine_load")) for r in rows}
    for row in rows:
        table.add_row(
            str(row["number"]),
            row["lane_mix"] or row["lanes"] or "",
            format_measured(row["measured"], device=device is None)
            + ("*" if crowded[row["number"]] is not None else ""),
        )
    out.print(table)
    out.print(
        "measured: the median of the timed passes (one image at a time, no decoder) on "
        "the machine that trained the trial, with their interquartile range (IQR)",
        highlight=False,
    )
    held = [v for v in crowded.values() if v is not None]
    if held:
        out.print(
            f"* unreliable: measured while other processes held up to {max(held):.1f} cores "
            "(trials " + ", ".join(f"#{n}" for n, v in crowded.items() if v is not None) + ")",
            style="yellow",
            highlight=False,
            markup=False,
            soft_wrap=True,
        )
    return True
