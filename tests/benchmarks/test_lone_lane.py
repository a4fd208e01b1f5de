"""``benchmarks/lone_lane.py``: both paths of a lone lane timed, the ratio the one
of the timings it reports."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.benchmarks._scripts import load_script, run_json


def test_quick_run_times_both_paths(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import torch

    threads = torch.get_num_threads()
    script = load_script("lone_lane", tmp_path, monkeypatch)
    try:
        args = ("--lanes", "mlcn2:1x1,mlcn1:1x1", "--batch", "8", "--repeats", "2")
        data, err = run_json(script, capsys, *args)
    finally:
        torch.set_num_threads(threads)
    assert [r["lane"] for r in data["rows"]] == ["mlcn2:1x1", "mlcn1:1x1"]
    for row in data["rows"]:
        assert row["patch_ms"] > 0
        assert row["conv_ms"] > 0
        assert row["ratio"] == pytest.approx(row["conv_ms"] / row["patch_ms"])
    assert "mlcn1:1x1 ..." in err
