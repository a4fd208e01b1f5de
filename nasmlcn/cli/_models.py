"""``nasmlcn models``: named architectures and lane types."""

from __future__ import annotations

import json

import typer

from nasmlcn.cli._console import out


def models(as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """Named architectures (for --model) and lane types (for --lanes)."""
    from nasmlcn.specs import ARCHITECTURES, LANE_TYPES, create_arch

    archs = [(name, create_arch(name)) for name in ARCHITECTURES.names()]
    if as_json:
        print(
            json.dumps(
                {
                    "models": [
                        {"name": n, "describe": a.describe(), "arch": a.to_dict()} for n, a in archs
                    ],
                    "lane_types": [
                        {"name": n, "description": LANE_TYPES.get(n).description}
                        for n in LANE_TYPES.names()
                    ],
                }
            )
        )
        return
    from rich.table import Table

    table = Table("model", "architecture")
    for name, arch in archs:
        table.add_row(name, arch.describe())
    out.print(table)
    lanes = Table("lane type", "layers")
    for name in LANE_TYPES.names():
        lanes.add_row(name, LANE_TYPES.get(name).description)
    out.print(lanes)
