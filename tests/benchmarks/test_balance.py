"""``benchmarks/balance.py``: a default-space model trained lane-parallel on 2 real
processes, each rank's compute time measured beside its prediction."""

from __future__ import annotations

import statistics
from pathlib import Path

import pytest

from tests.benchmarks._scripts import load_script, run_json

# runs the benchmark script: with the other quick paths in CI (pytest -m slow
# tests/benchmarks), not in the default run
pytestmark = pytest.mark.slow


def test_quick_run_measures_both_ranks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import torch

    threads = torch.get_num_threads()
    script = load_script("balance", tmp_path, monkeypatch)
    args = ("--models", "1", "--fit-models", "3", "--max-lanes", "2", "--batch", "4")
    try:
        data, _ = run_json(script, capsys, *args, "--steps", "1", "--warmup", "0")
    finally:
        torch.set_num_threads(threads)
    (row,) = data["models"]
    assert len(row["measured"]) == len(row["predicted"]) == 2
    assert set(row["assignment"]) == {0, 1}  # both ranks hold lanes
    for compute, wall in zip(row["measured"], row["wall"], strict=True):
        assert 0 < compute <= wall
    for key, times in (("predicted_imbalance", "predicted"), ("measured_imbalance", "measured")):
        assert row[key] == pytest.approx(max(row[times]) / statistics.fmean(row[times]) - 1)
    assert data["checked"] == (row["predicted_imbalance"] <= 0.05)


def test_lanes_priced_alike_are_spread_over_both_ranks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fit that gives lanes no cost (only the per-step term) must not put every lane
    on rank 0: ties go to the rank with fewer lanes."""
    from nasmlcn.costs import MODEL_TIME_FEATURES, CostContext
    from nasmlcn.specs import parse_lanes

    script = load_script("balance", tmp_path, monkeypatch)
    step_only = [0.0] * (len(MODEL_TIME_FEATURES) - 1) + [1.0]
    lanes = tuple(parse_lanes("mlcn2:1x1,mlcn1:1x1,mlcn2:2x2"))
    assert sorted(script.balance(step_only, lanes, CostContext(batch_size=4))) == [0, 0, 1]
