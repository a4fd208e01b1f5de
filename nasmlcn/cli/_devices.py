"""``nasmlcn devices``: the device catalog and the devices present here."""

from __future__ import annotations

import json
from pathlib import Path

from nasmlcn.cli._console import out
from nasmlcn.cli._options import DEVICE_FILE, JSON


def devices(
    device_file: Path | None = DEVICE_FILE,
    as_json: bool = JSON,
) -> None:
    """The device catalog (for --devices) and the devices detected on this machine."""
    from nasmlcn.costs import devices_cost_model
    from nasmlcn.hardware import detect_devices, format_bytes, format_flops, load_catalog

    catalog = load_catalog(device_file)
    declaring = [name for name in catalog if catalog[name].cost_model]
    for name in declaring:  # a kind's cost_model must name one (checked as a search would)
        devices_cost_model(f"1x{name}", "analytic", str(device_file) if device_file else None)
    local = detect_devices(catalog)
    if as_json:
        print(
            json.dumps(
                {
                    "catalog": [catalog[name].to_dict() for name in catalog],
                    "detected": [d.to_dict() for d in local],
                }
            )
        )
        return
    from rich.table import Table

    table = Table(title="device catalog (--devices NxNAME)")
    for column in ("name", "memory", "peak FP32", "bandwidth", "speed", "cost model"):
        table.add_column(column, justify="left" if column == "name" else "right")
    for name in catalog:
        kind = catalog[name]
        table.add_row(
            name,
            format_bytes(kind.memory_bytes),
            format_flops(kind.peak_flops) + "/s",
            f"{kind.bandwidth_bytes_per_s / 1e9:.0f} GB/s",
            f"{kind.speed:g}",
            kind.cost_model or "any",
        )
    out.print(table)
    out.print(
        "speed: K80 = 1; K80, M40, P100, V100 measured in the thesis, the others derived from "
        "peak FLOPS and bandwidth (sources in --json and nasmlcn/hardware/devices.toml). "
        "cost model: 'any' takes --cost-model; a named one is what plan and search use there"
    )
    here = Table(title="detected on this machine (training runs here)")
    for column in ("device", "model", "memory", "catalog kind", "cores"):
        here.add_column(column)
    for d in local:
        here.add_row(
            d.name,
            d.description,
            format_bytes(d.memory_bytes),
            d.catalog_kind or "-",
            str(d.cores) if d.cores is not None else "-",
        )
    out.print(here)
