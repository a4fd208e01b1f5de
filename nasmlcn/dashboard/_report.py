"""The self-contained HTML report of a study.

One file that opens offline: plotly.js is inlined once in the page head (about
4.6 MB), each figure is a div with its data, and the tables are plain HTML. No
CDN, no fonts, no external request of any kind.
"""

from __future__ import annotations

import datetime as _dt
import html
import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from nasmlcn._storage_url import redact_url
from nasmlcn.dashboard._extract import MIB, ReportData, TrialRow

if TYPE_CHECKING:
    import plotly.graph_objects as go

    from nasmlcn.dashboard._figures import FigureSpec

SHOWN_BEST_ROWS = 10
"""Rows of the best-trials table shown unfolded."""
MAX_BEST_ROWS = 500
"""Rows of the best-trials table in all (the CSV export has every trial)."""

PLOT_CONFIG = {
    "displaylogo": False,
    "responsive": True,
    "toImageButtonOptions": {"format": "png", "scale": 2},
}

_STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 0;
       color: #1f2933; background: #fafbfc; }
header { background: #1f2933; color: #fff; padding: 18px 32px; }
header h1 { margin: 0 0 4px 0; font-size: 22px; word-break: break-all; }
header p { margin: 2px 0; color: #cbd2d9; font-size: 14px; }
nav { padding: 8px 32px; background: #e4e7eb; font-size: 14px; position: sticky; top: 0;
      z-index: 10; }
nav a { margin-right: 14px; color: #1f2933; }
main { padding: 8px 32px 32px 32px; max-width: 1400px; }
section { background: #fff; border: 1px solid #e4e7eb; border-radius: 6px; margin: 18px 0;
          padding: 14px 18px; }
section h2 { margin: 0 0 4px 0; font-size: 18px; }
p.desc { margin: 2px 0 10px 0; color: #52606d; font-size: 14px; max-width: 1100px; }
p.warn { background: #fff3c4; padding: 6px 10px; border-radius: 4px; }
table { border-collapse: collapse; font-size: 13px; }
th, td { border-bottom: 1px solid #e4e7eb; padding: 4px 10px; text-align: right;
         vertical-align: top; }
th { background: #f5f7fa; }
th.group, td.group { border-left: 2px solid #9aa5b1; }
td.text, th.text { text-align: left; }
td.mono { font-family: ui-monospace, Menlo, monospace; font-size: 12px; text-align: left;
          max-width: 520px; word-break: break-all; }
details summary { cursor: pointer; color: #52606d; font-size: 13px; margin: 6px 0; }
dl { display: grid; grid-template-columns: max-content auto; gap: 2px 16px; font-size: 14px;
     margin: 0; }
dt { color: #52606d; }
dd { margin: 0; }
footer { color: #7b8794; font-size: 12px; padding: 0 32px 24px 32px; }
"""


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _num(value: Any, digits: int = 4) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "-"
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return f"{value:.{digits}g}"
    return _e(value)


def render_report(
    data: ReportData,
    figures: Mapping[str, go.Figure],
    specs: Sequence[FigureSpec],
    *,
    storage: str | None = None,
    plotly_js: str | None = None,
) -> str:
    """The report page.

    Args:
        data: The extracted study.
        figures: Built figures by name (those left out are listed as not shown).
        specs: Every registered figure, in report order.
        storage: The storage URL, shown in the header (its password hidden).
        plotly_js: plotly.js to inline (default: the one shipped with plotly).
    """
    if plotly_js is None:
        from plotly.offline import get_plotlyjs

        plotly_js = get_plotlyjs()
    study = data.study
    nav = ['<a href="#summary">summary</a>', '<a href="#best">best trials</a>']
    retrained = _retrained_section(data)
    if retrained:
        nav.append('<a href="#retrained">retrained</a>')
    sections, links = _figure_sections(figures, specs)
    nav += links
    sections.append(_correlation_section(data))
    nav.append('<a href="#correlation_table">correlation table</a>')
    missing = [s for s in specs if s.name not in figures]
    if missing:
        sections.append(_not_shown_section(missing, data))
    return "".join(
        [
            "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>",
            "<meta name='viewport' content='width=device-width, initial-scale=1'>",
            f"<title>nasmlcn report: {_e(study.name)}</title><style>{_STYLE}</style>",
            # plotly.js once, inline: the page must work from a file with no network.
            f'<script type="text/javascript">{plotly_js}</script></head><body>',
            _header(data, storage),
            "<nav>" + "".join(nav) + "</nav><main>",
            _summary_section(data),
            _best_section(data),
            retrained,
            *sections,
            f"</main><footer>{_footer(data)}</footer></body></html>\n",
        ]
    )


def _figure_sections(
    figures: Mapping[str, go.Figure], specs: Sequence[FigureSpec]
) -> tuple[list[str], list[str]]:
    """A section per built figure, in report order, and the navigation links to them."""
    import plotly.io as pio

    sections = []
    nav = []
    for spec in specs:
        fig = figures.get(spec.name)
        if fig is None:
            continue
        div = pio.to_html(
            fig,
            full_html=False,
            include_plotlyjs=False,
            include_mathjax=False,
            div_id=f"fig-{spec.name}",
            config=PLOT_CONFIG,
            default_height=f"{int(fig.layout.height or 450)}px",
        )
        sections.append(
            f'<section id="{_e(spec.name)}"><h2>{_e(spec.title)}</h2>'
            f'<p class="desc">{_e(spec.description)}</p>{div}</section>'
        )
        nav.append(f'<a href="#{_e(spec.name)}">{_e(spec.title.lower())}</a>')
    return sections, nav


def _not_shown_section(missing: Sequence[FigureSpec], data: ReportData) -> str:
    """The section listing the figures left out, each with the reason."""
    items = "".join(f"<li>{_e(s.title)}: {_e(_why_missing(s.name, data))}</li>" for s in missing)
    return f'<section id="not_shown"><h2>Not shown</h2><ul class="desc">{items}</ul></section>'


def _header(data: ReportData, storage: str | None) -> str:
    """The page header: the study's name, trial counts, objectives and storage."""
    study = data.study
    counts = ", ".join(f"{n} {s.lower()}" for s, n in sorted(study.state_counts.items()))
    objectives = ", ".join(
        f"{n} ({'max' if d == 'maximize' else 'min'})"
        for n, d in zip(study.metric_names, study.directions, strict=False)
    )
    return "".join(
        [
            f"<header><h1>{_e(study.name)}</h1>",
            f"<p>{len(study.rows)} trials ({_e(counts or 'none')}) · objectives: {_e(objectives)}</p>",
            f"<p>storage: {_e(redact_url(storage))}</p>" if storage else "",
            "</header>",
        ]
    )


def _footer(data: ReportData) -> str:
    """The footer's text: when the report was made, and the versions that wrote the study."""
    study = data.study
    versions = study.record.versions
    generated = _dt.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    footer = f"generated by nasmlcn export on {_e(generated)}"
    if versions:
        footer += " · study written with " + ", ".join(
            f"{_e(k)} {_e(v)}" for k, v in sorted(versions.items())
        )
    return footer


def _why_missing(name: str, data: ReportData) -> str:
    study = data.study
    if not study.complete:
        return "no completed trials"
    if name in ("pareto_front", "hypervolume_history") and not study.multi_objective:
        return "single-objective study"
    if name == "param_importances":
        return f"parameter importances {data.importances.skipped or 'unavailable'}"
    if name == "placement":
        return "no feasible trial with a placement plan"
    if name == "epoch_correlation":
        return "needs at least 3 completed trials with per-epoch accuracy"
    return "nothing to show for this study"


def _summary_section(data: ReportData) -> str:
    from nasmlcn.dashboard._labels import format_seconds, metric_label, metric_unit

    study = data.study
    record = study.record
    config = record.config
    items: list[tuple[str, Any]] = []
    for label, key in (
        ("target devices", "devices"),
        ("memory per device", "mem"),
        ("FLOPS budget", "flops"),
        ("search space", "space"),
        ("sampler", "sampler"),
        ("evaluator", "evaluator"),
        ("dataset", "dataset"),
        ("epochs per trial", "epochs"),
        ("cost model", "cost_model"),
        ("latency budget", "latency_budget"),
        ("seed", "seed"),
    ):
        if config.get(key) is not None:
            items.append((label, config[key]))
    items = [  # a budget on the step time, stored in seconds, shown as every time is
        (label, format_seconds(v) if label == "latency budget" else v) for label, v in items
    ]
    if record.created:
        items.append(("created", record.created))
    hv = data.hypervolume
    if hv is not None and hv.values:
        unit = next((r.time_unit for r in study.models), "s")
        reference = ", ".join(
            f"{metric_label(n, unit)} {v * metric_unit(n, unit)[2]:.4g}"
            for n, v in zip(study.metric_names, hv.reference_point, strict=False)
        )
        items.append(("final hypervolume", f"{hv.values[-1]:.4f} (reference point {reference})"))
    body = "".join(f"<dt>{_e(k)}</dt><dd>{_e(v)}</dd>" for k, v in items)
    warn = ""
    if study.accuracy_is_proxy:
        warn = (
            '<p class="warn">The accuracy of this study comes from the proxy evaluator, an '
            "analytic stand-in for training: it ranks architectures plausibly but is not a "
            "measured accuracy.</p>"
        )
    if not record.made_by_nasmlcn:
        warn += (
            '<p class="desc">This study was not written by nasmlcn: only Optuna data are shown.</p>'
        )
    return f'<section id="summary"><h2>Summary</h2>{warn}<dl>{body}</dl></section>'


def _best_section(data: ReportData) -> str:
    """The best trials in one table whose headings fall into three groups: the
    trial, what was predicted for the target devices (named), and what was
    measured where the trial trained (named, with its spread), a rule between
    the groups so that figures for different devices do not run together."""
    from nasmlcn.dashboard._labels import PREDICTED_METRICS, metric_label, predicted_on
    from nasmlcn.study import knee

    study = data.study
    best = data.best
    title = "Pareto front" if study.multi_objective else "Best trials"
    desc = (
        "Feasible trials that no other feasible trial beats in every objective, best first "
        "objective first."
        if study.multi_objective
        else "The best feasible completed trials."
    )
    devices = study.target_devices
    on = predicted_on(devices)
    device = _measured_device(best)
    where = f"on {device}" if device else "where each trial trained"
    desc += (
        f" Predicted: the cost model's figures for the target devices ({_e(devices or '?')}). "
        f"Measured: inference latency per image (batch 1, no decoder) {_e(where)}, after "
        "training: the median of the timed passes and their interquartile range (IQR); "
        "- where nothing was measured (the proxy evaluator)."
    )
    marked = knee(best, study.directions) if study.multi_objective else None
    desc += _knee_text(marked)
    if any(r.proposed > 1 for r in best):
        desc += (
            " Each model is shown once: # (xN) is the trial that trained it, and N the "
            "trials that proposed it (the others took its result, trained nothing)."
        )
    names = study.metric_names
    own = [n for n in names if n not in PREDICTED_METRICS]
    predicted = [n for n in names if n in PREDICTED_METRICS]
    unit = next((r.time_unit for r in best), "s")  # latency_s is shown in ms, as everywhere
    groups = (
        ("", ["#", *(metric_label(n, unit) for n in own), "lanes", "lane mix", "params"]),
        (
            on,
            [
                *(metric_label(n, unit) for n in predicted),
                "peak memory",
                "imbalance",
                "inference per image",
            ],
        ),
        (f"measured {where}", ["inference per image (median, IQR)"]),
    )
    top = "".join(
        f'<th colspan="{len(heads)}" class="group">{_e(label)}</th>' for label, heads in groups
    )
    head = "".join(
        f'<th class="{"text" if h == "lane mix" else ""}'
        f'{" group" if i == 0 and label else ""}">{_e(h)}</th>'
        for label, heads in groups
        for i, h in enumerate(heads)
    )
    head = f"<tr>{top}</tr><tr>{head}</tr>"
    row = lambda r: _best_row(r, names, own, predicted, device, r is marked)  # noqa: E731
    shown = [row(r) for r in best[:SHOWN_BEST_ROWS]]
    folded = [row(r) for r in best[SHOWN_BEST_ROWS:MAX_BEST_ROWS]]
    table = f"<table><thead>{head}</thead><tbody>{''.join(shown)}</tbody></table>"
    if folded:  # a long front stays one click away, so the figures are not pushed down
        table += (
            f"<details><summary>{len(folded)} more</summary><table><thead>{head}"
            f"</thead><tbody>{''.join(folded)}</tbody></table></details>"
        )
    if len(best) > MAX_BEST_ROWS:
        table += f'<p class="desc">... and {len(best) - MAX_BEST_ROWS} more in trials.csv.</p>'
    if not best:
        table = '<p class="desc">No completed feasible trial yet.</p>'
    return (
        f'<section id="best"><h2>{title} ({len(best)})</h2><p class="desc">{desc}</p>'
        f"{table}</section>"
    )


def _knee_text(marked: TrialRow | None) -> str:
    """What the best-trials table says of the knee it marks (nothing for none)."""
    if marked is None:
        return ""
    return (
        f" The knee, trial {marked.number} (marked): the front's trial nearest the ideal "
        "point, each objective scaled to [0, 1] over the front (nasmlcn best --pick knee)."
    )


def _measured_device(rows: Sequence[TrialRow]) -> str | None:
    """The one device the rows' inference latencies were measured on (None:
    none measured, or several)."""
    from nasmlcn.dashboard._labels import common_device

    return common_device([r.attrs.get("training") or {} for r in rows])


def _best_row(
    r: TrialRow,
    names: Sequence[str],
    own: Sequence[str],
    predicted_names: Sequence[str],
    device: str | None,
    is_knee: bool = False,
) -> str:
    from nasmlcn.dashboard._labels import format_measured, metric_unit

    by_name = {
        n: v * metric_unit(n, r.time_unit)[2] if isinstance(v, (int, float)) else v
        for n, v in zip(names, r.values or (), strict=False)
    }
    own_values = "".join(f"<td>{_num(by_name.get(n))}</td>" for n in own)
    predicted_values = "".join(
        f'<td class="{"group" if i == 0 else ""}">{_num(by_name.get(n))}</td>'
        for i, n in enumerate(predicted_names)
    )
    memory = f"{r.peak_memory_bytes / MIB:.4g} MiB" if r.peak_memory_bytes is not None else "-"
    imbalance = f"{r.imbalance:.1%}" if r.imbalance is not None else "-"
    params = f"{r.model_params:,}" if isinstance(r.model_params, int) else "-"
    predicted = (r.attrs.get("predicted") or {}).get("inference_latency_s")
    measured = format_measured(r.attrs.get("training") or {}, device=device is None)
    first = "" if predicted_names else ' class="group"'
    return (
        f"<tr><td>{r.number}{f' (x{r.proposed})' if r.proposed > 1 else ''}"
        f"{' <b>knee</b>' if is_knee else ''}</td>{own_values}<td>{_num(r.num_lanes)}</td>"
        f'<td class="mono">{_e(r.lane_mix or r.lanes or "")}</td><td>{params}</td>'
        f"{predicted_values}<td{first}>{memory}</td><td>{imbalance}</td>"
        f'<td>{_time(predicted, r.time_unit)}</td><td class="group">{_e(measured)}</td></tr>'
    )


def _time(value: Any, unit: str) -> str:
    """Seconds as ``1.23 ms``; other units (``w2d``) as numbers with the unit."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return "-"
    return f"{value * 1e3:.3g} ms" if unit == "s" else f"{value:.4g} {_e(unit)}"


def _retrained_section(data: ReportData) -> str:
    """The trials ``nasmlcn retrain`` trained again, and how well the search's
    early epochs predicted their test accuracy (empty: none retrained)."""
    from nasmlcn.search import retrained_correlations
    from nasmlcn.study import retrained_by_trial, retrained_models

    models = retrained_models(data.study.record)
    if not models:
        return ""
    heads = (
        "#", "dataset", "seed", "lanes", "search val acc", "epochs", "test acc", "tested",
        "test images", "params", "measured on", "train img/s", "inference img/s", "weights",
    )  # fmt: skip
    head = "".join(f"<th>{_e(h)}</th>" for h in heads)
    body = "".join(
        f"<tr><td>{m.number}</td><td class='text'>{_e(m.dataset)}</td>"
        f"<td>{'-' if m.seed is None else m.seed}</td>"
        f'<td class="mono">{_e(m.lanes)}</td><td>{_num(m.search_accuracy)}</td>'
        f"<td>{m.epochs}</td><td>{m.test_accuracy:.4f}</td>"
        f'<td class="text" title="{_e(m.protocol_text)}">{_e(m.tested)}</td>'
        f"<td>{m.test_images}</td>"
        f"<td>{m.params:,}</td><td>{_e(m.device)}</td><td>{m.train_images_per_second:.0f}</td>"
        f"<td>{m.inference_images_per_second:.0f} (batch {m.inference_batch_size})</td>"
        f'<td class="mono">{_e(m.weights)}</td></tr>'
        for m in models
    )
    curves = {r.number: r.accuracy_per_epoch for r in data.study.complete}
    # one model per trial (the search's seed), as `nasmlcn correlate`
    rows = retrained_correlations(curves, list(retrained_by_trial(data.study.record).values()))
    table = ""
    if rows:
        cells = "".join(
            f"<tr><td>{c.epoch}</td><td>{c.trials}</td><td>{_num(c.pearson, 3)}</td>"
            f"<td>{_num(c.spearman, 3)}</td></tr>"
            for c in rows
        )
        table = (
            '<p class="desc">Correlation between the validation accuracy after search epoch '
            "n and the retrained test accuracy, over the retrained trials (NASCaps Table 2 "
            "with the retrained model as the fully trained one; <code>nasmlcn correlate"
            "</code>).</p><table><thead><tr><th>epoch n</th><th>trials</th><th>Pearson r"
            f"</th><th>Spearman ρ</th></tr></thead><tbody>{cells}</tbody></table>"
        )
    return (
        '<section id="retrained"><h2>Retrained</h2><p class="desc">Trials trained again '
        "and tested by <code>nasmlcn retrain</code> (NASCaps' second stage): test accuracy "
        "on the test set the search never used, of the weights of the epoch with the best "
        "validation accuracy (<i>ep 9/10 by val.</i>), of a refit on training + validation "
        "images for the epochs so chosen (<i>refit, 9 ep</i>, <code>--refit</code>) or, "
        "retrained before epochs were selected, after the last epoch; parameters, training "
        "and inference "
        "throughput (images/s, inference forward only) measured on the machine that "
        "retrained them (not the search's target devices), and the weights written.</p>"
        f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>{table}</section>"
    )


def _correlation_section(data: ReportData) -> str:
    rows = data.correlations
    desc = (
        "Pearson and Spearman correlation between the validation accuracy after epoch n and "
        "after the last epoch, over the completed trials (NASCaps Table 2; "
        "<code>nasmlcn correlate</code>)."
    )
    if not rows:
        return (
            '<section id="correlation_table"><h2>Early-epoch correlation</h2>'
            f'<p class="desc">{desc}</p><p class="desc">No completed trial has per-epoch '
            "accuracy.</p></section>"
        )
    body = "".join(
        f"<tr><td>{c.epoch}</td><td>{c.trials}</td><td>{_num(c.pearson, 3)}</td>"
        f"<td>{_num(c.spearman, 3)}</td></tr>"
        for c in rows
    )
    return (
        '<section id="correlation_table"><h2>Early-epoch correlation</h2>'
        f'<p class="desc">{desc}</p><table><thead><tr><th>epoch n</th><th>trials</th>'
        f"<th>Pearson r</th><th>Spearman ρ</th></tr></thead><tbody>{body}</tbody></table>"
        "</section>"
    )
