"""The training loop: Adam, a learning-rate policy, training-batch augmentation,
per-epoch validation, callbacks and resumable checkpoints."""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import torch
from torch import nn

from nasmlcn._allocator import keep_freed_memory
from nasmlcn.data import DataSplits, Split, normalization_record
from nasmlcn.errors import DivergedError, TrainingError, option
from nasmlcn.models import count_parameters
from nasmlcn.specs import ArchSpec
from nasmlcn.training._augment import AUGMENTATIONS
from nasmlcn.training._batch_policy import check_same_batch_policy, epoch_batch_sizes
from nasmlcn.training._callbacks import Callback, CallbackList, TrainingStopped, TrainStart
from nasmlcn.training._checkpoint import (
    check_resumable,
    check_same_arch,
    load_checkpoint,
    new_run_id,
    save_checkpoint,
)
from nasmlcn.training._config import EpochResult, RunOptions, TrainConfig
from nasmlcn.training._optimizer import make_optimizer
from nasmlcn.training._optimizer_state import restack_optimizer_state
from nasmlcn.training._schedules import LR_POLICIES, StepPlan
from nasmlcn.training._selection import Selection
from nasmlcn.training._step import EvalStep, TrainStep, graphs_apply

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
    should_stop: Callable[[], str | None] | None = None,
    step: Callable[[torch.Tensor, torch.Tensor], tuple[torch.Tensor, torch.Tensor]] | None = None,
) -> tuple[float, float]:
    """Mean loss and accuracy of ``model`` on ``split`` (eval mode, no gradients).

    The decoder reconstructs from the predicted class, as at inference. The model
    gets ``split``'s normalised images (:meth:`~nasmlcn.data.Split.inputs`); the
    decoder reconstructs the [0, 1] ones. ``should_stop`` is asked after every
    batch (see :func:`train`). ``step``: the evaluation step to use (a trainer keeps
    one, with its CUDA graphs, for every epoch); None: an eager one.
    """
    stop = _stopper(should_stop)
    was_training = model.training
    model.eval()
    step = step or EvalStep(model, split.inputs, reconstruction_weight)
    sums = _Sums()
    try:
        for x, y in split.batches(batch_size):
            x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
            loss, lengths = step(x, y)
            sums.add(loss, lengths, y)
            stop(None, sums.seen)
    finally:
        model.train(was_training)
    total_loss, correct = sums.read()
    return total_loss / max(sums.seen, 1), correct / max(sums.seen, 1)


class _Sums:
    """An epoch's loss and correct-prediction sums, kept on the loss's device.

    Adding a batch queues a few tiny device ops instead of reading the loss back
    (a host sync per batch, which stalls a GPU's queue); :meth:`read` reads both
    sums back at once. The loss is summed in float64, batch by batch, as the
    host summed Python floats, so the means are the same to the last bit.
    """

    def __init__(self) -> None:
        self.losses: list[torch.Tensor] = []  # each batch's () loss, to find a non-finite one
        self.loss_sum: torch.Tensor | None = None  # (), float64: sum of loss x batch size
        self.correct: torch.Tensor | None = None  # (), int64
        self.seen = 0

    def add(self, loss: torch.Tensor, lengths: torch.Tensor, y: torch.Tensor) -> None:
        """Adds a batch: its mean ``loss``, class-capsule ``lengths`` (B, K), labels ``y`` (B,)."""
        loss = loss.detach().clone()  # a graphed step overwrites its own at the next replay
        if self.loss_sum is None or self.correct is None:
            self.loss_sum = torch.zeros((), dtype=torch.float64, device=loss.device)
            self.correct = torch.zeros((), dtype=torch.int64, device=loss.device)
        self.losses.append(loss)
        self.loss_sum += loss.double() * len(y)
        self.correct += (lengths.detach().argmax(dim=1) == y).sum()
        self.seen += len(y)

    def read(self) -> tuple[float, int]:
        """The loss sum and the correct predictions so far (one read-back)."""
        if self.loss_sum is None or self.correct is None:
            return 0.0, 0
        loss_sum, correct = torch.stack((self.loss_sum, self.correct.double())).tolist()
        return loss_sum, int(correct)

    def read_last(self) -> tuple[float, int]:
        """The last batch's loss and the correct predictions so far (one read-back)."""
        assert self.correct is not None, "no batch added"
        loss, correct = torch.stack((self.losses[-1].double(), self.correct.double())).tolist()
        return loss, int(correct)

    def check_finite(self, epoch: int, loss_sum: float) -> None:
        """Raises if a batch's loss was NaN or infinite (``loss_sum`` is then too).

        Raises:
            DivergedError: Naming the first such batch.
        """
        if math.isfinite(loss_sum):
            return
        losses = torch.stack(self.losses).tolist()
        batch = next(i for i, value in enumerate(losses) if not math.isfinite(value))
        raise _non_finite(losses[batch], epoch, batch + 1)


def _non_finite(loss: float, epoch: int, batch: int) -> DivergedError:
    return DivergedError(f"loss became {loss} at epoch {epoch}, batch {batch}")


def _stopper(should_stop: Callable[[], str | None] | None) -> Callable[[int | None, int], None]:
    """A check to call after every batch: raises :class:`TrainingStopped` once
    ``should_stop`` gives a reason (the epoch and batch are added to it)."""
    if should_stop is None:
        return lambda epoch, batch: None

    def check(epoch: int | None, batch: int) -> None:
        reason = should_stop()
        if reason is not None:
            where = f"epoch {epoch}, batch {batch}" if epoch is not None else "validation"
            raise TrainingStopped(f"{reason} (in {where})")

    return check


PROGRESS_EVERY = 50
"""On a GPU, batch callbacks (progress bars) see every this many batches, and the
last of an epoch: each read-back of the loss waits for the GPU's queue."""

RESIDENT_BYTES = 4 << 30
"""Splits up to this size (all three together) are moved to a GPU whole before
training: Fashion-MNIST is 55 MB as bytes, CIFAR-10 184 MB, SVHN 246 MB."""


def resident(splits: DataSplits, device: torch.device) -> DataSplits:
    """``splits`` on ``device`` when it is a GPU and they fit :data:`RESIDENT_BYTES`:
    batches are then cut, shuffled and augmented there, with no copy from the host
    and no wait in a training step. Otherwise as they are."""
    if device.type != "cuda" or splits.nbytes > RESIDENT_BYTES:
        return splits
    return splits.to(device)


def _epoch_seed(seed: int, epoch: int) -> int:
    # Every epoch reseeds from (seed, epoch), so a resumed run sees the same
    # shuffles, lane-dropout masks and augmentations as an uninterrupted one.
    return (seed * 1_000_003 + epoch * 7_919) % (2**63)


def _augment_seed(epoch_seed: int) -> int:
    # A generator of its own: augmenting leaves the shuffle and the lane-dropout
    # masks (global RNG) as they are without it, so runs with and without
    # augmentation differ in nothing else.
    return (epoch_seed + 0x5DEECE66D) % (2**63)


def train_epochs(
    model: nn.Module,
    arch: ArchSpec,
    splits: DataSplits,
    config: TrainConfig,
    *,
    callbacks: Sequence[Callback] = (),
    options: RunOptions | None = None,
    selection: Selection | None = None,
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
        callbacks: Receive progress; ``on_epoch_end`` may return a reason to stop
            after that epoch.
        options: Its ``checkpoint_path`` (written after every epoch), ``resume``,
            ``run_id`` and ``should_stop`` (see :class:`RunOptions`; the rest is
            for :func:`~nasmlcn.training.train`). None: no checkpoint, no stop.
        selection: Follows the best-validation epoch and keeps its weights (and the
            checkpoints carry them, and a resumed run takes them up); None: no
            epoch is selected (a search trial's figure is its last epoch's).

    Raises:
        DivergedError: The loss became NaN or infinite (found at the end of the
            epoch, or at once where a callback wants every batch's figures).
        CheckpointError: ``resume`` and the checkpoint belongs to another model.
        TrainingStopped: ``should_stop`` gave a reason.
    """
    keep_freed_memory()  # large activations come back from the heap, not fresh pages
    options = options or RunOptions()
    device = _place(model, config)
    optimizer = make_optimizer(model.parameters(), config.lr, device.type)
    plan = _step_plan(splits, config)
    policy = LR_POLICIES.get(config.lr_policy)
    augment = AUGMENTATIONS.get(config.augment).apply
    scheduler = policy.make(optimizer, config, plan)
    history, first_epoch, run_id = _resume(
        model, arch, config, options, device, optimizer, scheduler, selection
    )
    splits = resident(splits, device)
    graphed = graphs_apply(model, device, config.cuda_graphs)
    loop = _EpochLoop(
        model=model,
        arch=arch,
        splits=splits,
        config=config,
        options=replace(options, run_id=run_id or new_run_id()),
        device=device,
        optimizer=optimizer,
        scheduler=scheduler,
        per_batch=policy.per_batch,
        augment=augment,
        stop=_stopper(options.should_stop),
        plan=plan,
        hooks=CallbackList(callbacks),
        step=TrainStep(
            model, optimizer, splits.train.inputs, config.reconstruction_weight, graphed
        ),
        eval_step=EvalStep(model, splits.val.inputs, config.reconstruction_weight, graphed),
    )
    loop.start(first_epoch)
    for epoch in range(first_epoch, config.epochs + 1):
        result = loop.epoch(epoch)
        loop.keep(result, history, selection)
        stop_reason = loop.hooks.on_epoch_end(result)
        if stop_reason is not None:
            logger.info("stopped after epoch %d: %s", epoch, stop_reason)
            break
    return history


def _place(model: nn.Module, config: TrainConfig) -> torch.device:
    """Moves ``model`` to ``config.device`` unless it placed itself; the device batches go to."""
    device = resolve_device(config.device)
    placed = getattr(model, "input_device", None)
    if isinstance(placed, torch.device):
        # The model placed its own lanes on several devices; moving it would undo that.
        return placed
    model.to(device)
    return device


def _step_plan(splits: DataSplits, config: TrainConfig) -> StepPlan:
    """Every epoch's batch size (its batch policy's) and steps; the lr schedule is
    laid out over them.

    Raises:
        TrainingError: An epoch's batch is smaller than the data-parallel ranks.
    """
    plan = StepPlan.of(
        len(splits.train), epoch_batch_sizes(config.batch_policy, config.batch_size, config.epochs)
    )
    # A data-parallel rank takes a share of every batch (ShardedSplit), and a batch
    # smaller than the ranks would be skipped: an epoch at batch 1 would train nothing.
    ranks = int(getattr(splits.train, "world_size", 1))
    if min(plan.batch_sizes) < ranks:
        raise TrainingError(
            f"batch policy {config.batch_policy!r} trains at batch {min(plan.batch_sizes)}, "
            f"fewer images than the {ranks} data-parallel processes; use {option('parallelism')} "
            f"lanes or another {option('batch_policy')}"
        )
    return plan


def _resume(
    model: nn.Module,
    arch: ArchSpec,
    config: TrainConfig,
    options: RunOptions,
    device: torch.device,
    optimizer: torch.optim.Optimizer,
    scheduler: Any,
    selection: Selection | None,
) -> tuple[list[EpochResult], int, str | None]:
    """Takes up ``options.checkpoint_path`` when resuming: the history so far, the
    first epoch to train and the run's id (the model, ``optimizer``, ``scheduler``
    and ``selection`` take up its state, loaded onto ``device``)."""
    path = options.checkpoint_path
    if not (options.resume and path is not None and Path(path).is_file()):
        return [], 1, options.run_id
    payload = load_checkpoint(path, map_location=str(device))
    check_same_arch(path, payload["arch"], arch)
    check_resumable(path, payload, config, options.data)
    check_same_batch_policy(path, payload.get("train_config") or {}, config.batch_policy)
    model.load_state_dict(payload["model"])
    if "optimizer" in payload:
        optimizer.load_state_dict(restack_optimizer_state(model, payload["optimizer"]))
    if "scheduler" in payload:
        scheduler.load_state_dict(payload["scheduler"])
    history = [EpochResult(**h) for h in payload["history"]]
    first_epoch = int(payload["epoch"]) + 1
    if selection is not None:
        selection.restore(payload, model)
    logger.info("resuming from %s after epoch %d", path, first_epoch - 1)
    return history, first_epoch, payload["run_id"] or options.run_id


@dataclass
class _EpochLoop:
    """What every epoch of a run trains, validates and checkpoints with."""

    model: nn.Module
    arch: ArchSpec
    splits: DataSplits
    config: TrainConfig
    options: RunOptions  # with the run's id
    device: torch.device
    optimizer: torch.optim.Optimizer
    scheduler: Any
    per_batch: bool  # the lr policy steps after every batch, not every epoch
    augment: Callable[[torch.Tensor, torch.Generator], torch.Tensor] | None
    stop: Callable[[int | None, int], None]  # asked after every batch (_stopper)
    plan: StepPlan
    hooks: CallbackList
    step: TrainStep
    eval_step: EvalStep

    def start(self, first_epoch: int) -> None:
        """Tells the callbacks that training starts at ``first_epoch``."""
        config, plan = self.config, self.plan
        self.hooks.on_train_start(
            TrainStart(
                epochs=config.epochs,
                first_epoch=first_epoch,
                batches_per_epoch=plan.steps[min(first_epoch, config.epochs) - 1],
                train_images=len(self.splits.train),
                params=count_parameters(self.model),
                device=str(self.device),
                model=self.model,
                epoch_batches=tuple(plan.steps),
            )
        )

    def epoch(self, epoch: int) -> EpochResult:
        """Trains and validates one epoch."""
        self.hooks.on_epoch_start(epoch)
        lr = self.optimizer.param_groups[0]["lr"]
        batch_size = self.plan.batch_sizes[epoch - 1]
        sums, seconds = self.train_one_epoch(epoch, batch_size)
        loss_sum, correct = sums.read()
        sums.check_finite(epoch, loss_sum)
        if not self.per_batch:
            self.scheduler.step()
        self.hooks.on_eval_start(epoch)
        t1 = time.perf_counter()
        val_loss, val_acc = self.validate()
        # len(splits.train), not the images seen here: a rank's share of every batch
        # (ShardedSplit) has the whole split's length, so this is the job's rate.
        images = len(self.splits.train)
        return EpochResult(
            epoch=epoch,
            train_loss=loss_sum / max(sums.seen, 1),
            train_accuracy=correct / max(sums.seen, 1),
            val_loss=val_loss,
            val_accuracy=val_acc,
            seconds=seconds,
            eval_seconds=time.perf_counter() - t1,
            images_per_second=images / seconds if seconds > 0 else float("inf"),
            lr=lr,
            batch_size=batch_size,
        )

    def train_one_epoch(self, epoch: int, batch_size: int) -> tuple[_Sums, float]:
        """Trains one epoch; its sums and seconds (the device's queue drained)."""
        model, device, step = self.model, self.device, self.step
        scheduler, hooks = self.scheduler, self.hooks
        per_batch, steps = self.per_batch, self.plan.steps[epoch - 1]
        augment, stop = self.augment, self.stop
        batch_hooks = hooks.wants_batches
        # On a GPU reading the loss back waits for every queued kernel: progress is read
        # every PROGRESS_EVERY batches there, every batch on a CPU (where it costs nothing).
        progress_every = PROGRESS_EVERY if device.type == "cuda" else 1
        seed = _epoch_seed(self.config.seed, epoch)
        torch.manual_seed(seed)
        generator = torch.Generator().manual_seed(seed)
        augment_generator = torch.Generator().manual_seed(_augment_seed(seed))
        model.train()
        t0 = time.perf_counter()
        batches = self.splits.train.batches(batch_size, generator=generator)
        sums = _Sums()
        for i, (x, y) in enumerate(batches):
            x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
            if augment is not None:
                x = augment(x, augment_generator)  # the decoder reconstructs the shifted image
            loss, lengths = step(x, y)
            sums.add(loss, lengths, y)
            if per_batch:
                scheduler.step()
            if batch_hooks and ((i + 1) % progress_every == 0 or i + 1 == steps):
                # A callback shows batches (the CLI's progress bar): only for it is
                # the loss read back, every `progress_every` batches, and checked.
                value, correct_so_far = sums.read_last()
                if not math.isfinite(value):
                    sums.check_finite(epoch, value)
                hooks.on_batch_end(epoch, i + 1, value, correct_so_far / sums.seen)
            stop(epoch, i + 1)
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        return sums, time.perf_counter() - t0

    def validate(self) -> tuple[float, float]:
        """The validation loss and accuracy of the model as it is."""
        return evaluate(
            self.model,
            self.splits.val,
            batch_size=self.config.eval_batch_size,
            device=self.device,
            reconstruction_weight=self.config.reconstruction_weight,
            should_stop=self.options.should_stop,
            step=self.eval_step,
        )

    def keep(
        self, result: EpochResult, history: list[EpochResult], selection: Selection | None
    ) -> None:
        """Adds an epoch's ``result`` to ``history`` and ``selection``, logs it and
        writes the checkpoint (where the run has one)."""
        history.append(result)
        if selection is not None:
            selection.update(result.epoch, result.val_accuracy, self.model)
        logger.info(
            "epoch %d/%d: val_accuracy %.4f, %.1f images/s",
            result.epoch,
            self.config.epochs,
            result.val_accuracy,
            result.images_per_second,
        )
        if self.options.checkpoint_path is not None:
            self.checkpoint(result.epoch, history, selection)

    def checkpoint(
        self, epoch: int, history: list[EpochResult], selection: Selection | None
    ) -> None:
        """Writes the run's checkpoint after ``epoch``."""
        assert self.options.checkpoint_path is not None
        save_checkpoint(
            self.options.checkpoint_path,
            arch=self.arch,
            model=self.model,
            epoch=epoch,
            optimizer=self.optimizer,
            scheduler=self.scheduler,
            history=[h.to_dict() for h in history],
            # The inputs' normalisation, so that an evaluation of the run repeats it.
            train_config={
                **self.config.to_dict(),
                "normalization": normalization_record(self.splits.train.normalization),
                **({"data": dict(self.options.data)} if self.options.data is not None else {}),
            },
            run_id=self.options.run_id,
            selected=selection.to_checkpoint() if selection is not None else None,
        )
