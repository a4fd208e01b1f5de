"""``nasmlcn export``: a study's report, figures and data as files.

Writes into one folder (default ``dashboards/exports/<study>``, which git ignores)::

    report.html             self-contained report (plotly.js inlined; opens offline)
    figures/<name>.png|svg  every figure of the report
    trials.csv              one row per trial, every attribute flattened
    trials.json             the study's nasmlcn attributes and every trial in full

All PNG and SVG files are rendered by one headless Chromium (Kaleido), which is
what keeps a 500-trial export under half a minute on two cores: starting Chromium
costs seconds, each image a fraction of one. The process keeps that Chromium for
its next export (:mod:`nasmlcn.dashboard._chromium`).
"""

from __future__ import annotations

import csv
import hashlib
import json
import logging
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nasmlcn.dashboard._extract import StudyData, extract_report, trial_records, trial_table
from nasmlcn.errors import ExportError, option
from nasmlcn.registry import did_you_mean

if TYPE_CHECKING:
    import optuna
    import plotly.graph_objects as go

logger = logging.getLogger(__name__)

FORMATS = ("html", "png", "svg", "csv", "json")
IMAGE_FORMATS = ("png", "svg")
DEFAULT_EXPORT_ROOT = Path("dashboards/exports")


@dataclass
class ExportResult:
    """What :func:`export_study` wrote.

    Attributes:
        study: Study name.
        out_dir: The folder written into.
        files: Every file written, in the order written.
        figures: Names of the figures built (the report shows these).
        seconds: Wall time per step (``extract``, ``figures``, ``html``, ``images``,
            ``data``) and ``total``.
        html_bytes: Size of ``report.html`` (None when not written).
    """

    study: str
    out_dir: Path
    files: list[Path] = field(default_factory=list)
    figures: list[str] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)
    html_bytes: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "study": self.study,
            "out_dir": str(self.out_dir),
            "files": [str(p) for p in self.files],
            "figures": self.figures,
            "seconds": self.seconds,
            "html_bytes": self.html_bytes,
        }


def parse_formats(text: str | Sequence[str]) -> tuple[str, ...]:
    """``"html,png"`` -> ``("html", "png")``; ``all`` means every format.

    Raises:
        ExportError: An unknown format (with the closest known one).
    """

    items = text.split(",") if isinstance(text, str) else list(text)
    out: list[str] = []
    for item in (i.strip().lower().lstrip(".") for i in items):
        if not item:
            continue
        if item == "all":
            return FORMATS
        if item not in FORMATS:
            hint = did_you_mean(
                item, FORMATS, otherwise="choose from " + ", ".join(FORMATS), most=1
            )
            raise ExportError(f"unknown export format {item!r}; {hint}")
        if item not in out:
            out.append(item)
    if not out:
        raise ExportError("no export format given; choose from " + ", ".join(FORMATS))
    return tuple(out)


def default_out_dir(study_name: str) -> Path:
    """``dashboards/exports/<study>`` (git-ignored). A name a folder cannot take as
    it is (``a b``, ``..``) has its other characters replaced and a hash of the
    name appended, so it stays inside the exports and two such names never share
    a folder."""
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in study_name)
    if safe != study_name or not safe.strip("."):
        digest = hashlib.sha256(study_name.encode()).hexdigest()[:8]
        safe = f"{safe.replace('.', '_')}-{digest}"
    return DEFAULT_EXPORT_ROOT / safe


def export_study(
    study: optuna.Study,
    out_dir: Path | str | None = None,
    formats: Sequence[str] = FORMATS,
    *,
    storage: str | None = None,
    scale: float = 1.0,
) -> ExportResult:
    """Writes ``study``'s report, figures and trial data into ``out_dir``.

    Args:
        study: The study to export.
        out_dir: Destination folder (created); default ``dashboards/exports/<study>``.
        formats: Any of ``html``, ``png``, ``svg``, ``csv``, ``json``.
        storage: The storage URL, shown in the report header.
        scale: Pixel scale of the PNG images (1: 1000 pixels wide).

    Raises:
        ExportError: Unknown format, a folder that cannot be written, or PNG/SVG
            requested without a Chromium for Kaleido (the other files are
            written first).
    """
    formats = parse_formats(formats)
    started = time.perf_counter()
    out = Path(out_dir) if out_dir is not None else default_out_dir(study.study_name)
    earlier = check_export_folder(out, study.study_name, given=out_dir is not None)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise ExportError(f"cannot create {str(out)!r}: {err.strerror}") from None
    for name in earlier:  # this study's earlier export: none of its files stays stale
        (out / name).unlink(missing_ok=True)
    result = ExportResult(study.study_name, out)

    tick = time.perf_counter()
    need_figures = any(f in formats for f in ("html", *IMAGE_FORMATS))
    data = extract_report(study, importances=need_figures)
    result.seconds["extract"] = time.perf_counter() - tick

    if "csv" in formats or "json" in formats:
        tick = time.perf_counter()
        if "csv" in formats:
            result.files.append(write_csv(data.study, out / "trials.csv"))
        if "json" in formats:
            result.files.append(write_json(data.study, out / "trials.json"))
        result.seconds["data"] = time.perf_counter() - tick

    if need_figures:
        from nasmlcn.dashboard._figures import build_figures, figure_specs

        tick = time.perf_counter()
        figures = build_figures(data)
        result.figures = list(figures)
        result.seconds["figures"] = time.perf_counter() - tick
        if "html" in formats:
            from nasmlcn.dashboard._report import render_report

            tick = time.perf_counter()
            page = render_report(data, figures, figure_specs(), storage=storage)
            path = out / "report.html"
            path.write_text(page, encoding="utf-8")
            result.files.append(path)
            result.html_bytes = path.stat().st_size
            result.seconds["html"] = time.perf_counter() - tick
        images = [f for f in formats if f in IMAGE_FORMATS]
        if images and figures:
            tick = time.perf_counter()
            result.files += write_images(figures, out / "figures", images, scale=scale)
            result.seconds["images"] = time.perf_counter() - tick
    written = sorted(str(p.relative_to(out)) for p in result.files)
    mark = {"study": study.study_name, "files": written}
    (out / EXPORT_MARK).write_text(json.dumps(mark, indent=1) + "\n", encoding="utf-8")
    result.seconds["total"] = time.perf_counter() - started
    logger.info("exported %s to %s in %.1f s", study.study_name, out, result.seconds["total"])
    return result


EXPORT_MARK = ".nasmlcn-export.json"
"""In an export folder: the study exported there and the files written."""


def check_export_folder(out: Path, study_name: str, *, given: bool) -> list[str]:
    """Refuses to export ``study_name`` into a folder that holds anything but an
    earlier export of the same study (another study's report and figures beside this
    one's, or a folder of the user's own); returns the files that earlier export
    wrote (relative to ``out``). ``given``: the user named the folder (the default
    folder, named after the study, may hold an export older than the mark).

    Raises:
        ExportError: ``out`` is a file, or holds another study's export or other files.
    """
    if not out.exists():
        return []
    if not out.is_dir():
        raise ExportError(f"{option('out')} {str(out)!r} is a file; give a folder")
    names = [p.name for p in out.iterdir()]
    if not names:
        return []
    mark = out / EXPORT_MARK
    if not mark.is_file():
        if not given:
            return []
        raise ExportError(
            f"{option('out')} {str(out)!r} already holds files that are no export of study "
            f"{study_name!r}; give a new or empty folder (an export never mixes with them)"
        )
    try:
        earlier = json.loads(mark.read_text(encoding="utf-8"))
        owner, files = str(earlier["study"]), [str(f) for f in earlier["files"]]
    except (OSError, ValueError, KeyError, TypeError):
        raise ExportError(
            f"{option('out')} {str(out)!r}: its {EXPORT_MARK} cannot be read; give a new or "
            "empty folder"
        ) from None
    if owner != study_name:
        raise ExportError(
            f"{option('out')} {str(out)!r} holds the export of study {owner!r}; give another "
            f"folder for study {study_name!r} (two studies' reports and figures never mix)"
        )
    return [f for f in files if ".." not in Path(f).parts and not Path(f).is_absolute()]


def write_images(
    figures: Mapping[str, go.Figure],
    folder: Path,
    formats: Sequence[str] = IMAGE_FORMATS,
    *,
    scale: float = 1.0,
) -> list[Path]:
    """Renders every figure in every format with this process's Kaleido browser
    (:mod:`nasmlcn.dashboard._chromium`: started once, kept for the next export).

    Raises:
        ExportError: Kaleido finds no Chromium.
    """
    from kaleido.errors import ChromeNotFoundError

    from nasmlcn.dashboard._chromium import render
    from nasmlcn.dashboard._figures import WIDTH

    folder.mkdir(parents=True, exist_ok=True)
    specs = []
    paths = []
    for name, fig in figures.items():
        fig_dict = static_figure(fig)
        height = int(fig.layout.height or 500)
        for fmt in formats:
            path = folder / f"{name}.{fmt}"
            specs.append(
                {
                    "fig": fig_dict,
                    "path": path,
                    "opts": {"format": fmt, "width": WIDTH, "height": height, "scale": scale},
                }
            )
            paths.append(path)
    try:
        render(specs)
    except ChromeNotFoundError:
        raise ExportError(
            "PNG/SVG export needs Chromium for Kaleido: install it (Debian: apt install "
            f"chromium; elsewhere: plotly_get_chrome), or leave png,svg out of {option('formats')}"
        ) from None
    missing = [p for p in paths if not p.is_file()]
    if missing:
        raise ExportError(f"Kaleido did not write {', '.join(str(p) for p in missing[:3])}")
    return paths


STATIC_CONTROLS = ("updatemenus", "sliders")
"""Layout keys of plotly's buttons, menus and sliders: they do nothing on paper."""


def static_figure(fig: go.Figure) -> dict[str, Any]:
    """``fig`` as a plotly JSON dict for a PNG or SVG: without its buttons, menus and
    sliders (the figure itself, which the HTML report shows, keeps them)."""
    fig_dict = fig.to_plotly_json()
    layout = dict(fig_dict.get("layout") or {})
    for key in STATIC_CONTROLS:
        layout.pop(key, None)
    return {**fig_dict, "layout": layout}


def _csv_value(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value


def write_csv(data: StudyData, path: Path) -> Path:
    """Every trial as one CSV row (:func:`~nasmlcn.dashboard.trial_table`)."""
    columns, rows = trial_table(data)
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=columns, extrasaction="ignore")
        writer.writeheader()
        for row in rows:
            writer.writerow({k: _csv_value(v) for k, v in row.items()})
    return path


def _json_safe(value: Any) -> Any:
    """Non-finite floats become None (JSON has no NaN); other values unchanged."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    return value


def write_json(data: StudyData, path: Path) -> Path:
    """The study and every trial with all its attributes, as one JSON object."""
    with path.open("w", encoding="utf-8") as f:
        json.dump(_json_safe(trial_records(data)), f, allow_nan=False, default=str)
        f.write("\n")
    return path
