"""The lane-pruning figure's axes: plotly's autorange padded a
flat accuracy curve to -0.4..1.5; the accuracy axis stays inside [0, 1] and the
speedup axis starts at 0."""

from __future__ import annotations

from pathlib import Path

from nasmlcn.runs import InferenceSettings, load_run, remove_lanes, write_lane_removal_figure
from nasmlcn.specs import MLCNSpec
from tests.runs.conftest import html_figure, write_run


def test_the_axes_stay_inside_what_accuracy_and_speedup_can_be(tmp_path: Path) -> None:
    write_run(tmp_path / "run", MLCNSpec("mlcn1:1x1,mlcn2:1x1"), dataset="synthetic")
    report = remove_lanes(
        load_run(tmp_path / "run"),
        val_limit=40,
        device="cpu",
        inference=InferenceSettings(batch=4, passes=2, warmup=1),
    )
    (page,) = write_lane_removal_figure({"untrained": report}, tmp_path / "figure", png=False)
    fig = html_figure(page)
    accuracies = [s.accuracy for s in report.steps]
    low, high = fig.layout.yaxis.range
    assert 0.0 <= low <= min(accuracies)
    assert max(accuracies) <= high <= 1.0
    assert high - low <= max(accuracies) - min(accuracies) + 0.1  # fitted, not padded by 1
    speed_low, speed_high = fig.layout.yaxis2.range
    assert speed_low == 0
    assert max(s.speedup for s in report.steps) <= speed_high
