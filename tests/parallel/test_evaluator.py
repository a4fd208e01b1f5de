"""The search's train evaluator: lane-parallel when the target devices are here."""

from __future__ import annotations

import pytest

from nasmlcn.data import DATASETS
from nasmlcn.hardware import LocalDevice
from nasmlcn.search import EpochDecision, EvalRequest, SearchConfig, TrainEvaluator
from nasmlcn.specs import MLCNSpec

SPEC = MLCNSpec.from_lanes("4*mlcn2:1x1")
JOB = EvalRequest(SPEC, trial=0, seed=0, epochs=1, batch_size=32, assignment=(0, 1, 0, 1))


def _evaluator(devices: str, run_on: str) -> TrainEvaluator:
    config = SearchConfig(
        devices=devices, run_on=run_on, dataset="synthetic", train_limit=64, val_limit=32
    )
    return TrainEvaluator(config, DATASETS.get("synthetic"))


def test_default_cpu_runs_stay_single_device() -> None:
    assert _evaluator("2xK80", "cpu").lane_devices(JOB) is None
    assert _evaluator("2xcpu", "auto").lane_devices(JOB) is None  # one CPU: nothing to gain


def test_present_targets_are_placed(monkeypatch: pytest.MonkeyPatch) -> None:
    import nasmlcn.hardware

    local = [
        LocalDevice("cpu", "cpu", 1 << 30, "cpu", 2),
        LocalDevice("cuda:0", "NVIDIA H100", 80 << 30, "H100"),
        LocalDevice("cuda:1", "NVIDIA H100", 80 << 30, "H100"),
    ]
    monkeypatch.setattr(nasmlcn.hardware, "detect_devices", lambda *a, **k: local)
    evaluator = _evaluator("2xH100", "auto")
    assert evaluator.lane_devices(JOB) == ("cuda:0", "cuda:1", "cuda:0", "cuda:1")
    assert evaluator.lane_devices(EvalRequest(SPEC, 0, 0, 1, assignment=(0, 0, 0, 0))) is None
    assert _evaluator("2xK80", "auto").lane_devices(JOB) is None  # absent: single device
    explicit = _evaluator("2xK80", "cuda:0,cuda:1")
    assert explicit.lane_devices(JOB) == ("cuda:0", "cuda:1", "cuda:0", "cuda:1")


def _placed(
    evaluator: TrainEvaluator, targets: tuple[str, ...], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``evaluator`` as if its target devices ran on ``targets`` (this machine has one
    CPU and no GPU: a CPU never spreads lanes on its own)."""
    lanes = tuple(targets[i] for i in JOB.assignment)
    monkeypatch.setattr(evaluator, "target_map", lambda: targets)
    monkeypatch.setattr(evaluator, "lane_devices", lambda request: lanes)


def test_lane_parallel_evaluation_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    single = _evaluator("2xcpu", "cpu").evaluate(JOB, lambda report: EpochDecision())
    assert single.mode == "single-device"
    evaluator = _evaluator("2xcpu", "cpu")
    _placed(evaluator, ("cpu", "cpu"), monkeypatch)
    result = evaluator.evaluate(JOB, lambda report: EpochDecision())
    assert result.mode == "lane-parallel"
    assert result.device == "cpu"
    assert result.extra["lane_devices"] == ["cpu"] * 4
    assert result.peak_memory_bytes is not None
    assert result.images_per_second
    assert single.accuracy == result.accuracy  # same seed, same numbers


@pytest.mark.gpu
def test_lanes_on_the_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    evaluator = _evaluator("2xcpu", "cuda:0")
    _placed(evaluator, ("cuda:0", "cpu"), monkeypatch)  # the head on target 0's cuda:0
    result = evaluator.evaluate(JOB, lambda report: EpochDecision())
    assert result.mode == "lane-parallel"
    assert result.device == "cuda:0,cpu"
    assert set(result.extra["peak_memory_bytes_per_device"]) == {"cuda:0", "cpu"}
