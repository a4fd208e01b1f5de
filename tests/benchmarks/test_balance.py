"""``benchmarks/balance.py``: a default-space model trained lane-parallel on 2 real
processes, each rank's compute time measured beside its prediction."""

from __future__ import annotations

import statistics
from pathlib import Path

import pytest

from tests.benchmarks._scripts import load_script, run_json


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
