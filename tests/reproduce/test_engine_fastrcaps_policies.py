"""``nasmlcn/reproduce/engines/fastrcaps_policies.py`` in its small mode: Table I's rows, the policies
really applied (batch sizes, lr restart, shared weights), times to the baseline's
target and the ratio against the baseline."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.benchmarks._scripts import load_script, run_json


@pytest.fixture
def script(data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    return load_script("fastrcaps_policies", data_dir, monkeypatch)


def test_table_i_rows_in_small_mode(script: Any, capsys: pytest.CaptureFixture[str]) -> None:
    result, stderr = run_json(
        script, capsys, "--quick", "--lanes", "mlcn1:1x1", "--batch-size", "8"
    )
    rows = {t["row"]: t for t in result["table"]}
    assert list(rows) == ["fixed (baseline)", "WAB", "fixed + WS", "WAB + WS"]
    assert result["runs_total"] == 4
    assert all(t["runs"] == 1 for t in rows.values())
    runs = {r["row"]: r for r in result["runs"]}
    assert runs["WAB"]["batch_size_per_epoch"] == [1, 1, 1, 8]
    assert runs["fixed (baseline)"]["batch_size_per_epoch"] == [8] * 4
    assert runs["WAB"]["lr_per_epoch"][3] == pytest.approx(1e-3)  # restarted at the change
    assert runs["WAB"]["lr_per_epoch"][2] < 1e-3
    assert rows["fixed + WS"]["params"] < rows["fixed (baseline)"]["params"]
    # the target is the baseline's best, which the baseline reaches by definition
    base = runs["fixed (baseline)"]
    assert result["targets"] == {"0": max(base["val_accuracy_per_epoch"])}
    assert rows["fixed (baseline)"]["ratio_vs_baseline"] == pytest.approx(1.0)
    for run in result["runs"]:
        if run["seconds_to_target"] is not None:
            epoch = run["epoch_to_target"]
            assert run["val_accuracy_per_epoch"][epoch - 1] >= run["target"]
            assert run["seconds_to_target"] == pytest.approx(sum(run["seconds_per_epoch"][:epoch]))
    assert "seed 0 WAB" in stderr
