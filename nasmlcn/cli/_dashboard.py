"""``nasmlcn dashboard``: optuna-dashboard, live, on the study storage."""

from __future__ import annotations

from pathlib import Path

import typer

from nasmlcn._storage_url import redact_url, resolve_storage
from nasmlcn.cli._console import err, out
from nasmlcn.cli._options import STORAGE, local_file


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
        parser=local_file,
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
