"""``nasmlcn calibrate``, run as a user would: a fresh process per command."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from nasmlcn.costs._calibration_file import Calibration
from tests.conftest import run_cli

MODELS = ["analytic", "thesis", "calibrated", "calibrated-cv"]


def _check_report(report: dict[str, Any], out: Path, lanes: int) -> None:
    assert report["calibration_file"] == str(out)
    assert report["lanes"] == lanes and report["device"] == "cpu"
    assert [m["model"] for m in report["models"]] == MODELS
    for m in report["models"]:
        for what in ("time", "memory"):
            figures = m[what]
            assert set(figures) >= {"pearson", "spearman", "mape", "mape_scaled", "under_share"}
            assert figures["mape_scaled"] >= 0
    thesis = report["models"][1]
    assert thesis["time"]["mape"] is None and thesis["note"]  # w2d units: scaled MAPE only
    assert report["speeds"]["cpu"]["fc_flops_per_second"] > 0
    assert len(report["samples"]) == lanes
    calibration = Calibration.load(out)
    assert len(calibration.samples) == lanes
    assert calibration.device == "cpu" and calibration.threads == report["threads"]


def test_quick_calibration_writes_the_file_and_prints_json(tmp_path: Path) -> None:
    out = tmp_path / "calibration.json"
    result = run_cli(
        "calibrate",
        "--quick",
        "--lanes",
        "3",
        "--threads",
        "1",
        "--clock",
        "cpu",
        "--out",
        str(out),
        "--json",
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)  # stdout is exactly one JSON object
    _check_report(report, out, 3)
    assert report["quick"] is True and report["batch_size"] == 8
    assert report["clock"] == "cpu" and Calibration.load(out).clock == "cpu"


def test_too_few_lanes_is_a_one_line_error(tmp_path: Path) -> None:
    out = tmp_path / "calibration.json"
    result = run_cli("calibrate", "--lanes", "5", "--out", str(out))
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "--lanes must be at least 20" in lines[0]
    assert not out.exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--device", "cuda:7"], "no device 'cuda:7'"),
        (["--clock", "cpu", "--threads", "2"], "--threads 1"),
        (["--clock", "gpu"], "--clock must be wall or cpu"),
    ],
)
def test_bad_options_are_one_line_errors(args: list[str], message: str) -> None:
    result = run_cli("calibrate", "--lanes", "20", *args)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0]


@pytest.mark.slow
def test_calibration_of_20_lanes(tmp_path: Path) -> None:
    out = tmp_path / "calibration.json"
    result = run_cli(
        "calibrate",
        "--lanes",
        "20",
        "--batch-size",
        "16",
        "--rounds",
        "1",
        "--out",
        str(out),
        "--json",
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    _check_report(report, out, 20)
    calibrated = report["models"][2]
    assert calibrated["memory"]["under_share"] == 0  # an upper envelope of its own lanes
    # Timing figures depend on the machine's load; benchmarks/cost_model.py reports them.
    assert -1 <= calibrated["time"]["pearson"] <= 1
