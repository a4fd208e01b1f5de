"""Long runs on the full Fashion-MNIST training set (``pytest -m slow``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from nasmlcn.specs import DEFAULT_LANES, MLCNSpec
from nasmlcn.training import TrainConfig, TrainJob, train


@pytest.mark.slow
def test_default_mlcn_reaches_80_percent_after_one_epoch(data_dir: Path) -> None:
    """A full epoch learns: 2 lanes of width 4, full training set, >= 80 % on the test set."""
    job = TrainJob(
        MLCNSpec.from_lanes(DEFAULT_LANES),
        dataset="fashion-mnist",
        data_dir=str(data_dir),
        download=False,
        config=TrainConfig(epochs=1, seed=0),
    )
    report = train(job)
    assert report.train_images == 54_000
    assert report.test_images == 10_000
    assert report.test_accuracy >= 0.80


@pytest.mark.gpu
def test_training_on_cuda_matches_cpu_accuracy_band(data_dir: Path) -> None:
    job = TrainJob(
        MLCNSpec.from_lanes("2*mlcn1:2x1"),
        dataset="fashion-mnist",
        data_dir=str(data_dir),
        download=False,
        train_limit=6000,
        val_limit=1000,
        test_limit=2000,
        config=TrainConfig(epochs=2, seed=0, device="cuda"),
    )
    report = train(job)
    assert report.device.startswith("cuda")
    assert report.test_accuracy > 0.65
