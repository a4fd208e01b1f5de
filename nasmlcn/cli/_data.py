"""``nasmlcn data``: list datasets and prepare their files."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from nasmlcn.cli._console import out
from nasmlcn.cli._options import local_file

data_app = typer.Typer(help="List datasets and prepare their files.", no_args_is_help=True)


@data_app.command("list")
def list_datasets(as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """The registered datasets."""
    from nasmlcn.data import DATASETS

    rows = [DATASETS.get(n) for n in DATASETS.names()]
    if as_json:
        print(
            json.dumps(
                [
                    {
                        "name": r.name,
                        "num_classes": r.num_classes,
                        "input_shape": list(r.input_shape),
                        "description": r.description,
                        "normalization": r.normalization.to_dict() if r.normalization else None,
                    }
                    for r in rows
                ]
            )
        )
        return
    from rich.table import Table

    table = Table("dataset", "classes", "input", "description")
    for r in rows:
        table.add_row(r.name, str(r.num_classes), "x".join(map(str, r.input_shape)), r.description)
    out.print(table)


@data_app.command("prepare")
def prepare(
    name: str = typer.Argument(..., help="Dataset name."),
    data_dir: Path | None = typer.Option(
        None, "--data-dir", parser=local_file, help="Dataset directory."
    ),
    download: bool = typer.Option(True, "--download/--no-download", help="Download missing data."),
) -> None:
    """Make a dataset's files ready (unpack Debian's copy, or download)."""
    from nasmlcn.data import prepare_dataset

    out.print(prepare_dataset(name, data_dir, download=download))
