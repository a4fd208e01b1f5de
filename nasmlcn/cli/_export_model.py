"""``nasmlcn export-model``: write a trained run's classifier for deployment."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from nasmlcn.cli._console import out, phase_status
from nasmlcn.cli._options import JSON, QUIET, RUN, local_file
from nasmlcn.runs import EXPORT_FORMATS


def _formats() -> str:
    return "; ".join(f"{name}: {EXPORT_FORMATS.get(name).description}" for name in EXPORT_FORMATS)


def export_model(
    run: Path = RUN,
    fmt: str = typer.Option("torchscript", "--format", help=f"Format: {_formats()}."),
    out_file: Path | None = typer.Option(
        None,
        "--out",
        parser=local_file,
        help="The file to write [default: RUN/model.torchscript.pt or RUN/model.onnx].",
    ),
    replace: bool = typer.Option(
        False, "--replace", help="Write over the file if it exists [default: refuse]."
    ),
    as_json: bool = JSON,
    quiet: bool = QUIET,
) -> None:
    """Export a trained run for inference: images (batch, C, H, W) in, class
    probabilities (batch, K) and class capsules (batch, K, D) out, no decoder. The
    file is loaded back and checked against the model before this returns; beside it,
    FILE.json holds the input shape, the normalisation and the class names."""
    from nasmlcn.runs import export_run, load_run

    loaded = load_run(run, require_dataset=False)
    with phase_status(quiet, f"{loaded.arch.describe()} as {fmt}") as tell:
        tell("exporting")
        result = export_run(loaded, fmt, out_file, replace=replace).to_dict()
    if as_json:
        print(json.dumps(result))
        return
    out.print(
        f"wrote {result['path']} ({result['bytes'] / 2**20:.1f} MiB, {fmt}): "
        f"{result['lanes']}; outputs match the model on {result['checked_images']} images "
        f"(max difference {result['max_abs_difference']:.2g}); its input and classes: "
        f"{result['preprocessing_path']}",
        markup=False,
        soft_wrap=True,
    )
