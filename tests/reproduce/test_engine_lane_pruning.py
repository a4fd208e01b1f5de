"""``nasmlcn/reproduce/engines/lane_pruning.py`` in its quick mode: both curves, and a rerun that
trains nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.benchmarks._scripts import load_script, run_json


def test_both_curves_and_a_rerun_that_only_tests(
    data_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    script = load_script("lane_pruning", data_dir, monkeypatch)
    args = ("--quick", "--out", str(tmp_path), "--no-png")
    result, stderr = run_json(script, capsys, *args)
    assert stderr.count("training 4*mlcn1:1x1") == 2
    curves = result["curves"]
    assert list(curves) == ["no-dropout (0)", "dropout (0.1)"]
    for curve in curves.values():
        steps = curve["steps"]
        assert [len(s["removed_lanes"]) for s in steps] == [0, 1, 2, 3]
        assert steps[0]["speedup"] == 1.0
        assert curve["full_accuracy"] == steps[0]["accuracy"]
        assert 0 <= curve["lanes_removable"] <= 3
    assert (tmp_path / "lane_pruning.html").is_file()
    again, stderr = run_json(script, capsys, *args)
    assert "training" not in stderr  # the finished runs are only tested
    assert (
        again["curves"]["dropout (0.1)"]["steps"][2]["accuracy"]
        == (curves["dropout (0.1)"]["steps"][2]["accuracy"])
    )
    # without plotly (a bare GPU image) the figure is lost, the measurements are not
    import nasmlcn.runs

    def no_plotly(*_args: object, **_kwargs: object) -> list[Path]:
        raise ImportError("No module named 'plotly'")

    monkeypatch.setattr(nasmlcn.runs, "write_lane_removal_figure", no_plotly)
    bare, stderr = run_json(script, capsys, *args)
    assert "no lane-pruning figure: No module named 'plotly'" in stderr
    assert bare["files"] == []
    assert [c["lanes_removable"] for c in bare["curves"].values()] == [
        c["lanes_removable"] for c in again["curves"].values()
    ]
    with pytest.raises(SystemExit, match="other settings \\(seed\\)"):
        script.main([*args, "--seed", "1"])


def test_holds_until_counts_the_lanes_removed_within_the_tolerance(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = load_script("lane_pruning", data_dir, monkeypatch)
    assert script.holds_until([0.9, 0.9, 0.895, 0.91, 0.85, 0.9], 0.01) == 3
    assert script.holds_until([0.9, 0.8], 0.01) == 0
