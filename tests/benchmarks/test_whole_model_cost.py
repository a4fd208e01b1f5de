"""``benchmarks/whole_model_cost.py``: measured models, held-out predictions and the
figures derived from them."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from tests.benchmarks._scripts import load_script, run_json


def test_quick_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import torch

    threads = torch.get_num_threads()
    script = load_script("whole_model_cost", tmp_path, monkeypatch)
    try:
        args = ("--models", "6", "--max-lanes", "4", "--batch", "4", "--steps", "1", "--folds", "3")
        data, _ = run_json(script, capsys, *args)
    finally:
        torch.set_num_threads(threads)
    assert len(data["models"]) == 6
    measured = [m["seconds"] for m in data["models"]]
    assert all(s > 0 for s in measured)
    assert all(1 <= m["num_lanes"] <= 4 for m in data["models"])
    for name in ("whole_model", "analytic"):
        s = data[name]
        assert -1 <= s["pearson"] <= 1
        assert -1 <= s["spearman"] <= 1
        assert s["worst_factor"] >= 1
        ratios = [m / p[name] for m, p in zip(measured, data["models"], strict=True)]
        assert s["worst_factor"] == pytest.approx(math.sqrt(max(ratios) / min(ratios)))
