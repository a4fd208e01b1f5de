"""``benchmarks/warm_start.py --quick``: the three target runs, the warm seeds refit
to the target pool, and the figures derived from the trials."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

SCRIPT = ROOT / "benchmarks" / "warm_start.py"


@pytest.mark.slow
def test_quick_run(data_dir: Path, tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick", "--json", "--cache", str(tmp_path / "c.json")],
        capture_output=True,
        text=True,
        timeout=1200,
        cwd=ROOT,
        env={**os.environ, "NASMLCN_DATA_DIR": str(data_dir)},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    data = json.loads(proc.stdout)
    trials = data["settings"]["trials"]
    assert set(data["runs"]) == {"random", "tpe", "tpe+warm"}
    best_of = [max(t["accuracy"] for t in s) for s in data["runs"]["random"]["seeds"].values()]
    assert data["target_accuracy"] == pytest.approx(sum(best_of) / len(best_of))
    for name, run in data["runs"].items():
        for seed, records in run["seeds"].items():
            assert len(records) == trials, (name, seed)
            assert all(r["compute"] > 0 for r in records), (name, seed)
        for reach, seed in zip(run["compute_to_reach"], run["seeds"], strict=True):
            if reach is None:
                continue
            records = run["seeds"][seed]
            spent, best = 0.0, 0.0
            for r in records:  # the first trial whose best-so-far reaches the target
                spent += r["compute"]
                best = max(best, r["accuracy"] or 0.0)
                if best >= data["target_accuracy"]:
                    break
            assert reach == pytest.approx(spent)
    for warm in data["warm_start"]:
        assert warm["source"] == "source"
        assert warm["transferred"] == 0  # 4 devices build every 2-device model differently
        assert 1 <= len(warm["seeds"]) <= 5
