"""The training loop: Adam, a learning-rate policy, training-batch augmentation,
per-epoch validation, callbacks and resumable checkpoints."""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Sequence
from pathlib import Path

import torch
from torch import nn

from nasmlcn.data._splits import DataSplits, Split
from nasmlcn.errors import DivergedError, TrainingError
from nasmlcn.models import capsule_loss, count_parameters
from nasmlcn.specs import ArchSpec
from nasmlcn.training._augment import AUGMENTATIONS
from nasmlcn.training._callbacks import Callback, TrainStart
from nasmlcn.training._checkpoint import (
    check_same_arch,
    check_same_schedule,
    load_checkpoint,
    save_checkpoint,
)
from nasmlcn.training._config import EpochResult, TrainConfig
from nasmlcn.training._schedules import LR_POLICIES

logger = logging.getLogger(__name__)


def resolve_device(name: str) -> torch.device:
    """``auto`` picks ``cuda`` when one is present, else ``cpu``."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        device = torch.device(name)
    except RuntimeError:
        raise TrainingError(f"unknown device {name!r}; use cpu, cuda, cuda:N or auto") from None
    if device.type == "cuda" and not torch.cuda.is_available():
        raise TrainingError(f"device {name!r} requested but no CUDA device is available here")
    if (
        device.type == "cuda"
        and device.index is not None
        and device.index >= torch.cuda.device_count()
    ):
        raise TrainingError(
            f"device {name!r} does not exist; this machine has {torch.cuda.device_count()} CUDA device(s)"
        )
    return device


@torch.no_grad()
def evaluate(
    model: nn.Module,
    split: Split,
    *,
    batch_size: int = 500,
    device: torch.device | str = "cpu",
    reconstruction_weight: float = 0.0005,
) -> tuple[float, float]:
    """Mean loss and accuracy of ``model`` on ``split`` (eval mode, no gradients).

    The decoder reconstructs from the predicted class, as at inference.
    """
    was_training = model.training
    model.eval()
    total_loss, correct, seen = 0.0, 0, 0
    try:
        for x, y in split.batches(batch_size):
            x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
            out = model(x)
            loss = capsule_loss(out.lengths, out.reconstruction, x, y, reconstruction_weight).total
            total_loss += float(loss) * len(y)
            correct += int((out.lengths.argmax(dim=1) == y).sum())
            seen += len(y)
    finally:
        model.train(was_training)
    return total_loss / max(seen, 1), correct / max(seen, 1)


def _epoch_seed(seed: int, epoch: int) -> int:
    # Every epoch reseeds from (seed, epoch), so a resumed run sees the same
    # shuffles, lane-dropout masks and augmentations as an uninterrupted one.
    return (seed * 1_000_003 + epoch * 7_919) % (2**63)


def _augment_seed(epoch_seed: int) -> int:
    # A generator of its own: augmenting leaves the shuffle and the lane-dropout
    # masks (global RNG) as they are without it, so runs with and without
    # augmentation differ in nothing else.
    return (epoch_seed + 0x5DEECE66D) % (2**63)


def train(
    model: nn.Module,
    arch: ArchSpec,
    splits: DataSplits,
    config: TrainConfig,
    *,
    callbacks: Sequence[Callback] = (),
    checkpoint_path: str | Path | None = None,
    resume: bool = False,
) -> list[EpochResult]:
    """Trains ``model`` (built from ``arch``) and returns one result per epoch.

    Args:
        model: The model; it is moved to ``config.device``, unless it has an
            ``input_device`` (a lane-parallel
            :class:`~nasmlcn.parallel.PlacedMLCN` spread over several devices):
            then it stays where it is and batches go to that device.
        arch: Its spec, stored in checkpoints.
        splits: Training and validation data (the test split is not touched).
        config: Epochs, batch size, learning rate, augmentation (training
            batches only), seed, device.
        callbacks: Receive progress; ``on_epoch_end`` may raise to stop.
        checkpoint_path: Written atomically after every epoch when given.
        resume: Continue from ``checkpoint_path`` if it exists; its architecture
            must equal ``arch``.

    Raises:
        DivergedError: The loss became NaN or infinite.
        CheckpointError: ``resume`` and the checkpoint belongs to another model.
    """
    device = resolve_device(config.device)
    placed = getattr(model, "input_device", None)
    if isinstance(placed, torch.device):
        # The model placed its own lanes on several devices; moving it would undo that.
        device = placed
    else:
        model.to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=config.lr)
    batches = math.ceil(len(splits.train) / config.batch_size)
    policy = LR_POLICIES.get(config.lr_policy)
    augment = AUGMENTATIONS.get(config.augment).apply
    scheduler = policy.make(optimizer, config, batches)
    history: list[EpochResult] = []
    first_epoch = 1
    if resume and checkpoint_path is not None and Path(checkpoint_path).is_file():
        payload = load_checkpoint(checkpoint_path, map_location=str(device))
        check_same_arch(checkpoint_path, payload["arch"], arch)
        check_same_schedule(checkpoint_path, payload.get("train_config") or {}, config)
        model.load_state_dict(payload["model"])
        if "optimizer" in payload:
            optimizer.load_state_dict(payload["optimizer"])
        if "scheduler" in payload:
            scheduler.load_state_dict(payload["scheduler"])
        history = [EpochResult(**h) for h in payload["history"]]
        first_epoch = int(payload["epoch"]) + 1
        logger.info("resuming from %s after epoch %d", checkpoint_path, first_epoch - 1)

    start = TrainStart(
        epochs=config.epochs,
        first_epoch=first_epoch,
        batches_per_epoch=batches,
        train_images=len(splits.train),
        params=count_parameters(model),
        device=str(device),
        model=model,
    )
    for cb in callbacks:
        cb.on_train_start(start)

    for epoch in range(first_epoch, config.epochs + 1):
        for cb in callbacks:
            cb.on_epoch_start(epoch)
        seed = _epoch_seed(config.seed, epoch)
        torch.manual_seed(seed)
        generator = torch.Generator().manual_seed(seed)
        augment_generator = torch.Generator().manual_seed(_augment_seed(seed))
        lr = optimizer.param_groups[0]["lr"]
        model.train()
        loss_sum, correct, seen = 0.0, 0, 0
        t0 = time.perf_counter()
        for i, (x, y) in enumerate(splits.train.batches(config.batch_size, generator=generator)):
            x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
            if augment is not None:
                x = augment(x, augment_generator)  # the decoder reconstructs the shifted image
            out = model(x, y)
            loss = capsule_loss(
                out.lengths, out.reconstruction, x, y, config.reconstruction_weight
            ).total
            value = float(loss.detach())
            if not math.isfinite(value):
                raise DivergedError(f"loss became {value} at epoch {epoch}, batch {i + 1}")
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            if policy.per_batch:
                scheduler.step()
            batch_correct = int((out.lengths.detach().argmax(dim=1) == y).sum())
            loss_sum += value * len(y)
            correct += batch_correct
            seen += len(y)
            for cb in callbacks:
                cb.on_batch_end(epoch, i + 1, value, correct / seen)
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        seconds = time.perf_counter() - t0
        if not policy.per_batch:
            scheduler.step()
        for cb in callbacks:
            cb.on_eval_start(epoch)
        t1 = time.perf_counter()
        val_loss, val_acc = evaluate(
            model,
            splits.val,
            batch_size=config.eval_batch_size,
            device=device,
            reconstruction_weight=config.reconstruction_weight,
        )
        result = EpochResult(
            epoch=epoch,
            train_loss=loss_sum / max(seen, 1),
            train_accuracy=correct / max(seen, 1),
            val_loss=val_loss,
            val_accuracy=val_acc,
            seconds=seconds,
            eval_seconds=time.perf_counter() - t1,
            images_per_second=seen / seconds if seconds > 0 else float("inf"),
            lr=lr,
        )
        history.append(result)
        logger.info(
            "epoch %d/%d: val_accuracy %.4f, %.1f images/s",
            epoch,
            config.epochs,
            val_acc,
            result.images_per_second,
        )
        if checkpoint_path is not None:
            save_checkpoint(
                checkpoint_path,
                arch=arch,
                model=model,
                epoch=epoch,
                optimizer=optimizer,
                scheduler=scheduler,
                history=[h.to_dict() for h in history],
                train_config=config.to_dict(),
            )
        for cb in callbacks:
            cb.on_epoch_end(result)
    return history
