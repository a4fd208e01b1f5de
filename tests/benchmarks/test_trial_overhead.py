"""``benchmarks/trial_overhead.py``: each cost of a trial outside training against what
it replaced, the two sides alternating in one process, and the saving per trial."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.benchmarks._scripts import load_script, run_json

# runs the benchmark script: with the other quick paths in CI (pytest -m slow
# tests/benchmarks), not in the default run
pytestmark = pytest.mark.slow


def test_each_cost_is_timed_both_ways_with_its_saving(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    script = load_script("trial_overhead", tmp_path, monkeypatch)
    data, err = run_json(script, capsys, "--model", "2*mlcn2:1x1,1*mlcn1:1x1", "--repeats", "2")
    assert data["model"] == "2*mlcn2:1x1,1*mlcn1:1x1"
    assert data["objects"] > 10_000  # a worker's heap: torch, Optuna, SQLAlchemy
    assert list(data["rows"]) == ["collection", "build", "keep"]
    for row in data["rows"].values():
        assert row["runs"] == 2
        assert row["before_s"] > 0
        assert row["now_s"] > 0
        assert row["saved_s"] == pytest.approx(row["before_s"] - row["now_s"])
        assert row["ratio"] == pytest.approx(row["now_s"] / row["before_s"])
    assert data["saved_per_trial_s"] == pytest.approx(
        sum(r["saved_s"] for r in data["rows"].values())
    )
    assert "keep ..." in err
    script.main(["--model", "1*mlcn1:1x1", "--repeats", "1"])
    table = capsys.readouterr().out
    assert "now/before" in table
    assert "saved per trial:" in table
