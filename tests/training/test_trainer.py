"""The trainer on real and synthetic data: learning, callbacks, checkpoints, resume."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import torch

from nasmlcn.data import DataSplits, load_splits
from nasmlcn.errors import CheckpointError, SpecError, TrainingError
from nasmlcn.models import MLCN, build_model
from nasmlcn.specs import MLCNSpec
from nasmlcn.training import (
    LR_POLICIES,
    Callback,
    EpochResult,
    InMemoryJob,
    RunOptions,
    TrainConfig,
    TrainJob,
    TrainStart,
    load_checkpoint,
    load_model,
    train,
)


def _epochs(
    spec: MLCNSpec,
    splits: DataSplits,
    config: TrainConfig,
    *,
    callbacks: Sequence[Callback] = (),
    options: RunOptions | None = None,
    place: Callable[[torch.nn.Module], torch.nn.Module] | None = None,
) -> list[EpochResult]:
    """Trains ``spec`` as the library's callers do (``train`` of an ``InMemoryJob``:
    the model built and seeded with ``config.seed``, untested); its epochs' results."""
    options = options if options is not None else RunOptions()
    job = InMemoryJob(spec, splits, config, replace(options, test=False), place=place)
    return train(job, callbacks).history


class Recorder(Callback):
    def __init__(self) -> None:
        self.start: TrainStart | None = None
        self.epochs: list[EpochResult] = []
        self.batches = 0

    def on_train_start(self, start: TrainStart) -> None:
        self.start = start

    def on_batch_end(self, epoch: int, batch: int, loss: float, accuracy: float) -> None:
        self.batches += 1

    def on_epoch_end(self, result: EpochResult) -> None:
        self.epochs.append(result)


def test_real_fashion_mnist_training_beats_chance(data_dir: Path) -> None:
    recorder = Recorder()
    job = TrainJob(
        MLCNSpec("2*mlcn1:2x1"),
        dataset="fashion-mnist",
        data_dir=str(data_dir),
        download=False,
        train_limit=3000,
        val_limit=500,
        test_limit=1000,
        config=TrainConfig(epochs=2, seed=0),
    )
    report = train(job, [recorder])
    assert report.test_accuracy > 0.65  # chance is 0.10; 0.75 here (0.79 from 6000 images)
    assert [r.epoch for r in recorder.epochs] == [1, 2]
    assert recorder.epochs[-1].val_accuracy > 0.65
    assert recorder.start is not None
    assert recorder.start.batches_per_epoch == 30
    assert recorder.batches == 60
    assert all(r.images_per_second > 0 and r.seconds > 0 for r in recorder.epochs)
    # The default one-cycle schedule starts at lr/10 and peaks at 45 % of the run, so
    # epoch 2 starts just past the peak of 1e-3.
    assert recorder.epochs[0].lr == pytest.approx(1e-4)
    assert 8e-4 < recorder.epochs[1].lr < 1e-3
    result = report.to_dict()
    assert result["val_accuracy_per_epoch"] == [r.val_accuracy for r in recorder.epochs]
    assert result["params"] == sum(p.numel() for p in build_model(report.arch).parameters())


def _tiny_job(tmp_path: Path, epochs: int, resume: bool = False, **config: Any) -> TrainJob:
    return TrainJob(
        MLCNSpec("mlcn1:1x1,mlcn2:1x2", lane_dropout=0.2),
        dataset="synthetic",
        train_limit=200,
        val_limit=50,
        test_limit=50,
        config=TrainConfig(**{"epochs": epochs, "batch_size": 50, "seed": 7, **config}),
        out_dir=str(tmp_path),
        resume=resume,
    )


def test_checkpoint_holds_weights_and_arch_and_loads_safely(tmp_path: Path) -> None:
    report = train(_tiny_job(tmp_path, epochs=1))
    ckpt = tmp_path / "checkpoint.pt"
    assert ckpt.is_file()
    assert (tmp_path / "arch.json").is_file()
    assert (tmp_path / "result.json").is_file()
    payload = torch.load(ckpt, weights_only=True)  # no pickled code needed
    assert payload["epoch"] == 1
    loaded = load_checkpoint(ckpt)
    assert loaded["arch"] == report.arch
    model, arch = load_model(ckpt)
    assert arch == report.arch
    x = torch.rand(3, 1, 28, 28)
    model.eval()
    again, _ = load_model(ckpt)
    again.eval()
    assert torch.equal(model(x).lengths, again(x).lengths)


def test_an_extended_run_equals_uninterrupted_training(tmp_path: Path) -> None:
    # A per-epoch policy can be extended: 1 epoch, then resumed to 2, as 2 in one go.
    policy = "exponential"
    straight = train(_tiny_job(tmp_path / "a", epochs=2, lr_policy=policy))
    train(_tiny_job(tmp_path / "b", epochs=1, lr_policy=policy))
    resumed = train(_tiny_job(tmp_path / "b", epochs=2, resume=True, lr_policy=policy))
    assert [h.lr for h in resumed.history] == [1e-3, pytest.approx(9e-4)]
    assert [h.epoch for h in resumed.history] == [1, 2]
    assert resumed.history[1].val_accuracy == straight.history[1].val_accuracy
    a = load_checkpoint(tmp_path / "a" / "checkpoint.pt")["model"]
    b = load_checkpoint(tmp_path / "b" / "checkpoint.pt")["model"]
    assert all(torch.equal(a[k], b[k]) for k in a)


class _StopAfter(Callback):
    """Stops training after ``epoch`` (as a kill would, the checkpoint is written first)."""

    def __init__(self, epoch: int) -> None:
        self.epoch = epoch

    def on_epoch_end(self, result: EpochResult) -> None:
        if result.epoch == self.epoch:
            raise KeyboardInterrupt


def test_a_one_cycle_run_resumes_exactly_but_only_at_its_planned_length(tmp_path: Path) -> None:
    straight = train(_tiny_job(tmp_path / "a", epochs=2, lr_policy="one-cycle"))
    with pytest.raises(KeyboardInterrupt):
        train(_tiny_job(tmp_path / "b", epochs=2, lr_policy="one-cycle"), [_StopAfter(1)])
    before = {p.name: p.read_bytes() for p in (tmp_path / "b").iterdir()}
    # The schedule was laid out for 2 epochs of 4 batches: another length is refused,
    # and so is another policy, with nothing written.
    for changed, message in (
        ({"epochs": 3}, "laid out for epochs 2, so it cannot go on with 3; resume with epochs 2"),
        ({"epochs": 2, "batch_size": 25}, "batch size 50, so it cannot go on with 25"),
        ({"epochs": 2, "lr_policy": "exponential"}, "lr policy 'one-cycle', not 'exponential'"),
    ):
        config: dict[str, Any] = {"lr_policy": "one-cycle", **changed}
        with pytest.raises(CheckpointError, match=message):
            train(_tiny_job(tmp_path / "b", resume=True, **config))
        assert {p.name: p.read_bytes() for p in (tmp_path / "b").iterdir()} == before
    resumed = train(_tiny_job(tmp_path / "b", epochs=2, resume=True, lr_policy="one-cycle"))
    assert [h.lr for h in resumed.history] == [h.lr for h in straight.history]
    assert resumed.history[1].val_accuracy == straight.history[1].val_accuracy
    a = load_checkpoint(tmp_path / "a" / "checkpoint.pt")["model"]
    b = load_checkpoint(tmp_path / "b" / "checkpoint.pt")["model"]
    assert all(torch.equal(a[k], b[k]) for k in a)


@pytest.mark.parametrize(
    ("changed", "message"),
    [
        ({"seed": 8}, "trained with --seed 7, not with --seed 8; resume with --seed 7"),
        ({"lr": 0.05}, "trained with --lr 0.001, not with --lr 0.05"),
        ({"augment": "shift"}, "trained with --augment none, not with --augment shift"),
        ({"train_limit": 150}, "trained with --train-limit 200, not with --train-limit 150"),
        ({"val_limit": None}, "with --val-limit 50, not without --val-limit; resume with"),
        ({"dataset": "fashion-mnist"}, "--dataset synthetic, not with --dataset fashion-mnist"),
    ],
)
def test_a_resume_under_other_settings_or_on_other_data_is_refused(
    tmp_path: Path, changed: dict[str, Any], message: str
) -> None:
    # The epochs after a resume would otherwise train (or select) on other data, or
    # with a learning rate the checkpoint's optimizer state silently overrides.
    with pytest.raises(KeyboardInterrupt):
        train(_tiny_job(tmp_path, epochs=2, lr_policy="exponential"), [_StopAfter(1)])
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    job = _tiny_job(tmp_path, epochs=2, resume=True, lr_policy="exponential")
    data = {k: v for k, v in changed.items() if hasattr(job, k) and k != "config"}
    config = replace(job.config, **{k: v for k, v in changed.items() if k not in data})
    with pytest.raises(CheckpointError) as err:
        train(replace(job, config=config, **data))
    assert message in err.value.for_cli()  # as the command line says it
    assert message.replace("--", "").replace("-limit", "_limit") in str(err.value)
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before
    # Where it trains may change: a resume with another evaluation batch goes on.
    resumed = train(replace(job, config=replace(job.config, eval_batch_size=25)))
    assert [h.epoch for h in resumed.history] == [1, 2]


def test_a_checkpoint_without_optimizer_state_is_not_gone_on_from(tmp_path: Path) -> None:
    """Several processes save the model only: going on from their checkpoint in one
    process restarted Adam and the lr schedule (exponential from 1e-3 again) with no
    word. It is refused where epochs are left; one whose epochs are all done is only
    tested again (one of epoch 0, a model with lanes removed, is fine-tuned:
    tests/runs/test_lane_removal.py)."""
    train(_tiny_job(tmp_path, epochs=1, lr_policy="exponential"))
    path = tmp_path / "checkpoint.pt"
    payload = torch.load(path, weights_only=True)
    for name in ("optimizer", "scheduler"):
        del payload[name]
    torch.save(payload, path)
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    with pytest.raises(CheckpointError) as err:
        train(_tiny_job(tmp_path, epochs=3, resume=True, lr_policy="exponential"))
    assert str(err.value) == (
        f"checkpoint {str(path)!r} holds the model after epoch 1 but not its optimizer and "
        "scheduler state (several processes save the model only, and so does a search once "
        "a trial ran all its epochs), so going on from it would restart them; train anew in "
        "another out_dir"
    )
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before
    again = train(_tiny_job(tmp_path, epochs=1, resume=True, lr_policy="exponential"))
    assert [h.epoch for h in again.history] == [1]


def test_a_final_copy_leaves_the_resume_state_out_only_once_every_epoch_ran(
    tmp_path: Path,
) -> None:
    """``save_final`` (a search's finished trial): a run that trained its epochs keeps
    no optimizer or schedule state, and resuming it tests the same model again; a run
    with epochs left keeps them, and goes on as it would have."""
    from nasmlcn.training import save_final

    done = train(_tiny_job(tmp_path / "done", epochs=1))
    path = tmp_path / "done" / "checkpoint.pt"
    before = torch.load(path, weights_only=True)
    assert save_final(path, path) is True
    after = torch.load(path, weights_only=True)
    assert before.keys() - after.keys() == {"optimizer", "scheduler"}
    assert all(torch.equal(after["model"][k], v) for k, v in before["model"].items())
    again = train(_tiny_job(tmp_path / "done", epochs=1, resume=True))
    assert again.history == done.history
    assert again.test_accuracy == done.test_accuracy

    with pytest.raises(KeyboardInterrupt):
        train(_tiny_job(tmp_path / "left", epochs=2), [_StopAfter(1)])
    path = tmp_path / "left" / "checkpoint.pt"
    assert save_final(path, path) is False
    assert {"optimizer", "scheduler"} <= torch.load(path, weights_only=True).keys()
    straight = train(_tiny_job(tmp_path / "straight", epochs=2))
    resumed = train(_tiny_job(tmp_path / "left", epochs=2, resume=True))
    assert resumed.history[1].val_accuracy == straight.history[1].val_accuracy


def test_existing_checkpoint_is_never_overwritten_without_resume(tmp_path: Path) -> None:
    train(_tiny_job(tmp_path, epochs=1))
    before = (tmp_path / "checkpoint.pt").read_bytes()
    with pytest.raises(CheckpointError, match="already holds a checkpoint"):
        train(_tiny_job(tmp_path, epochs=1))
    with pytest.raises(CheckpointError, match="is for mlcn1:1x1,mlcn2:1x2, not mlcn1:2x1"):
        train(_resume_of_another_model(tmp_path))
    assert (tmp_path / "checkpoint.pt").read_bytes() == before


def test_nan_loss_stops_with_a_clear_error() -> None:
    spec = MLCNSpec("mlcn1:1x1")

    def poisoned(model: torch.nn.Module) -> torch.nn.Module:
        assert isinstance(model, MLCN)
        with torch.no_grad():
            model.lanes.groups()[0][0].params[0].fill_(float("nan"))  # the vote weights
        return model

    splits = load_splits("synthetic", train_limit=20, val_limit=10)
    with pytest.raises(TrainingError, match="loss became nan at epoch 1, batch 1"):
        _epochs(spec, splits, TrainConfig(epochs=1, batch_size=10), place=poisoned)


def test_per_batch_callbacks_change_no_figure() -> None:
    # Only a callback that wants every batch makes the trainer read the loss back
    # per batch; the epochs' figures are the same, to the bit, with and without.
    spec = MLCNSpec("mlcn1:1x1", lane_dropout=0.2)
    splits = load_splits("synthetic", train_limit=45, val_limit=10)
    config = TrainConfig(epochs=2, batch_size=10, seed=3)
    recorder = Recorder()
    assert recorder.wants_batches
    assert not Callback().wants_batches
    shown = _epochs(spec, splits, config, callbacks=[recorder])
    quiet = _epochs(spec, splits, config, callbacks=[Callback()])
    assert recorder.batches == 10
    timings = ("seconds", "eval_seconds", "images_per_second")
    for a, b in zip(shown, quiet, strict=True):
        assert {k: v for k, v in a.to_dict().items() if k not in timings} == {
            k: v for k, v in b.to_dict().items() if k not in timings
        }


def test_callback_can_stop_training() -> None:
    class Stop(Callback):
        def on_epoch_end(self, result: EpochResult) -> None:
            raise KeyboardInterrupt

    spec = MLCNSpec("mlcn1:1x1")
    splits = load_splits("synthetic", train_limit=20, val_limit=10)
    with pytest.raises(KeyboardInterrupt):
        _epochs(spec, splits, TrainConfig(epochs=3, batch_size=10), callbacks=[Stop()])


@pytest.mark.parametrize("policy", LR_POLICIES.names())
def test_every_lr_policy_trains(policy: str) -> None:
    spec = MLCNSpec("mlcn1:1x1")
    splits = load_splits("synthetic", train_limit=40, val_limit=10)
    history = _epochs(spec, splits, TrainConfig(epochs=2, batch_size=10, lr_policy=policy))
    assert len(history) == 2
    assert all(h.lr > 0 for h in history)
    if policy == "fixed":
        assert history[0].lr == history[1].lr
    if policy == "exponential":
        assert history[1].lr == pytest.approx(0.9 * history[0].lr)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"epochs": 0}, "epochs must be an integer >= 1, got 0"),
        ({"batch_size": -1}, "batch_size must be an integer >= 1, got -1"),
        ({"lr": 0.0}, "lr must be a number > 0, got 0.0"),
        ({"lr_policy": "cosine"}, "unknown learning-rate policy 'cosine'"),
        (
            {"augment": "flip"},
            "unknown augmentation 'flip'; choose one of: crop, crop-flip, none, shift",
        ),
    ],
)
def test_train_config_validation(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(SpecError, match=message):
        TrainConfig(**kwargs)


def test_arch_file_must_match_dataset() -> None:
    job = TrainJob(MLCNSpec("mlcn1:1x1", input_shape=(3, 32, 32)), dataset="synthetic")
    with pytest.raises(
        SpecError, match=r"architecture is for 3x32x32 input .* synthetic has 1x28x28"
    ):
        train(job)


def _resume_of_another_model(out_dir: Path) -> TrainJob:
    """A --resume of ``out_dir`` (made by ``_tiny_job``) with other lanes."""
    return TrainJob(
        MLCNSpec("mlcn1:2x1"),
        dataset="synthetic",
        train_limit=50,
        config=TrainConfig(epochs=2),
        out_dir=str(out_dir),
        resume=True,
    )


def test_resume_of_another_model_writes_nothing(tmp_path: Path) -> None:
    train(_tiny_job(tmp_path, epochs=1))
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    with pytest.raises(CheckpointError, match="is for mlcn1:1x1,mlcn2:1x2, not mlcn1:2x1"):
        train(_resume_of_another_model(tmp_path))
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before  # arch.json too


class _NotACheckpoint:
    """Any object of a class of one's own (torch.save pickles it)."""


class _Marker:
    """Unpickled with plain pickle, this creates ``path``: a malicious checkpoint."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self) -> tuple[object, tuple[str, str]]:
        return (open, (str(self.path), "w"))


@pytest.mark.parametrize("content", ["random bytes", "foreign object", "malicious pickle"])
def test_a_file_that_is_no_checkpoint_is_refused_in_one_line(tmp_path: Path, content: str) -> None:
    import pickle

    path = tmp_path / "checkpoint.pt"
    marker = tmp_path / "marker"
    if content == "random bytes":
        path.write_bytes(bytes(range(256)) * 4)
    elif content == "foreign object":
        torch.save({"version": 1, "arch": _NotACheckpoint()}, path)
    else:
        path.write_bytes(pickle.dumps({"model": _Marker(marker)}))
    with pytest.raises(CheckpointError) as info:
        load_checkpoint(path)
    message = str(info.value)
    assert message == (
        f"{str(path)!r} is not a nasmlcn checkpoint (not a torch file of tensors "
        "and plain data); it was not loaded"
    )
    assert not marker.exists()


def test_should_stop_stops_between_batches_and_keeps_the_last_epoch_s_checkpoint(
    tmp_path: Path,
) -> None:
    """The search's --timeout: a stop within a batch, not at the
    epoch's end, raised as an interruption (Ctrl-C's path), the checkpoint of the
    last finished epoch whole, and the run id kept by the resume."""
    from nasmlcn.training import TrainingStopped

    spec = MLCNSpec("mlcn1:1x1")
    splits = load_splits("synthetic", train_limit=40, val_limit=10)
    config = TrainConfig(epochs=3, batch_size=10)  # 4 training batches an epoch
    checkpoint = tmp_path / "checkpoint.pt"
    recorder = Recorder()
    asked: list[int] = []

    def should_stop() -> str | None:
        asked.append(recorder.batches)
        return "time is up" if recorder.batches == 6 else None  # epoch 2, batch 2

    with pytest.raises(TrainingStopped) as stopped:
        _epochs(
            spec,
            splits,
            config,
            callbacks=[recorder],
            options=RunOptions(checkpoint_path=checkpoint, should_stop=should_stop),
        )
    assert isinstance(stopped.value, KeyboardInterrupt)
    assert str(stopped.value) == "time is up (in epoch 2, batch 2)"
    assert recorder.batches == 6  # not one batch more
    assert [r.epoch for r in recorder.epochs] == [1]
    saved = load_checkpoint(checkpoint)
    assert saved["epoch"] == 1
    assert isinstance(saved["run_id"], str)
    history = _epochs(
        spec, splits, config, options=RunOptions(checkpoint_path=checkpoint, resume=True)
    )
    assert [h.epoch for h in history] == [1, 2, 3]
    assert load_checkpoint(checkpoint)["run_id"] == saved["run_id"]
