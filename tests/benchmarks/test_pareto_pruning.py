"""``benchmarks/pareto_pruning.py`` prints what it claims: the share of the front each
rule removes, from real (proxy) searches run with and without pruning."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.benchmarks._scripts import load_script, run_json

# runs the benchmark script: with the other quick paths in CI (pytest -m slow
# tests/benchmarks), not in the default run
pytestmark = pytest.mark.slow


def test_the_benchmark_reports_the_front_kept_by_rivals_and_removed_by_the_rule_before(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    script = load_script("pareto_pruning", data_dir, monkeypatch)
    report, _ = run_json(script, capsys, "--trials", "40", "--epochs", "4", "--seeds", "0")
    (seed,) = report["seeds"]
    assert report["front_trials"] == len(seed["front"]) > 0
    assert report["front_removed_share"]["rivals"] == 0
    assert report["front_removed_share"]["rivals, live"] == 0
    assert seed["live"]["same_front"] is True
    # the live pruned search is the replay of the rule on the unpruned study
    assert seed["live"]["pruned"] == seed["replay"]["rivals"]["pruned"] > 0
    assert seed["replay"]["all trials"]["front_removed"]
    assert report["front_removed_share"]["all trials"] > 0
    latency = seed["cost_range"]["latency"]
    assert latency["front"][0] == latency["study"][0]  # the front reaches the cheap end
