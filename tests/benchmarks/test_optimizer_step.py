"""``benchmarks/optimizer_step.py``: fused Adam against the loop over the tensors on a
CPU, the two alternating in one process, checked to agree before they are timed."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.benchmarks._scripts import load_script, run_json


def test_both_optimizers_are_timed_alone_and_in_a_training_step(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    script = load_script("optimizer_step", tmp_path, monkeypatch)
    args = ["--model", "2*mlcn2:1x1", "--batch", "4", "--steps", "2", "--repeats", "2"]
    data, err = run_json(script, capsys, *args)
    assert data["batch"] == 4
    [row] = data["rows"]
    assert row["model"] == "2*mlcn2:1x1"
    assert row["tensors"] > 0
    assert row["params"] > row["tensors"]
    assert row["largest_difference"] < 1e-5  # float32 rounding, not another rule
    for key in ("adam_step", "training_step"):
        timed = row[key]
        assert timed["runs"] == 2
        assert timed["loop_ms"] > 0
        assert timed["fused_ms"] > 0
        assert timed["ratio"] == pytest.approx(timed["fused_ms"] / timed["loop_ms"])
        saved = timed["saved_ms"]  # loop - fused, paired by run
        assert saved["pairs"] == 2
        assert saved["low"] <= saved["mean"] <= saved["high"]
    assert "training step at batch 4" in err
    script.main(["--model", "mlcn1:1x1", "--batch", "2", "--steps", "1", "--repeats", "1"])
    table = capsys.readouterr().out
    assert "fused ms" in table
    assert "largest parameter difference" in table
