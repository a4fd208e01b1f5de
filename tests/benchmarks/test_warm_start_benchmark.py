"""``benchmarks/warm_start.py --quick``: the three target runs, the warm seeds refit
to the target pool, and the figures derived from the trials."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.benchmarks._scripts import run_script


@pytest.mark.slow
def test_quick_run(data_dir: Path, tmp_path: Path) -> None:
    args = ["--quick", "--json", "--cache", str(tmp_path / "c.json")]
    proc = run_script("warm_start", args, data_dir, timeout=1200)
    data = json.loads(proc.stdout)
    trials = data["settings"]["trials"]
    assert set(data["runs"]) == {"random", "tpe", "tpe+warm"}
    best_of = [max(t["accuracy"] for t in s) for s in data["runs"]["random"]["seeds"].values()]
    assert data["target_accuracy"] == pytest.approx(sum(best_of) / len(best_of))
    for name, run in data["runs"].items():
        for seed, records in run["seeds"].items():
            # --trials counts models: a repeat (nothing trained) comes on top
            trained = [r for r in records if r["repeat_of"] is None]
            assert len(trained) == trials, (name, seed)
            assert all(r["compute"] > 0 for r in trained), (name, seed)
            assert all(r["compute"] == 0 for r in records if r not in trained), (name, seed)
        for reach, seed in zip(run["compute_to_reach"], run["seeds"], strict=True):
            if reach is None:
                continue
            records = run["seeds"][seed]
            spent, best = 0.0, 0.0
            for r in records:  # the first model whose best-so-far reaches the target
                if r["repeat_of"] is not None:
                    continue
                spent += r["compute"]
                best = max(best, r["accuracy"] or 0.0)
                if best >= data["target_accuracy"]:
                    break
            assert reach == pytest.approx(spent)
    for warm in data["warm_start"]:
        assert warm["source"] == "source"
        assert warm["transferred"] == 0  # 4 devices build every 2-device model differently
        assert 1 <= len(warm["seeds"]) <= 5
