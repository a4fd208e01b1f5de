"""``nasmlcn data``: list datasets, prepare their files, and inspect a user's own."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer

from nasmlcn.cli._console import out
from nasmlcn.cli._options import IMAGE_SIZE, local_file

data_app = typer.Typer(
    help="List datasets, prepare their files, inspect your own images.", no_args_is_help=True
)


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
                        "classes": list(r.class_names),
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


@data_app.command("inspect")
def inspect(
    path: Path = typer.Argument(
        ..., parser=local_file, help="A folder of class folders of images, or an .npz file."
    ),
    image_size: str | None = IMAGE_SIZE,
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """What your own images hold (classes with counts, sizes, channels, the test split)
    and what is wrong with them, before a search: reads headers only, writes nothing.
    Exits 1 when the data cannot be read as it is."""
    from nasmlcn.data import inspect_dataset

    report = inspect_dataset(path, image_size)
    if as_json:
        print(json.dumps(report.to_dict()))
    else:
        _print_report(report)
    if report.problems:
        raise typer.Exit(1)


def _print_report(report: Any) -> None:
    from rich.markup import escape
    from rich.table import Table

    from nasmlcn._text import counted
    from nasmlcn.cli._console import err

    table = Table("class", "train", "test", title=f"{report.kind} {report.source}")
    for c in report.classes:
        table.add_row(c.name, f"{c.train:,}", f"{c.test:,}")
    out.print(table)
    sizes = ", ".join(f"{size}: {n:,}" for size, n in list(report.sizes.items())[:5])
    more = f" and {len(report.sizes) - 5} more sizes" if len(report.sizes) > 5 else ""
    lines = [
        f"{counted(report.images, 'image')} in {counted(len(report.classes), 'class', 'classes')}; "
        f"sizes {sizes}{more}",
        f"channels: {report.grey:,} grey, {report.colour:,} colour"
        + (f" ({report.layout})" if report.layout else ""),
        f"test split: {report.test_split}" if report.test_split else "",
        f"read as {report.shape}" if report.shape else "",
        f"skipped {counted(len(report.skipped), 'stray file')} ({', '.join(report.skipped[:3])}"
        + (", ..." if len(report.skipped) > 3 else "")
        + ")"
        if report.skipped
        else "",
        *report.notes,
    ]
    for line in lines:
        if line:
            out.print(line, markup=False, soft_wrap=True)
    for problem in report.problems:
        err.print(f"[red]problem:[/red] {escape(problem)}", highlight=False, soft_wrap=True)
    if not report.problems:
        out.print(
            "readable: search it with --dataset " + report.source, markup=False, soft_wrap=True
        )
