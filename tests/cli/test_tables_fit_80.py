"""Tables fit 80 columns: each unit in its heading once, the
devices named once above the table, long lane mixes cut with ``…`` and whole in
``--json``; times in ms and memory in MiB, as the figures draw them."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.conftest import run_cli

DEVICES = "1xK80,1xM40,1xP100,1xV100"
NARROW = {"COLUMNS": "80"}


@pytest.fixture(scope="module")
def storage(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A three-objective NSGA-II study on four kinds of device (proxy: seconds)."""
    folder = tmp_path_factory.mktemp("narrow")
    url = f"sqlite:///{folder / 's.db'}"
    result = run_cli(
        *("search", "--devices", DEVICES, "--mem", "12GB", "--evaluator", "proxy"),
        *("--objectives", "accuracy,latency,memory", "--sampler", "nsga2", "--trials", "12"),
        *("--storage", url, "--study", "s"),
        env=NARROW,
    )
    assert result.returncode == 0, result.stderr
    return url


def _fits(text: str) -> None:
    wide = [line for line in text.splitlines() if len(line) > 80]
    assert not wide, wide


def test_best_fits_80_columns_with_units_once_and_devices_named_once(storage: str) -> None:
    shown = run_cli("best", "--storage", storage, env=NARROW)
    assert shown.returncode == 0, shown.stderr
    text = shown.stdout
    _fits(text)
    assert text.count(DEVICES) == 1  # above the table, not in every heading
    assert text.index(DEVICES) < text.index("Pareto front of s")
    assert "latency_" not in text
    assert "memory_M" not in text
    heading = text[text.index("Pareto front of s") : text.index("────")]
    for unit in ("(ms)", "(MiB)"):
        assert unit in heading
    rows = text[text.index("────") :].splitlines()[1:]
    table = [r for r in rows if re.match(r"\s*\d+\s", r)]
    assert table
    assert not any(" ms" in r or "MiB" in r or "GiB" in r for r in table)  # units once
    # long lane mixes are cut, and --json has them whole
    data = json.loads(run_cli("best", "--storage", storage, "--json").stdout)
    mixes = {str(t["number"]): t["lane_mix"] for t in data["best"]}
    cut = 0
    for row in table:
        number, mix = row.split()[:2]
        if mix.endswith("…"):
            cut += 1
            assert mixes[number].startswith(mix[:-1])
        else:
            assert mixes[number] == mix
    assert cut  # 12 bucket-filled models on four devices: some mixes are long


def test_the_search_summary_fits_80_columns(storage: str, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'again.db'}"
    result = run_cli(
        *("search", "--devices", DEVICES, "--mem", "12GB", "--evaluator", "proxy"),
        *("--objectives", "accuracy,latency,memory", "--sampler", "nsga2", "--trials", "6"),
        *("--storage", url, "--study", "s"),
        env=NARROW,
    )
    assert result.returncode == 0, result.stderr
    _fits(result.stdout)
    assert result.stdout.count(DEVICES) == 1
    assert "(ms)" in result.stdout


def test_figures_draw_the_tables_units_and_their_subtitles_fit(storage: str) -> None:
    """The Pareto front's axes are in ms and MiB, as the tables are; the
    hypervolume figure's subtitle is wrapped (it ran off the PNG's edge) and
    names its reference point in those units."""
    from nasmlcn.dashboard import build_figures, extract_report
    from nasmlcn.dashboard._figures._style import SUBTITLE_CHARS
    from nasmlcn.study import load_existing_study

    data = extract_report(load_existing_study("s", storage), importances=False)
    figures = build_figures(data, ["pareto_front", "hypervolume_history"])  # as the report's
    front = figures["pareto_front"]
    titles = {axis.title.text for axis in (*front.select_xaxes(), *front.select_yaxes())}
    assert {"latency (ms) ↓", "memory (MiB) ↓", "accuracy (proxy) ↑"} <= titles
    models = {r.number: r for r in data.study.models}
    trace = front.data[0]  # accuracy against latency: the dominated trials
    assert trace.x
    for label, x, y in zip(trace.text, trace.x, trace.y, strict=True):
        row = models[int(label.split()[0].lstrip("#"))]
        assert row.values is not None
        assert (x, y) == pytest.approx((row.values[0], row.values[1] * 1e3))
    hv = figures["hypervolume_history"]
    subtitle = hv.layout.title.text.split("<sup>", 1)[1].removesuffix("</sup>")
    lines = subtitle.split("<br>")
    assert len(lines) > 1
    assert all(len(line) <= SUBTITLE_CHARS for line in lines)
    assert "latency\u00a0(ms)" in subtitle
    assert "latency_s" not in subtitle
