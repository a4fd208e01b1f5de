"""``nasmlcn export-model``: write a trained run's classifier for deployment."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from nasmlcn.cli._console import out, phase_status
from nasmlcn.cli._options import JSON, QUIET, RUN, local_file, replace_option
from nasmlcn.runs import EXPORT_FORMATS


def _formats() -> str:
    return "; ".join(f"{name}: {EXPORT_FORMATS.get(name).description}" for name in EXPORT_FORMATS)


def _file_or_folder(value: str) -> str:
    """``--out`` as given: a last ``/`` says a folder, which ``Path`` would drop."""
    local_file(value)  # a URL or an empty path is refused
    return value


def export_model(
    run: Path = RUN,
    fmt: str = typer.Option("torchscript", "--format", help=f"Format, in any case: {_formats()}."),
    out_file: str | None = typer.Option(
        None,
        "--out",
        parser=_file_or_folder,
        metavar="<Path>",
        help="The file to write; a folder (one that exists, or a path ending in /) gets it "
        "as model.torchscript.pt or model.onnx [default: the run folder].",
    ),
    replace: bool = replace_option("the file and its FILE.json"),
    as_json: bool = JSON,
    quiet: bool = QUIET,
) -> None:
    """Export a trained run for inference: images (batch, C, H, W) in, class
    probabilities (batch, K) and class capsules (batch, K, D) out, no decoder. The
    file is loaded back and checked against the model before this returns; beside it,
    FILE.json holds the input shape, the normalisation and the class names."""
    from nasmlcn.runs import export_format, export_run, load_run

    name = export_format(fmt).name  # a wrong one is refused before the run is read
    loaded = load_run(run, require_dataset=False)
    with phase_status(quiet, f"{loaded.arch.describe()} as {name}") as tell:
        tell("exporting")
        result = export_run(loaded, name, out_file, replace=replace).to_dict()
    if as_json:
        print(json.dumps(result))
        return
    out.print(
        f"wrote {result['path']} ({result['bytes'] / 2**20:.1f} MiB, {name}): "
        f"{result['lanes']}; outputs match the model on {result['checked_images']} images "
        f"(max difference {result['max_abs_difference']:.2g}); its input and classes: "
        f"{result['preprocessing_path']}",
        markup=False,
        soft_wrap=True,
    )
