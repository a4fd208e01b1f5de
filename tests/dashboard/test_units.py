"""Times in milliseconds on every screen, table and figure; stored attributes and CSV
columns keep seconds with the unit in their name (``latency_s``). The terminal gave
latency in ms while the report's Pareto table and the history plot gave seconds
(``latency_s 0.01688``), and ``--latency-budget`` took seconds only."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pytest

from nasmlcn.dashboard import build_figures, extract_report
from nasmlcn.search import SearchConfig
from tests.conftest import run_cli
from tests.dashboard.conftest import Made


def test_the_history_plot_draws_latency_in_ms(pareto_study: Made) -> None:
    data = extract_report(pareto_study.load(), importances=False)
    figure = build_figures(data)["optimization_history"]
    latency = next(h for h in data.histories if h.name == "latency_s")
    axes = {a.title.text for a in figure.select_yaxes()}
    assert any(t.startswith("latency (ms)") for t in axes), axes
    stored = sorted(latency.values)
    latency_row = [t for t in figure.data if t.mode == "markers" and t.yaxis == "y2"]
    assert latency_row, "the latency row is the second subplot"
    shown = sorted(y for t in latency_row for y in t.y)
    assert shown == pytest.approx([v * 1e3 for v in stored])


def test_the_report_s_tables_give_ms_and_the_files_keep_seconds(
    exported_report: Path, pareto_study: Made, tmp_path: Path
) -> None:
    html = (exported_report / "report.html").read_text()
    best = html[
        html.index('<section id="best">') : html.index("</section>", html.index('id="best"'))
    ]
    assert "<th>latency (ms)</th>" in best or "latency (ms)</th>" in best
    assert "latency_s" not in best
    summary = html[: html.index('<section id="best">')]
    assert re.search(r"<dt>latency budget</dt><dd>15(\.0)? ms</dd>", summary), summary[-2000:]
    assert "latency_s 0." not in html  # the hypervolume's reference point too
    exported = run_cli(
        *("export", "--study", pareto_study.name, "--storage", pareto_study.url),
        *("--out", str(tmp_path / "x"), "--format", "csv,json"),
    )
    assert exported.returncode == 0, exported.stderr
    with (tmp_path / "x" / "trials.csv").open(newline="") as f:
        header = next(csv.reader(f))
    assert "latency_s" in header  # stored and written in seconds, named so
    trials = json.loads((tmp_path / "x" / "trials.json").read_text())["trials"]
    assert all(t["values"]["latency_s"] < 1 for t in trials if t["values"])


@pytest.mark.parametrize("given", ["5ms", "0.005s", "5 ms", 0.005])
def test_a_latency_budget_takes_a_unit(given: str | float) -> None:
    # text needs its unit (as best --max does); a number is seconds, as a study stores it
    assert SearchConfig(latency_budget=given).latency_budget == pytest.approx(0.005)  # type: ignore[arg-type]


def test_the_cli_takes_a_latency_budget_in_ms_and_refuses_a_non_time(tmp_path: Path) -> None:
    storage = f"sqlite:///{tmp_path / 's.db'}"
    common = ("search", "--evaluator", "proxy", "--trials", "1", "--storage", storage, "-q")
    made = run_cli(*common, "--study", "b", "--latency-budget", "15ms", "--json")
    assert made.returncode == 0, made.stderr
    assert json.loads(made.stdout)["config"]["latency_budget"] == pytest.approx(0.015)
    bad = run_cli(*common, "--study", "c", "--latency-budget", "5 parsecs")
    assert bad.returncode == 2
    assert bad.stderr.strip() == (
        "error: --latency-budget '5 parsecs' is not a time; give a unit: 5ms or 5s (us, ms, s, min)"
    )
    bare = run_cli(*common, "--study", "d", "--latency-budget", "5")
    assert bare.returncode == 2
    assert bare.stderr.strip() == (
        "error: --latency-budget '5' has no unit; give a unit: 5ms or 5s (us, ms, s, min)"
    )
