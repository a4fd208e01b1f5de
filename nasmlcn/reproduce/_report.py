"""A result's report and the index of every report.

Per run folder (``OUT/NAME/SCALE/``): ``report.html`` (self-contained: styles
inline, figures embedded as PNG, no script, opens offline), ``report.png`` (our
figures against the paper's), ``report.csv`` (one row per figure) and
``summary.json`` (what the index and ``--json`` read). ``OUT/index.html`` links
every report found under ``OUT`` with its verdict line.
"""

from __future__ import annotations

import base64
import csv
import html
import io
import json
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from nasmlcn._io import write_text_atomic
from nasmlcn.reproduce._papers import PAPERS
from nasmlcn.reproduce._recipe import Recipe
from nasmlcn.reproduce._runner import RUN_FILE, describe_machine
from nasmlcn.reproduce._verdict import Row, Verdict, compare, fmt, gap_unit, verdict, with_unit

SUMMARY_FILE = "summary.json"
REPORT_HTML = "report.html"
REPORT_PNG = "report.png"
REPORT_CSV = "report.csv"
INDEX_HTML = "index.html"
_CSV_FIELDS = (
    "label",
    "dataset",
    "unit",
    "paper",
    "ours",
    "gap",
    "check",
    "target",
    "tolerance",
    "passed",
    "low",
    "high",
    "tie",
    "source",
    "quote",
    "plot_only",
    "error",
)
_STYLE = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2em auto;
max-width:1100px;color:#222;padding:0 1em}
h1{font-size:1.5em;margin-bottom:.2em} h2{font-size:1.15em;margin-top:1.6em}
table{border-collapse:collapse;width:100%;font-size:.92em}
th,td{border-bottom:1px solid #ddd;padding:.35em .5em;text-align:left;vertical-align:top}
th{background:#f4f4f4} td.num{text-align:right;font-variant-numeric:tabular-nums}
.verdict{padding:.6em .9em;border-radius:6px;margin:1em 0;font-weight:600}
.reproduced{background:#e3f4e1} .within{background:#fff4d6}
.not-reproduced{background:#fbe3e1} .no-paper-number{background:#e8eef7}
.smoke{background:#eeeeee} .tie{background:#fff4d6}
.quote{color:#666;font-size:.85em;font-style:italic} .muted{color:#666}
img{max-width:100%;border:1px solid #eee;margin:.5em 0}
code{background:#f4f4f4;padding:0 .25em}
"""


@dataclass(frozen=True)
class Report:
    """A written report: its verdict, rows and files."""

    name: str
    scale: str
    verdict: Verdict
    rows: list[Row]
    folder: Path

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "scale": self.scale,
            "verdict": self.verdict.to_dict(),
            "figures": [r.to_dict() for r in self.rows],
            "report": str(self.folder / REPORT_HTML),
            "png": str(self.folder / REPORT_PNG),
            "csv": str(self.folder / REPORT_CSV),
        }


def _css_class(kind: str) -> str:
    return kind.replace(" ", "-")


def _figure(rows: list[Row], title: str, judged: bool = True) -> Any:
    """Our figures as a share of the paper's (1 = the paper's value), with each
    figure's tolerance as a band: one line per figure the paper gives a number for.
    ``judged``: whether the run gets a verdict (a smoke run does not: every point grey)."""
    import plotly.graph_objects as go

    shown = [r for r in rows if r.ours is not None and r.target not in (None, 0)]
    fig = go.Figure()
    labels = [
        f"{r.label} ({r.dataset})" if r.dataset != "Fashion-MNIST" else r.label for r in shown
    ]
    for label, r in zip(labels, shown, strict=True):
        assert r.target is not None
        assert r.ours is not None
        low = (r.target - r.tolerance) / r.target
        high = (r.target + r.tolerance) / r.target
        if r.check == "at_least":
            high = max(high, r.ours / r.target, 1.0) * 1.05
        if r.check == "at_most":
            low = min(low, r.ours / r.target, 1.0) * 0.95
        fig.add_trace(
            go.Scatter(
                x=[min(low, high), max(low, high)],
                y=[label, label],
                mode="lines",
                line={"width": 14, "color": "rgba(46,139,87,0.25)"},
                hoverinfo="skip",
                showlegend=label == labels[0],
                name="agrees (tolerance)",
            )
        )
    colours = [
        "#888888"
        if r.passed is None or not judged
        else "#2e8b57"
        if r.passed
        else "#e0a800"
        if r.tie
        else "#c0392b"
        for r in shown
    ]
    fig.add_trace(
        go.Scatter(
            x=[r.ours / r.target for r in shown if r.ours is not None and r.target],
            y=labels,
            mode="markers",
            marker={"size": 12, "color": colours, "symbol": "circle"},
            name="ours (green: agrees, red: not, grey: not checked)"
            if judged
            else "ours (a smoke run: no verdict, every point grey)",
            text=[
                f"ours {fmt(r.ours, r.unit)} vs {fmt(r.target, r.unit)} ({r.source})" for r in shown
            ],
            hoverinfo="text",
        )
    )
    fig.add_vline(x=1.0, line={"color": "#555", "dash": "dash"})
    fig.update_layout(
        title=title,
        xaxis_title="ours / paper's figure (1 = the paper's value)",
        template="plotly_white",
        height=max(300, 120 + 45 * len(shown)),
        width=1000,
        margin={"l": 330},
        legend={"orientation": "h", "y": -0.25},
    )
    fig.update_yaxes(autorange="reversed")
    return fig


def _write_png(rows: list[Row], title: str, folder: Path, judged: bool = True) -> Path | None:
    if not any(r.ours is not None and r.target not in (None, 0) for r in rows):
        return None
    from nasmlcn.dashboard import write_images
    from nasmlcn.errors import ExportError

    try:
        written = write_images({"report": _figure(rows, title, judged)}, folder, ("png",))
    except (ExportError, ImportError) as err:
        # plotly and kaleido are dependencies; a bare image (a GPU box fed wheels by
        # hand) may lack them: the HTML and CSV still hold every number
        print(f"warning: no PNG for {title}: {err}", file=sys.stderr)
        return None
    return written[0] if written else None


def _write_csv(rows: list[Row], path: Path) -> None:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=_CSV_FIELDS, lineterminator="\n")
    writer.writeheader()
    for r in rows:
        d = r.to_dict()
        writer.writerow({k: "" if d[k] is None else d[k] for k in _CSV_FIELDS})
    write_text_atomic(path, buffer.getvalue())


def _img(path: Path, alt: str) -> str:
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    return f'<img alt="{html.escape(alt)}" src="data:image/png;base64,{data}">'


def _e(text: Any) -> str:
    return html.escape(str(text))


def _row_html(r: Row) -> str:
    if r.paper is not None:
        paper = _e(fmt(r.paper, r.unit))
    else:
        paper = f'<span class="muted">plot only</span><div class="quote">{_e(r.plot_only)}</div>'
    if r.ours is None:
        ours = f'<span class="muted">no figure: {_e(r.error)}</span>'
    else:
        ours = _e(fmt(r.ours, r.unit))
        if r.low is not None and r.high is not None:
            unit = gap_unit(r.unit)
            ours += (
                f'<div class="muted">95 % interval '
                f"{_e(with_unit(f'{r.low:.2f} to {r.high:.2f}', unit))}</div>"
            )
    gap = "" if r.gap is None else with_unit(f"{r.gap:+.2f}", gap_unit(r.unit))
    if r.check is None:
        check = '<span class="muted">shown, not checked</span>'
    else:
        sign = {"close": "within ±", "at_least": "at least", "at_most": "at most"}[r.check]
        target = (
            f"{fmt(r.target, r.unit)}"
            if r.check != "close"
            else f"{fmt(r.tolerance, gap_unit(r.unit))} of {fmt(r.target, r.unit)}"
        )
        if r.check != "close" and r.tolerance:
            target += f" (± {fmt(r.tolerance, gap_unit(r.unit))})"
        mark = (
            "not judged (smoke run):"
            if r.passed is None
            else "✔"
            if r.passed
            else "≈ tie:"
            if r.tie
            else "✘"
        )
        check = f"{mark} {_e(sign)} {_e(target)}"
    quote = f'<div class="quote">“{_e(r.quote)}”</div>' if r.quote else ""
    return (
        f"<tr><td>{_e(r.label)}</td><td>{_e(r.dataset)}</td><td class=num>{paper}</td>"
        f"<td class=num>{ours}</td><td class=num>{_e(gap)}</td><td>{check}</td>"
        f"<td>{_e(r.source)}{quote}</td></tr>"
    )


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.1f} min" if seconds >= 60 else f"{seconds:.0f} s"


def _busy(output: dict[str, Any]) -> list[str]:
    """The runs whose engine found the machine busy (``machine_was_busy``: the
    timing engines check the load average before and after)."""
    runs = output.get("runs")
    named = runs if isinstance(runs, dict) else {"": output}
    return [
        k or "the run"
        for k, o in named.items()
        if isinstance(o, dict) and o.get("machine_was_busy")
    ]


def _html(
    recipe: Recipe,
    scale: str,
    rows: list[Row],
    v: Verdict,
    record: dict[str, Any],
    images: list[tuple[Path, str]],
    output: dict[str, Any],
) -> str:
    paper = PAPERS[recipe.paper]
    s = recipe.scale(scale)
    seconds = float(record.get("seconds", 0.0)) + float(record.get("earlier_seconds", 0.0))
    runs = int(record.get("runs", 1))
    took = _minutes(seconds) + (f" over {runs} runs" if runs > 1 else "")
    setting = [
        ("Paper", f"{paper.short}: {paper.reference}"),
        ("Result", recipe.result),
        ("Measures", recipe.measures),
        ("Paper's setting", recipe.setting),
        ("Our scale", f"{scale}: {s.differs}"),
        ("Machine", describe_machine(record.get("machine", {}))),
        ("Command", f"nasmlcn reproduce {recipe.name} --scale {scale}"),
        ("Engine", record.get("shown", "")),
        ("Took", f"{took}, finished {record.get('finished', '?')}"),
    ]
    busy = _busy(output)
    if busy:
        setting.append(
            (
                "Caution",
                f"the engine found the machine busy during {', '.join(busy)}"
                " (load average above its cores): its timings may be off",
            )
        )
    setting_rows = "".join(
        f"<tr><th>{_e(k)}</th><td>{_e(val) if k not in ('Command', 'Engine') else '<code>' + _e(val) + '</code>'}</td></tr>"
        for k, val in setting
    )
    figures = "".join(_row_html(r) for r in rows)
    plots = "".join(f"<h2>{_e(caption)}</h2>{_img(path, caption)}" for path, caption in images)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>{_e(recipe.name)}: {_e(paper.short)} {_e(recipe.result)} ({_e(scale)})</title>
<style>{_STYLE}</style></head><body>
<p class="muted"><a href="../../{INDEX_HTML}">all results</a></p>
<h1>{_e(paper.short)} {_e(recipe.result)}</h1>
<p>{_e(recipe.measures)}</p>
<div class="verdict {_css_class(v.kind)}">{_e(v.line)}</div>
<h2>The paper's figures beside ours</h2>
<table><tr><th>figure</th><th>dataset</th><th>paper</th><th>ours</th><th>gap</th>
<th>check</th><th>source in the paper</th></tr>{figures}</table>
<h2>Setting</h2><table>{setting_rows}</table>
{plots}
<p class="muted">Files beside this page: {REPORT_CSV} (these figures), engine.json (everything
the engine measured), engine.log, run.json.</p>
</body></html>
"""


def write_report(recipe: Recipe, scale: str, folder: Path, output: dict[str, Any]) -> Report:
    """Writes the report files of one finished run into its ``folder``."""
    record = json.loads((folder / RUN_FILE).read_text(encoding="utf-8"))
    rows = compare(recipe, output, scale)
    v = verdict(rows, recipe.scale(scale), scale)
    if v.kind == "smoke":  # it measures nothing: no figure passes or fails, here or in the csv
        rows = [replace(r, passed=None, tie=False) for r in rows]
    title = f"{PAPERS[recipe.paper].short} {recipe.result}: ours against the paper ({scale})"
    (folder / REPORT_PNG).unlink(missing_ok=True)
    png = _write_png(rows, title, folder, judged=v.kind != "smoke")
    images: list[tuple[Path, str]] = []
    if png is not None:
        images.append((png, "Ours against the paper's figures"))
    for extra in sorted(folder.rglob("*.png")):
        if extra != png:
            images.append((extra, f"The engine's figure: {extra.relative_to(folder)}"))
    write_text_atomic(folder / REPORT_HTML, _html(recipe, scale, rows, v, record, images, output))
    _write_csv(rows, folder / REPORT_CSV)
    report = Report(recipe.name, scale, v, rows, folder)
    summary = {
        **report.to_dict(),
        "paper": recipe.paper,
        "result": recipe.result,
        "measures": recipe.measures,
        "seconds": float(record.get("seconds", 0.0)) + float(record.get("earlier_seconds", 0.0)),
        "machine": describe_machine(record.get("machine", {})),
        "finished": record.get("finished"),
    }
    write_text_atomic(folder / SUMMARY_FILE, json.dumps(summary, indent=2) + "\n")
    return report


def read_summaries(out: Path) -> list[dict[str, Any]]:
    """Every report's summary under ``out`` (``NAME/SCALE/summary.json``)."""
    found = []
    for path in sorted(out.glob(f"*/*/{SUMMARY_FILE}")):
        try:
            found.append(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError):
            continue
    return found


def write_index(out: Path, recipes: list[Recipe]) -> Path:
    """``OUT/index.html``: every report under ``out`` with its verdict line, in the
    order of ``recipes``, and the recipes not run there yet (with the command)."""
    summaries = read_summaries(out)
    rank = {r.name: i for i, r in enumerate(recipes)}
    summaries.sort(key=lambda s: (rank.get(s["name"], len(rank)), s["scale"]))
    counts: dict[str, int] = {}
    for s in summaries:
        counts[s["verdict"]["kind"]] = counts.get(s["verdict"]["kind"], 0) + 1
    rows = "".join(
        f'<tr><td><a href="{_e(s["name"])}/{_e(s["scale"])}/{REPORT_HTML}">{_e(s["name"])}</a></td>'
        f"<td>{_e(PAPERS[s['paper']].short if s['paper'] in PAPERS else s['paper'])}"
        f" {_e(s['result'])}</td><td>{_e(s['measures'])}</td><td>{_e(s['scale'])}</td>"
        f'<td class="{_css_class(s["verdict"]["kind"])}">{_e(s["verdict"]["line"])}</td>'
        f"<td class=num>{_e(_minutes(float(s.get('seconds', 0))))}</td></tr>"
        for s in summaries
    )
    done = {s["name"] for s in summaries}
    rows += "".join(
        f"<tr><td>{_e(r.name)}</td><td>{_e(PAPERS[r.paper].short)} {_e(r.result)}</td>"
        f'<td>{_e(r.measures)}</td><td></td><td class="muted">not run here yet:'
        f" <code>nasmlcn reproduce {_e(r.name)}</code></td><td></td></tr>"
        for r in recipes
        if r.name not in done
    )
    tally = ", ".join(f"{n} {k}" for k, n in counts.items()) or "no results yet"
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>nasmlcn reproduce: the seed papers' results</title>
<style>{_STYLE}</style></head><body>
<h1>The seed papers' results, reproduced by nasmlcn</h1>
<p>{_e(tally)}. Each report puts the paper's transcribed figures beside ours, with the
scale, the machine and the gap. Run one with <code>nasmlcn reproduce NAME --scale SCALE</code>;
list them with <code>nasmlcn reproduce --list</code>.</p>
<table><tr><th>result</th><th>paper</th><th>measures</th><th>scale</th><th>verdict</th>
<th>took</th></tr>{rows}</table></body></html>
"""
    path = out / INDEX_HTML
    write_text_atomic(path, page)
    return path
