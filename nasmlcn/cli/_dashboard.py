"""``nasmlcn dashboard`` (optuna-dashboard, live) and ``nasmlcn export`` (report files)."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from nasmlcn._storage_url import redact_url, resolve_storage
from nasmlcn.cli._console import err, out
from nasmlcn.cli._options import STORAGE


def dashboard(
    storage: str | None = STORAGE,
    host: str = typer.Option(
        "127.0.0.1", "--host", help="Address to listen on (keep 127.0.0.1 unless you mean it)."
    ),
    port: int = typer.Option(8080, "--port", min=0, max=65535, help="Port (0: any free port)."),
    refresh: bool = typer.Option(
        False,
        "--refresh",
        help="Rewrite nasmlcn's figures and trial notes in every study before serving "
        "(by default only studies that lack them get them).",
    ),
    artifacts: Path | None = typer.Option(
        None,
        "--artifacts",
        help="The searches' artifact folder, to list trial weights [default: artifacts/ "
        "beside a SQLite study file, else studies/artifacts].",
    ),
) -> None:
    """Start optuna-dashboard on the study storage (Ctrl-C stops it)."""
    from nasmlcn.dashboard import make_dashboard_server

    storage = resolve_storage(storage)
    shown = redact_url(storage)
    # a spinner (on a terminal only) while it opens: an error stays the one line on stderr
    with err.status(f"opening {shown} ..."):
        server = make_dashboard_server(
            storage, host, port, refresh=refresh, artifacts=str(artifacts) if artifacts else None
        )
    err.print(f"opened {shown}", markup=False, soft_wrap=True)
    shown_host = f"[{host}]" if ":" in host else host
    # The URL is the command's result (stdout), so scripts can read where it listens.
    out.print(
        f"optuna-dashboard on http://{shown_host}:{server.server_port}/dashboard",
        markup=False,
        soft_wrap=True,
    )
    err.print("press Ctrl-C to stop")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        err.print("stopped")
    finally:
        server.server_close()


def export(
    study: str | None = typer.Option(
        None, "--study", help="Study name [default: the only study in the storage]."
    ),
    storage: str | None = STORAGE,
    out_dir: Path | None = typer.Option(
        None, "--out", help="Folder to write into [default: dashboards/exports/<study>]."
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
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object on stdout."),
) -> None:
    """Export a study: an offline HTML report, PNG/SVG figures, CSV/JSON of all trials."""
    from nasmlcn.dashboard import export_study, parse_formats
    from nasmlcn.study import load_existing_study

    chosen = parse_formats(formats)  # fail on a typo before reading the study
    storage = resolve_storage(storage)
    loaded = load_existing_study(study, storage)
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
