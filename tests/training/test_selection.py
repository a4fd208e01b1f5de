"""Select on validation, report test once: the best-validation epoch's weights are the
run's model, its test accuracy the run's figure, the last epoch's beside it."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn

from nasmlcn.specs import MLCNSpec
from nasmlcn.training import (
    FIXED_EPOCHS_PROTOCOL,
    PROTOCOL,
    Callback,
    EpochResult,
    Selection,
    TrainConfig,
    TrainJob,
    TrainStart,
    evaluate,
    load_checkpoint,
    load_job_splits,
    load_model,
    train,
)


def _nudge(model: nn.Module, value: float) -> None:
    with torch.no_grad():
        for p in model.parameters():
            p.fill_(value)


def test_selection_keeps_the_first_best_epoch_and_its_weights() -> None:
    model = nn.Linear(3, 2)
    selection = Selection()
    for epoch, (accuracy, value) in enumerate([(0.5, 1.0), (0.7, 2.0), (0.6, 3.0)], start=1):
        _nudge(model, value)  # the epoch's training
        selection.update(epoch, accuracy, model)
    assert (selection.epoch, selection.val_accuracy) == (2, 0.7)
    saved = selection.to_checkpoint()
    assert saved is not None
    assert saved["epoch"] == 2
    assert all(torch.equal(t, torch.full_like(t, 2.0)) for t in saved["model"].values())
    _nudge(model, 4.0)
    selection.update(4, 0.7, model)  # a tie keeps the earlier epoch
    assert selection.epoch == 2
    selection.update(5, 0.8, model)  # the model's own weights: nothing to carry
    assert selection.epoch == 5
    assert selection.to_checkpoint() is None


class _Ruin(Callback):
    """Zeroes every weight after ``epoch``: later epochs validate near chance, so an
    earlier epoch is the best on validation."""

    def __init__(self, epoch: int, stop_after: int | None = None) -> None:
        self.epoch, self.stop_after = epoch, stop_after
        self.model: nn.Module | None = None

    def on_train_start(self, start: TrainStart) -> None:
        self.model = start.model

    def on_epoch_end(self, result: EpochResult) -> None:
        if result.epoch == self.epoch:
            assert self.model is not None
            _nudge(self.model, 0.0)
        if result.epoch == self.stop_after:
            raise KeyboardInterrupt


def _job(out: Path, data_dir: Path, resume: bool = False) -> TrainJob:
    return TrainJob(
        MLCNSpec("2*mlcn2:1x1"),
        dataset="fashion-mnist",
        data_dir=str(data_dir),
        download=False,
        train_limit=600,
        val_limit=200,
        test_limit=300,
        config=TrainConfig(epochs=4, batch_size=50, seed=3, lr_policy="exponential"),
        out_dir=str(out),
        resume=resume,
    )


def test_a_run_reports_its_best_validation_epoch_and_keeps_its_weights(
    tmp_path: Path, data_dir: Path
) -> None:
    report = train(_job(tmp_path, data_dir), [_Ruin(2)])
    curve = [h.val_accuracy for h in report.history]
    assert report.selected_epoch == curve.index(max(curve)) + 1 <= 2
    assert curve[report.selected_epoch - 1] > curve[-1] + 0.2  # the ruin showed
    assert report.test_accuracy > report.last_epoch_test_accuracy + 0.2
    result = json.loads((tmp_path / "result.json").read_text())
    assert result["protocol"] == PROTOCOL
    assert result["selected_epoch"] == report.selected_epoch
    assert result["test_accuracy"] == report.test_accuracy
    assert result["last_epoch_test_accuracy"] == report.last_epoch_test_accuracy
    # The checkpoint resumes from the last epoch and carries the selected weights,
    # which every reader of the run folder loads.
    payload = load_checkpoint(tmp_path / "checkpoint.pt")
    assert payload["epoch"] == 4
    assert payload["selected"]["epoch"] == report.selected_epoch
    model, _ = load_model(tmp_path / "checkpoint.pt")
    splits = _splits(data_dir)
    assert evaluate(model, splits.test)[1] == pytest.approx(report.test_accuracy, abs=1e-9)
    last = _fresh(report.arch)
    last.load_state_dict(payload["model"])
    assert evaluate(last, splits.test)[1] == pytest.approx(
        report.last_epoch_test_accuracy, abs=1e-9
    )


def test_a_resumed_run_selects_as_an_uninterrupted_one(tmp_path: Path, data_dir: Path) -> None:
    straight = train(_job(tmp_path / "a", data_dir), [_Ruin(2)])
    with pytest.raises(KeyboardInterrupt):
        train(_job(tmp_path / "b", data_dir), [_Ruin(2, stop_after=3)])
    assert load_checkpoint(tmp_path / "b" / "checkpoint.pt")["selected"]["epoch"] <= 2
    resumed = train(_job(tmp_path / "b", data_dir, resume=True))
    assert resumed.selected_epoch == straight.selected_epoch <= 2
    assert resumed.test_accuracy == straight.test_accuracy
    assert resumed.last_epoch_test_accuracy == straight.last_epoch_test_accuracy


def test_a_refit_trains_on_training_and_validation_data_and_tests_its_last_epoch(
    tmp_path: Path, data_dir: Path
) -> None:
    """Nothing is held out to select on (selecting on zero images would keep epoch 1)."""
    job = _job(tmp_path, data_dir)
    job = replace(job, train_limit=200, config=replace(job.config, epochs=2), refit=True)
    report = train(job)
    splits = load_job_splits(replace(job, refit=False))
    assert report.train_images == len(splits.train) + len(splits.val) == 400
    assert report.protocol == FIXED_EPOCHS_PROTOCOL
    assert report.selected_epoch == 2
    assert report.test_accuracy == report.last_epoch_test_accuracy
    assert [h.val_accuracy for h in report.history] == [0.0, 0.0]  # zero validation images
    payload = load_checkpoint(tmp_path / "checkpoint.pt")
    assert payload.get("selected") is None
    model, _ = load_model(tmp_path / "checkpoint.pt")
    assert evaluate(model, splits.test)[1] == pytest.approx(report.test_accuracy, abs=1e-9)
    result = json.loads((tmp_path / "result.json").read_text())
    assert (result["train_images"], result["protocol"]) == (400, FIXED_EPOCHS_PROTOCOL)


def _splits(data_dir: Path) -> Any:
    from nasmlcn.training import load_job_splits

    return load_job_splits(_job(Path("unused"), data_dir))


def _fresh(arch: Any) -> nn.Module:
    from nasmlcn.models import build_model

    return build_model(arch).eval()
