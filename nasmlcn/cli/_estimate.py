"""``nasmlcn estimate``: latency, energy and memory of one inference on an accelerator."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from nasmlcn.cli._console import out
from nasmlcn.cli._options import ARCH, IMAGE_SIZE, JSON, one_of
from nasmlcn.costs import TARGETS

if TYPE_CHECKING:
    from nasmlcn.costs import CapsAccEstimate
    from nasmlcn.specs import ArchSpec


def estimate(
    target: str = typer.Option("capsacc", "--target", help=f"Accelerator: {one_of(TARGETS)}."),
    model: str | None = typer.Option(
        None, "--model", help="A named architecture, e.g. capsnet (see 'nasmlcn models')."
    ),
    lanes: str | None = typer.Option(
        None, "--lanes", help="Lanes in the compact syntax, e.g. '2*mlcn2:4x1'."
    ),
    arch: Path | None = ARCH,
    dataset: str | None = typer.Option(
        None,
        "--dataset",
        help="Dataset whose image shape and classes the model gets: a built-in name or the "
        "path of your own images [default: fashion-mnist; with --arch: the file's].",
    ),
    image_size: str | None = IMAGE_SIZE,
    as_json: bool = JSON,
) -> None:
    """Latency, energy and memory of one inference on an accelerator, per layer
    (CapsAcc: NASCaps sec. 3.2)."""
    chosen = TARGETS.get(target)  # an unknown target fails before any work
    spec = _spec(model, lanes, arch, dataset, image_size)
    result = chosen.estimate(spec)
    if as_json:
        print(json.dumps({"model": spec.describe(), "arch": spec.to_dict(), **result.to_dict()}))
        return
    _print_estimate(spec, target, result)


def _spec(
    model: str | None,
    lanes: str | None,
    arch: Path | None,
    dataset: str | None,
    image_size: str | None,
) -> ArchSpec:
    from nasmlcn.data import images_too_small_hint, open_dataset
    from nasmlcn.specs import load_arch
    from nasmlcn.training import resolve_arch

    if arch is not None and dataset is None and model is None and lanes is None:
        return load_arch(arch)  # the file's own shape and classes
    info = open_dataset(dataset or "fashion-mnist", image_size=image_size)
    with images_too_small_hint(info):
        return resolve_arch(info, lanes=lanes, arch=arch, model=model)


def _print_estimate(spec: ArchSpec, target: str, result: CapsAccEstimate) -> None:
    from rich.table import Table

    c, h, w = spec.input_shape
    table = Table(title=f"{spec.describe()} on {target}, one {c}x{h}x{w} image")
    for column in ("layer", "kind", "cycles", "latency ms", "energy mJ", "KiB"):
        table.add_column(
            column, justify="left" if column in ("layer", "kind") else "right", overflow="fold"
        )
    for e in result.layers:
        table.add_row(
            e.layer.name,
            e.layer.kind,
            f"{e.cycles:,}",
            f"{e.latency_s * 1e3:.3g}",
            f"{e.energy_j * 1e3:.3g}",
            f"{e.memory_bytes / 1024:,.0f}",
        )
    table.add_row(
        "total",
        "",
        f"{result.cycles:,}",
        f"{result.latency_s * 1e3:.4g}",
        f"{result.energy_j * 1e3:.4g}",
        f"{result.memory_bytes / 1024:,.0f}",
        style="bold",
    )
    out.print(table)
    out.print(
        f"latency {result.latency_s * 1e3:.4g} ms, energy {result.energy_j * 1e3:.4g} mJ, "
        f"memory {result.memory_bytes / 1024:,.0f} KiB (8-bit weights) at "
        f"T = {result.accelerator.period_s * 1e9:g} ns"
    )
