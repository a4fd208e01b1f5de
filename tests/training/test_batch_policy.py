"""Batch-size policies (FasTrCaps AdaBatch and WarmAdaBatch): the paper's sizes, the
trainer really drawing each epoch at its size, WarmAdaBatch's synchronised lr
restart, resuming at the right size, and the ``train`` command's options."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import torch
import typer.main

from nasmlcn.cli import app
from nasmlcn.errors import CheckpointError, SpecError
from nasmlcn.specs import MLCNSpec
from nasmlcn.training import (
    BATCH_POLICIES,
    Callback,
    EpochResult,
    TrainConfig,
    TrainJob,
    TrainStart,
    default_lr_policy,
    epoch_batch_sizes,
    load_checkpoint,
    step_batch_size,
    train,
)
from tests.conftest import run_cli

IMAGES = 12  # training images of the tiny jobs: 12 steps at batch 1, 2 at batch 8


def test_adabatch_follows_fastrcaps_algorithm_3() -> None:
    # Alg. 3 with P = 4 (batch 16): 1 in epochs 1-3, 16 in 4-8, 32 in 9-13, 64 after.
    sizes = epoch_batch_sizes("adabatch", 16, 30)
    assert sizes == (1,) * 3 + (16,) * 5 + (32,) * 5 + (64,) * 17


def test_warmadabatch_follows_fastrcaps_section_iv_e() -> None:
    # Batch 1 for the first three epochs, then 16 for the other 27 (Alg. 5's T_i).
    assert epoch_batch_sizes("warmadabatch", 16, 30) == (1,) * 3 + (16,) * 27
    assert epoch_batch_sizes("fixed", 16, 5) == (16,) * 5
    assert default_lr_policy("warmadabatch") == "phase-restarts"
    assert default_lr_policy("adabatch") == default_lr_policy("fixed") == "one-cycle"


def test_unknown_batch_policy_is_refused_with_the_known_names() -> None:
    with pytest.raises(SpecError, match="adabatch"):
        TrainConfig(batch_policy="adabach")


def test_memory_is_checked_at_the_largest_batch_of_the_run() -> None:
    config = TrainConfig(epochs=14, batch_size=10, batch_policy="adabatch")
    assert step_batch_size(TrainJob(MLCNSpec("mlcn1:1x1"), config=config)) == 40
    short = TrainConfig(epochs=3, batch_size=10, batch_policy="adabatch")
    assert step_batch_size(TrainJob(MLCNSpec("mlcn1:1x1"), config=short)) == 1


class _Batches(Callback):
    """Counts the training batches of every epoch."""

    def __init__(self) -> None:
        self.per_epoch: dict[int, int] = {}
        self.announced: dict[int, int] = {}  # what the start said each epoch would have

    def on_train_start(self, start: TrainStart) -> None:
        self.announced = {e: start.batches_of(e) for e in range(1, start.epochs + 1)}

    def on_batch_end(self, epoch: int, batch: int, loss: float, accuracy: float) -> None:
        self.per_epoch[epoch] = batch


class _StopAfter(Callback):
    def __init__(self, epoch: int) -> None:
        self.epoch = epoch

    def on_epoch_end(self, result: EpochResult) -> None:
        if result.epoch == self.epoch:
            raise KeyboardInterrupt


def _job(out: Path, resume: bool = False, **config: Any) -> TrainJob:
    settings: dict[str, Any] = {"epochs": 5, "batch_size": 8, "seed": 3, **config}
    return TrainJob(
        MLCNSpec("mlcn1:1x1,mlcn2:1x1", decoder="none"),  # no decoder: fast steps
        dataset="synthetic",
        train_limit=IMAGES,
        val_limit=10,
        test_limit=10,
        config=TrainConfig(**settings),
        out_dir=str(out),
        resume=resume,
    )


def test_the_trainer_draws_every_epoch_at_its_policys_batch_size(tmp_path: Path) -> None:
    batches = _Batches()
    report = train(_job(tmp_path, batch_policy="adabatch", lr_policy="fixed"), [batches])
    # 12 images: batch 1 in epochs 1-3 (12 steps), batch 8 in epochs 4-5 (2 steps)
    assert batches.per_epoch == {1: 12, 2: 12, 3: 12, 4: 2, 5: 2}
    assert batches.announced == batches.per_epoch  # progress bars get each epoch's total
    assert [h.batch_size for h in report.history] == [1, 1, 1, 8, 8]


def test_warmadabatch_restarts_the_lr_where_the_batch_size_changes(tmp_path: Path) -> None:
    lr = 1e-3
    report = train(_job(tmp_path, lr=lr, batch_policy="warmadabatch", lr_policy="phase-restarts"))
    starts = [h.lr for h in report.history]
    # one cosine over epochs 1-3 (36 steps), another over 4-5 (4 steps)
    assert starts[0] == pytest.approx(lr)
    assert lr / 10 < starts[2] < starts[1] < lr
    assert starts[3] == pytest.approx(lr)  # the warm restart at the change to batch 8
    assert starts[4] < starts[3]


def test_a_resumed_warmadabatch_run_equals_the_uninterrupted_one(tmp_path: Path) -> None:
    config: dict[str, Any] = {"batch_policy": "warmadabatch", "lr_policy": "phase-restarts"}
    straight = train(_job(tmp_path / "a", **config))
    # Stopped after epoch 3 (the last at batch 1), resumed: epochs 4-5 at batch 8,
    # with the same shuffles, masks and lr as without the stop.
    with pytest.raises(KeyboardInterrupt):
        train(_job(tmp_path / "b", **config), [_StopAfter(3)])
    resumed = train(_job(tmp_path / "b", resume=True, **config))
    assert [h.batch_size for h in resumed.history] == [1, 1, 1, 8, 8]
    assert [h.lr for h in resumed.history] == [h.lr for h in straight.history]
    assert [h.val_accuracy for h in resumed.history] == [h.val_accuracy for h in straight.history]
    a = load_checkpoint(tmp_path / "a" / "checkpoint.pt")
    b = load_checkpoint(tmp_path / "b" / "checkpoint.pt")
    assert b["train_config"]["batch_policy"] == "warmadabatch"
    assert all(torch.equal(a["model"][k], b["model"][k]) for k in a["model"])


def test_resuming_under_another_batch_policy_is_refused(tmp_path: Path) -> None:
    train(_job(tmp_path, epochs=1, batch_policy="adabatch", lr_policy="fixed"))
    before = (tmp_path / "checkpoint.pt").read_bytes()
    with pytest.raises(CheckpointError, match="batch policy 'adabatch', not 'fixed'"):
        train(_job(tmp_path, epochs=2, resume=True, lr_policy="fixed"))
    assert (tmp_path / "checkpoint.pt").read_bytes() == before


def _help(option: str) -> str:
    group = typer.main.get_command(app)
    cmd = group.commands["train"]  # type: ignore[attr-defined]
    (param,) = [p for p in cmd.params if option in getattr(p, "opts", ())]
    return str(getattr(param, "help", ""))


def test_train_help_names_every_batch_policy() -> None:
    text = _help("--batch-policy")
    assert [n for n in BATCH_POLICIES if n not in text] == []
    assert "warmadabatch" in text
    assert "phase-restarts" in _help("--lr-policy")


def test_train_command_warmadabatch_defaults_to_its_restarts(tmp_path: Path) -> None:
    args = ["train", "--dataset", "synthetic", "--lanes", "mlcn1:1x1", "--decoder", "none"]
    args += ["--epochs", "4", "--batch-size", "8", "--train-limit", "8", "--val-limit", "8"]
    args += ["--test-limit", "8"]
    result = run_cli(*args, "--batch-policy", "warmadabatch", "--out", str(tmp_path), "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert [e["batch_size"] for e in report["per_epoch"]] == [1, 1, 1, 8]
    assert report["per_epoch"][3]["lr"] == pytest.approx(1e-3)  # restarted
    saved = load_checkpoint(tmp_path / "checkpoint.pt")["train_config"]
    assert (saved["batch_policy"], saved["lr_policy"]) == ("warmadabatch", "phase-restarts")
    bad = run_cli(*args, "--batch-policy", "warmadabach", "--out", str(tmp_path / "x"))
    assert bad.returncode != 0
    assert "warmadabach" in bad.stderr
    assert "warmadabatch" in bad.stderr
    assert "Traceback" not in bad.stderr
