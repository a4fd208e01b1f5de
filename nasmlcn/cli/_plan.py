"""``nasmlcn plan``: place a model's lanes on target devices."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from nasmlcn._setting import MAX_SEED
from nasmlcn.cli._command_options import option, takes
from nasmlcn.cli._console import out
from nasmlcn.cli._options import (
    ARCH,
    CALIBRATION,
    COST_MODEL,
    DEVICE_FILE,
    JSON,
    format_time,
    one_of,
)
from nasmlcn.placement import PLACERS

if TYPE_CHECKING:
    from nasmlcn.planning import Plan


@dataclass(frozen=True, kw_only=True)
class PlanOptions:
    """What ``nasmlcn plan`` was given: one field per option, in ``--help``'s order."""

    devices: str = option(
        typer.Option(
            ..., "--devices", help="Target devices, e.g. 8xK80 or 1xK80,1xM40,1xP100,1xV100."
        )
    )
    mem: str | None = option(
        typer.Option(None, "--mem", help="Memory of every device, e.g. 12GB, 12GiB, 512MiB.")
    )
    lanes: str | None = option(
        typer.Option(
            None, "--lanes", help="Lanes in the compact syntax, e.g. 'mlcn1:4x2,2*mlcn2:2x1'."
        )
    )
    arch: Path | None = option(ARCH)  # noqa: RUF009
    strategy: str = option(
        typer.Option("greedy", "--strategy", help=f"Placement: {one_of(PLACERS)}.")
    )
    cost_model: str = option(COST_MODEL)
    calibration: Path | None = option(CALIBRATION)  # noqa: RUF009
    batch_size: int = option(typer.Option(100, "--batch-size", min=1, help="Training batch size."))
    time_limit: float = option(
        typer.Option(
            10.0, "--time-limit", help="Seconds (more than 0) the optimal strategy may search."
        )
    )
    seed: int = option(
        typer.Option(0, "--seed", min=0, max=MAX_SEED, help="Seed of the random strategy.")
    )
    device_file: Path | None = option(DEVICE_FILE)  # noqa: RUF009
    as_json: bool = option(JSON)


@takes(PlanOptions)
def plan(options: PlanOptions) -> None:
    """Place lanes on devices: per device its lanes, load, time and memory; the
    makespan, the imbalance, and the makespan of the other strategies."""
    from nasmlcn.cli._options import cost_model_from_options, mlcn_from_options
    from nasmlcn.costs import devices_cost_model
    from nasmlcn.hardware import load_catalog, parse_devices
    from nasmlcn.planning import plan_model

    PLACERS.get(options.strategy)  # an unknown strategy fails before any work
    device_file = options.device_file
    pool = parse_devices(options.devices, mem=options.mem, catalog=load_catalog(device_file))
    spec = mlcn_from_options(options.lanes, options.arch)
    # devices that declare their cost model (capsacc) are planned with it
    cost_model = devices_cost_model(
        options.devices, options.cost_model, str(device_file) if device_file is not None else None
    )
    model = cost_model_from_options(cost_model, options.calibration)
    result = plan_model(
        spec,
        pool,
        cost_model=model,
        strategy=options.strategy,
        batch_size=options.batch_size,
        seed=options.seed,
        time_limit=options.time_limit,
        compare=True,
    )
    if options.as_json:
        print(json.dumps(result.to_dict()))
        return
    _print_plan(result)


def _print_plan(plan: Plan) -> None:
    from rich.table import Table

    from nasmlcn.costs import INFERENCE_BATCH_SIZE
    from nasmlcn.hardware import format_bytes
    from nasmlcn.specs import format_lanes

    unit = plan.time_unit
    table = Table(
        title=f"{plan.spec.describe()} on {len(plan.devices)} devices "
        f"({plan.placement.strategy}, {plan.cost_model} cost model, batch {plan.batch_size})"
    )
    for column in ("device", "speed", "lanes", "load", "time", "memory / limit"):
        table.add_column(
            column,
            justify="left" if column in ("device", "lanes") else "right",
            overflow="fold",
        )
    for d in plan.per_device:
        lanes = format_lanes([plan.spec.lanes[i] for i in d.lanes]) or "-"
        indices = ",".join(map(str, d.lanes))
        share = d.memory_bytes / d.memory_limit
        table.add_row(
            d.device.name + (" (head)" if d.head else ""),
            f"{d.device.speed:g}",
            f"{lanes} [{indices}]" if d.lanes else "-",
            format_time(d.load, unit),
            format_time(d.time, unit),
            f"{format_bytes(d.memory_bytes)} / {format_bytes(d.memory_limit)} ({share:.0%})",
        )
    out.print(table)
    out.print(
        f"makespan {format_time(plan.makespan, unit)} (ideal {format_time(plan.ideal, unit)}, "
        f"imbalance {plan.imbalance:.1%}); predicted step time with the head "
        f"{format_time(plan.step_time, unit)}; {plan.costs.params:,} parameters"
    )
    out.print(
        f"predicted inference latency {format_time(plan.inference_latency, unit)} per image "
        f"(batch {INFERENCE_BATCH_SIZE}: lanes in parallel "
        f"{format_time(plan.inference_makespan, unit)} + head, no decoder)"
    )
    placement = plan.placement
    if placement.lower_bound is not None:
        status = "proven optimal" if placement.optimal else f"gap {placement.gap:.2%} to the bound"
        # the placement balances the lanes' own costs; a whole-model plan's makespan differs
        summed = "" if placement.makespan == plan.makespan else " of the summed lane costs"
        out.print(
            f"lower bound{summed} {format_time(placement.lower_bound, unit)} ({status}); "
            f"planned in {placement.seconds:.3f} s"
        )
    if plan.comparison:
        others = Table(title="other strategies")
        others.add_column("strategy")
        others.add_column("makespan", justify="right")
        others.add_column(f"x {placement.strategy}", justify="right")
        for name, figures in plan.comparison.items():
            label = f"{name} (mean of {figures['draws']})" if "draws" in figures else name
            others.add_row(
                label,
                format_time(figures["makespan"], unit),
                f"{figures['makespan'] / plan.makespan:.2f}",
            )
        out.print(others)
