"""``benchmarks/whole_model_held_out.py``: the committed held-out models, measured
apart from the fitted ones, and the figures derived from them."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest

from nasmlcn.costs import CostContext, calibration_models, whole_model_features
from nasmlcn.specs import format_lanes, parse_lanes
from tests.benchmarks._scripts import load_script, run_json


def test_the_held_out_models_span_1_to_60_lanes_and_are_not_fitted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = load_script("whole_model_held_out", tmp_path, monkeypatch)
    sizes = [len(parse_lanes(m)) for m in script.HELD_OUT]
    assert len(sizes) == 10
    assert min(sizes) == 1
    assert max(sizes) == 60
    fitted = {format_lanes(m) for seed in range(3) for m in calibration_models(24, seed)}
    assert not fitted & {format_lanes(parse_lanes(m)) for m in script.HELD_OUT}


def _exact(lanes: str, ctx: CostContext, coefficients: list[float]) -> float:
    features = whole_model_features(tuple(parse_lanes(lanes)), ctx, "cpu")
    return sum(c * v for c, v in zip(coefficients, features, strict=True))


def test_step_times_that_the_features_explain_are_predicted_exactly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Measurements made up from known coefficients (a per-step term among them):
    the fit finds them and each held-out ratio is 1; the baseline without the
    per-step term can do no better."""
    script = load_script("whole_model_held_out", tmp_path, monkeypatch)
    ctx = CostContext(batch_size=100)
    truth = [5e-12, 0.0, 8e-9, 6e-9, 3e-7, 0.0, 0.0, 0.02]  # step: 20 ms a step
    fitted = [format_lanes(m) for m in calibration_models(24, 0)]
    held = {m: [_exact(m, ctx, truth) * f for f in (0.9, 1.0, 1.3)] for m in script.HELD_OUT}
    saved = tmp_path / "m.json"
    saved.write_text(
        json.dumps(
            {
                "batch": 100,
                "threads": 1,
                "clock": "cpu",
                "steps": 3,
                "fit": {m: _exact(m, ctx, truth) for m in fitted},
                "held_out": held,
            }
        )
    )
    data, _ = run_json(script, capsys, "--load", str(saved))
    assert data["runs"] == 3
    for m in data["models"]:
        assert m["measured_s"] == pytest.approx(statistics.median(held[m["lanes"]]))
        assert m["ratio"] == pytest.approx(1.0, rel=1e-3)
    assert data["whole_model"]["worst_ratio"] == pytest.approx(1.0, rel=1e-3)
    assert data["whole_model"]["spearman"] == pytest.approx(1.0)
    worst = data["without_step_term"]
    assert worst["coefficients"][-1] == 0.0
    assert worst["worst_ratio"] > data["whole_model"]["worst_ratio"]
    assert worst["worst_ratio"] == pytest.approx(
        max(max(worst["ratios"]), 1 / min(worst["ratios"]))
    )


def test_a_fitted_model_among_the_held_out_ones_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = load_script("whole_model_held_out", tmp_path, monkeypatch)
    saved = tmp_path / "m.json"
    one = script.HELD_OUT[0]
    saved.write_text(
        json.dumps(
            {
                "batch": 100,
                "threads": 1,
                "clock": "cpu",
                "fit": {one: 0.02, "mlcn2:1x1": 0.03},
                "held_out": {m: [0.02] for m in script.HELD_OUT},
            }
        )
    )
    with pytest.raises(SystemExit, match="held-out models among the fitted ones"):
        script.main(["--load", str(saved)])


@pytest.mark.slow
def test_quick_run_measures_every_held_out_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import torch

    threads = torch.get_num_threads()
    script = load_script("whole_model_held_out", tmp_path, monkeypatch)
    try:
        args = ("--quick", "--save", str(tmp_path / "m.json"))
        data, _ = run_json(script, capsys, *args)
    finally:
        torch.set_num_threads(threads)
    assert data["fit_models"] == 6
    assert len(data["models"]) == 10
    for m in data["models"]:
        assert len(m["runs_s"]) == 1
        assert m["measured_s"] > 0
        assert m["ratio"] == pytest.approx(m["predicted_s"] / m["measured_s"])
    saved = json.loads((tmp_path / "m.json").read_text())
    assert len(saved["fit"]) == 6
