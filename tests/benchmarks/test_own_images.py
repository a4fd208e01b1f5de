"""``benchmarks/own_images.py`` and ``benchmarks/image_shape_costs.py``, their quick
runs: Fashion-MNIST written as PNG class folders reads into the built-in loader's
tensors, and the cost models are measured at another image shape."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.benchmarks._scripts import load_script, run_json

# runs the benchmark script: with the other quick paths in CI (pytest -m slow
# tests/benchmarks), not in the default run
pytestmark = pytest.mark.slow


def test_fashion_mnist_as_pngs_reads_into_the_builtin_tensors(
    data_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    script = load_script("own_images", data_dir, monkeypatch)
    args = ("--limit", "240", "--repeats", "1", "--work", str(tmp_path))
    data, _ = run_json(script, capsys, *args)
    assert data["images"] == 240 + 40
    assert data["identical"] == dict.fromkeys(
        ("train_images", "train_labels", "test_images", "test_labels"), True
    )
    assert data["first_read_seconds"] > 0
    assert data["cached_read_seconds"] > 0
    assert len(data["cached_read_runs"]) == len(data["builtin_read_runs"]) == 1
    assert not list((tmp_path / "fashion-png").rglob("*.npy"))  # the cache is elsewhere


@pytest.mark.slow  # 12 lanes' peaks, each in a child process: about 18 s
def test_the_cost_models_are_measured_at_another_shape(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    script = load_script("image_shape_costs", tmp_path, monkeypatch)
    args = ("--lanes", "6", "--max", "1", "--batch", "4", "--shape", "3x20x20")
    data, _ = run_json(script, capsys, *args)
    assert set(data["shapes"]) == {"1x28x28", "3x20x20"}
    small = data["shapes"]["3x20x20"]
    assert len(small["measured_bytes"]) == 6
    assert set(small["models"]) == {"analytic", "calibrated (cv)", "calibrated from 1x28x28"}
    assert data["flops_ratio_median"] < 1  # 3x20x20 is fewer pixels than 1x28x28
