"""``benchmarks/fused_lanes.py``: both paths timed on the same models, the FLOPs
counted, the rates and the speedup derived from the timings it reports."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.benchmarks._scripts import load_script, run_json


def test_quick_run_times_both_paths(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import torch

    threads = torch.get_num_threads()
    script = load_script("fused_lanes", tmp_path, monkeypatch)
    try:
        data, _ = run_json(script, capsys, "--quick")
    finally:
        torch.set_num_threads(threads)
    assert [m["lanes"] for m in data["models"]] == ["8*mlcn2:1x1", "2*mlcn2:2x1"]
    for row in data["models"]:
        assert row["flops"] > 0
        seconds = row["seconds"]
        assert seconds["per_lane"] > 0
        assert seconds["fused"] > 0
        assert row["speedup"] == pytest.approx(seconds["per_lane"] / seconds["fused"])
        assert set(row["batch1_seconds"]) == {"per_lane", "fused"}
        assert min(row["batch1_seconds"].values()) > 0
        assert row["gflops"]["fused"] == pytest.approx(row["flops"] / seconds["fused"] / 1e9)
    # more lanes of one kind, more FLOPs per step than fewer, wider ones of this size
    assert data["models"][0]["flops"] != data["models"][1]["flops"]
    assert data["sgemm_gflops"] > 0
