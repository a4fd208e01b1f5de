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

from nasmlcn._text import counted, percent

if TYPE_CHECKING:
    from rich.table import Table

    from nasmlcn.stats import PairedInterval
    from nasmlcn.study import RetrainedModel, SeedFigures, Standing

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


MARKS = {"best": "", "tied": " =", "undecided": " ?", "behind": " <", "one run": " 1"}
"""A standing's mark in the retrained column (:data:`STANDING_WORDS` says them in full)."""


def _retrained_cell(row: dict[str, Any]) -> str:
    seeded = row.get("seeded")
    if seeded:  # the mean over seeds, marked with its standing
        return f"{seeded['mean']:.4f}{MARKS[seeded['mark']]}"
    model = _retrained(row)
    return "-" if model is None else f"{model.test_accuracy:.4f}"


def retrained_notes(rows: Sequence[dict[str, Any]]) -> list[str]:
    """One line per retrained trial of the table: what was tested, and its caveats;
    over seeds, the mean with its interval and its standing against the best."""
    notes = []
    for row in rows:
        seeded, model = row.get("seeded"), _retrained(row)
        if seeded:
            low, high = seeded["low"], seeded["high"]
            spread = f" [{low:.4f}, {high:.4f}]" if low is not None else ""
            notes.append(
                f"#{row['number']} retrained over {counted(seeded['n'], 'seed')}: mean test acc "
                f"{seeded['mean']:.4f}{spread}; {STANDING_WORDS[seeded['mark']]}"
            )
        elif model is not None:
            notes.append(f"#{row['number']} retrained: test acc {retrained_text(model)}")
    if any(row.get("seeded") for row in rows):
        notes.append(
            "retrained column: the mean over seeds; = tied with the best, ? undecided (more "
            "seeds needed), < behind, 1 one run"
        )
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


STANDING_WORDS = {
    "best": "best",
    "tied": "tied with the best",
    "undecided": "undecided: more seeds needed",
    "behind": "behind the best",
    "one run": "one run: no interval",
}
"""How a standing (:mod:`nasmlcn.study._ties`) reads in tables and lines."""


def print_standings(
    standings: Sequence[Standing], margin: float, models: Sequence[RetrainedModel] = ()
) -> None:
    """The retrained models over their seeds against the best: a table (mean and its
    95 % t interval, each seed, the paired difference to the best, the standing), then
    a line per group."""
    from rich.table import Table

    from nasmlcn.cli._console import out

    lanes = {m.number: m.lanes for m in models}
    table = Table(title=f"retrained over seeds: tied = paired 95 % interval within +-{margin:g}")
    heads = ["#", "lanes", "test acc: mean [95 % interval] (n)", "per seed", "minus best"]
    for head in heads:
        table.add_column(head, justify="left" if head in ("lanes", "per seed") else "right")
    table.add_column("standing")
    if models:
        table.add_column("img/s: train, inference (mean)", justify="right")
    for s in standings:
        table.add_row(
            str(s.number),
            lanes.get(s.number, ""),
            seeded_text(s.figures),
            ", ".join(f"{v:.4f}" for _, v in sorted(s.figures.values.items())),
            "" if s.difference is None else _difference_text(s.difference),
            STANDING_WORDS[s.mark],
            *((_throughputs([m for m in models if m.number == s.number]),) if models else ()),
        )
    out.print(table)
    for line in standing_lines(standings, margin):
        out.print(line, highlight=False, markup=False, soft_wrap=True)


def _throughputs(models: Sequence[RetrainedModel]) -> str:
    """The mean training and inference images/s of a model's retrainings (``*``:
    one was measured on a crowded machine)."""
    from nasmlcn.hardware import crowded_record

    if not models:
        return ""
    train = sum(m.train_images_per_second for m in models) / len(models)
    infer = sum(m.inference_images_per_second for m in models) / len(models)
    crowded = any(crowded_record(m.machine_load) is not None for m in models)
    return f"{train:.0f}, {infer:.0f}" + ("*" if crowded else "")


def seeded_text(figures: SeedFigures) -> str:
    """``0.7489 [0.7281, 0.7697] (3)``, or ``0.7489 (one run)``."""
    interval = figures.interval()
    if interval is None:
        return f"{figures.mean:.4f} (one run)"
    return f"{figures.mean:.4f} [{interval[0]:.4f}, {interval[1]:.4f}] ({figures.n})"


def _difference_text(d: PairedInterval) -> str:
    return f"{d.mean:+.4f} [{d.low:+.4f}, {d.high:+.4f}]"


def standing_lines(standings: Sequence[Standing], margin: float) -> list[str]:
    """A line per group: the best and its ties, the undecided, the rest."""
    by_mark: dict[str, list[int]] = {}
    for s in standings:
        by_mark.setdefault(s.mark, []).append(s.number)
    best = by_mark["best"][0]
    tied = by_mark.get("tied", [])
    lines = [
        f"tied with the best (#{best}): "
        + (", ".join(f"#{n}" for n in tied) if tied else "none")
        + f" (their paired 95 % intervals lie within +-{margin:g} of it)"
    ]
    for mark in ("undecided", "behind", "one run"):
        if by_mark.get(mark):
            lines.append(f"{STANDING_WORDS[mark]}: " + ", ".join(f"#{n}" for n in by_mark[mark]))
    return lines
