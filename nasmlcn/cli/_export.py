"""``nasmlcn export``: a study as report files (offline HTML, figures, CSV/JSON)."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from nasmlcn._storage_url import resolve_storage
from nasmlcn.cli._console import err, out
from nasmlcn.cli._options import JSON, STORAGE, STUDY, local_file


def export(
    study: str | None = STUDY,
    storage: str | None = STORAGE,
    out_dir: Path | None = typer.Option(
        None,
        "--out",
        help="Folder to write into [default: dashboards/exports/<study>].",
        parser=local_file,
    ),
    formats: str = typer.Option(
        "html,png,svg,csv,json",
        "--format",
        help="Comma-separated: html (offline report), png, svg (every figure), csv, json "
        "(every trial), or all.",
    ),
    scale: float = typer.Option(
        1.0, "--scale", min=0.25, max=8.0, help="Pixel scale of PNGs (1: 1000 px wide)."
    ),
    as_json: bool = JSON,
) -> None:
    """Export a study: an offline HTML report, PNG/SVG figures, CSV/JSON of all trials."""
    from nasmlcn.dashboard import (
        check_export_folder,
        default_out_dir,
        export_study,
        parse_formats,
    )
    from nasmlcn.study import load_existing_study

    chosen = parse_formats(formats)  # fail on a typo before reading the study
    storage = resolve_storage(storage)
    loaded = load_existing_study(study, storage)
    # another study's export there is refused before a word of this one's
    folder = out_dir if out_dir is not None else default_out_dir(loaded.study_name)
    check_export_folder(folder, loaded.study_name, given=out_dir is not None)
    err.print(f"exporting {loaded.study_name} ({', '.join(chosen)}) ...", markup=False)
    result = export_study(loaded, out_dir, chosen, storage=storage, scale=scale)
    if as_json:
        print(json.dumps(result.to_dict()))
        return
    for path in result.files:
        out.print(str(path), markup=False, soft_wrap=True)
    size = f", report {result.html_bytes / 1e6:.1f} MB" if result.html_bytes else ""
    out.print(
        f"wrote {len(result.files)} files to {result.out_dir} in "
        f"{result.seconds['total']:.1f} s{size}",
        markup=False,
        soft_wrap=True,
    )
