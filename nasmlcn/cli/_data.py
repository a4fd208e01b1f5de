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
    as_json: bool = typer.Option(
        False, "--json", help="Print JSON, with the test split's files (test_files, test_indices)."
    ),
    test_files: bool = typer.Option(
        False,
        "--test-files",
        help="Print the test split's images, one a line: paths relative to the folder, or "
        "for an .npz indices into x_test (or into x_train, for a held-out split).",
    ),
) -> None:
    """What your own images hold (classes with counts, sizes, channels, the test split)
    and what is wrong with them, before a search: reads headers only (--json and
    --test-files read every file, to name the held-out test images), writes nothing.
    Exits 1 when the data cannot be read as it is."""
    from nasmlcn.data import inspect_dataset
    from nasmlcn.errors import cli_text

    report = inspect_dataset(path, image_size, test_members=as_json or test_files)
    if as_json:
        print(json.dumps(report.to_dict(cli_text)))
    elif test_files:
        _print_test_files(report)
    else:
        _print_report(report)
    if report.problems:
        raise typer.Exit(1)


MAX_PROBLEMS = 10
"""The problems ``data inspect`` lists; --json gives them all."""


def _print_test_files(report: Any) -> None:
    """The test split's members on stdout, one a line; what they are on stderr."""
    from nasmlcn.cli._console import err

    if report.test_indices is not None:
        err.print(
            f"indices into {report.test_array} of {report.source}, one a line "
            f"(test split: {report.test_split})",
            markup=False,
            soft_wrap=True,
        )
    for member in report.test_files or report.test_indices or []:
        print(member)
    _print_problems(report.problems)


def _print_problems(problems: list[str]) -> None:
    from rich.markup import escape

    from nasmlcn.cli._console import err
    from nasmlcn.errors import cli_text

    for problem in problems[:MAX_PROBLEMS]:
        err.print(
            f"[red]problem:[/red] {escape(cli_text(problem))}", highlight=False, soft_wrap=True
        )
    if len(problems) > MAX_PROBLEMS:
        err.print(
            f"[red]problem:[/red] and {len(problems) - MAX_PROBLEMS:,} more (--json lists them all)",
            highlight=False,
            soft_wrap=True,
        )


def _print_report(report: Any) -> None:
    from rich.table import Table

    from nasmlcn._text import counted
    from nasmlcn.errors import cli_text

    table = Table("class", "train", "test", title=f"{report.kind} {report.source}")
    for c in report.classes:
        table.add_row(c.name, f"{c.train:,}", f"{c.test:,}")
    out.print(table)
    sizes = ", ".join(f"{size}: {n:,}" for size, n in list(report.sizes.items())[:5])
    more = f" and {len(report.sizes) - 5} more sizes" if len(report.sizes) > 5 else ""
    lines = [
        f"{counted(report.images, 'image')} in {counted(len(report.classes), 'class', 'classes')}"
        + (f"; sizes {sizes}{more}" if sizes else ""),
        f"channels: {report.grey:,} grey, {report.colour:,} colour"
        + (f" ({report.layout})" if report.layout else ""),
        f"test split: {report.test_split}"
        + ("" if report.problems else " (--test-files lists its images)")
        if report.test_split
        else "",
        f"read as {report.shape}" if report.shape else "",
        f"skipped {counted(len(report.skipped), 'stray file')} ({', '.join(report.skipped[:3])}"
        + (", ..." if len(report.skipped) > 3 else "")
        + ")"
        if report.skipped
        else "",
        *(cli_text(note) for note in report.notes),
    ]
    for line in lines:
        if line:
            out.print(line, markup=False, soft_wrap=True)
    _print_problems(report.problems)
    if not report.problems:
        out.print(
            "readable: search it with --dataset " + report.source, markup=False, soft_wrap=True
        )
