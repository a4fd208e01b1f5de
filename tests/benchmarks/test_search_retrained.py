"""``benchmarks/search_retrained.py``: each search's chosen model retrained with
fresh seeds, paired against the thesis's random search."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.benchmarks._scripts import load_script, run_script


def _row(run: str, seed: int, retrained: float, distinct: int = 30) -> dict[str, Any]:
    return {
        "run": run, "seed": seed, "distinct_in_first_trials": distinct,
        "repeats": 30 - distinct, "best_after_trials": 0.6, "best_after_trainings": 0.62,
        "retrained_mean": retrained,
    }  # fmt: skip


def test_the_retrained_figure_is_paired_by_seed_and_a_tie_is_a_tie(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = load_script("search_retrained", data_dir, monkeypatch)
    base, gp = "random on mlcn-thesis", "gp on mlcn-buckets"
    # GP ahead by exactly 0.01 on every seed: a zero-width interval, ahead
    rows = [_row(base, s, 0.80 + 0.01 * s) for s in range(3)]
    rows += [_row(gp, s, 0.81 + 0.01 * s, distinct=20 + s) for s in range(3)]
    summary = script.summarize(rows, 30)
    diff = summary["samplers"][gp]["retrained_minus_baseline"]
    assert diff["mean"] == pytest.approx(0.01)
    assert diff["low"] == pytest.approx(0.01)
    assert "retrained_minus_baseline" not in summary["samplers"][base]
    assert summary["samplers"][gp]["distinct_per_trials"] == [20, 21, 22]
    text = script.render(summary)
    assert "| gp on mlcn-buckets | 21.0 (20-22) |" in text
    assert "ahead" in text
    # one seed the other way round: the interval holds 0, so it is a tie
    rows[-1] = _row(gp, 2, 0.70)
    tied = script.render(script.summarize(rows, 30))
    assert "tie" in tied
    assert "ahead" not in tied


@pytest.mark.slow
def test_a_quick_run_searches_retrains_and_resumes(data_dir: Path, tmp_path: Path) -> None:
    results = tmp_path / "r.json"
    args = ["--quick", "--json", "--results", str(results), "--workers", "1"]
    first = json.loads(run_script("search_retrained", args, data_dir).stdout)
    rows = first["rows"]
    assert len(rows) == 4  # 2 samplers x 2 seeds
    for row in rows:
        assert row["trainings"] == first["settings"]["trials"]  # a budget of trainings
        assert row["trials"] == row["trainings"] + row["repeats"]
        assert row["distinct_in_first_trials"] <= first["settings"]["trials"]
        if row["chosen"] is not None:
            assert len(row["retrained_test_accuracy"]) == 2
            assert all(0 < a <= 1 for a in row["retrained_test_accuracy"])
    again = run_script("search_retrained", args, data_dir)
    assert "0 of 4 runs to do" in again.stderr
    assert json.loads(again.stdout)["rows"] == rows
