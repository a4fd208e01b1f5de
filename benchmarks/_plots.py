"""Writing a benchmark's plotly figure: ``NAME.html`` (plotly.js inlined: opens
offline) and ``NAME.png``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import plotly.graph_objects as go


def write_plot(fig: go.Figure, out: Path, name: str) -> list[Path]:
    """The files written: the HTML always, the PNG unless Kaleido cannot (a warning)."""
    # nasmlcn's one Kaleido path (one Chromium session, MathJax off, a clear error
    # without Chromium); a public-named helper of the export module.
    from nasmlcn.dashboard._export import write_images
    from nasmlcn.errors import ExportError

    out.mkdir(parents=True, exist_ok=True)
    html = out / f"{name}.html"
    fig.write_html(html, include_plotlyjs=True, full_html=True)
    files = [html]
    try:
        files += write_images({name: fig}, out, ("png",))
    except ExportError as err:
        print(f"warning: no PNG: {err}", file=sys.stderr)
    return files
