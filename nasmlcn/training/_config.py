"""Training configuration and per-epoch results (pure Python)."""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from nasmlcn._defaults import LEARNING_RATE
from nasmlcn._validate import check_int
from nasmlcn.errors import SpecError

MAX_EPOCHS = 100_000
"""The most epochs a training run may be given: more is no run's plan but a typo, and
the batch sizes and learning rates of every epoch are laid out before the first."""


@dataclass(frozen=True)
class TrainConfig:
    """How a model is trained.

    Attributes:
        epochs: Training epochs.
        batch_size: Training batch size (100 in the thesis).
        lr: Initial Adam learning rate (1e-3 in the thesis).
        lr_policy: A registered policy (see :data:`nasmlcn.training.LR_POLICIES`).
            ``one-cycle`` by default (FasTrCaps): it beat the thesis's
            ``exponential`` on Fashion-MNIST (measured figures: docs/results.md). Its
            schedule is laid out over the run, so a run can be resumed but not
            extended.
        lr_decay: Per-epoch factor of the ``exponential`` policy (0.9 in the thesis).
        reconstruction_weight: Weight of the summed squared reconstruction error
            (0.0005, Sabour et al.).
        seed: Seeds initialisation, shuffling and lane dropout.
        device: ``cpu``, ``cuda``, ``cuda:N`` or ``auto``.
        eval_batch_size: Batch size for validation and test passes.
        augment: A registered augmentation of the training batches (``none`` by
            default; ``shift`` for the 28x28 sets, ``crop-flip`` for CIFAR-10,
            ``crop`` for SVHN; see :data:`nasmlcn.training.AUGMENTATIONS`).
        batch_policy: A registered batch-size policy (see
            :data:`nasmlcn.training.BATCH_POLICIES`): ``fixed`` (``batch_size`` in
            every epoch, the default), ``adabatch`` or ``warmadabatch`` (FasTrCaps).
            WarmAdaBatch as the paper trains it also takes ``lr_policy``
            ``phase-restarts`` (what ``nasmlcn train`` picks for it when no
            ``--lr-policy`` is given: :func:`~nasmlcn.training.default_lr_policy`).
        fuse_lanes: Run an MLCN's lanes of one kind as one computation (the
            default; :mod:`nasmlcn.models._fused`, the same model and the same
            checkpoints). False runs them one after another, for comparison.
        cuda_graphs: On a GPU, replay each batch size's training and evaluation
            step from a CUDA graph (:mod:`nasmlcn.training._step`; the default).
            False runs every step eagerly. Ignored off a GPU.
    """

    epochs: int = 10
    batch_size: int = 100
    lr: float = LEARNING_RATE
    lr_policy: str = "one-cycle"
    lr_decay: float = 0.9
    reconstruction_weight: float = 0.0005
    seed: int = 0
    device: str = "cpu"
    eval_batch_size: int = 500
    augment: str = "none"
    batch_policy: str = "fixed"
    fuse_lanes: bool = True
    cuda_graphs: bool = True

    def __post_init__(self) -> None:
        for name in ("fuse_lanes", "cuda_graphs"):
            if not isinstance(getattr(self, name), bool):
                raise SpecError(
                    f"training {name} must be true or false, got {getattr(self, name)!r}"
                )
        check_int("training", "epochs", self.epochs, 1)
        if self.epochs > MAX_EPOCHS:  # a typo: the schedule of every epoch is laid out first
            raise SpecError(
                f"training epochs must be at most {MAX_EPOCHS:,} (the thesis trains 10 to "
                f"100), got {self.epochs:,}"
            )
        check_int("training", "batch_size", self.batch_size, 1)
        check_int("training", "eval_batch_size", self.eval_batch_size, 1)
        check_int("training", "seed", self.seed, 0)
        for name in ("lr", "lr_decay"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
                raise SpecError(f"training {name} must be a positive number, got {value!r}")
        if self.reconstruction_weight < 0:
            raise SpecError(
                f"training reconstruction_weight must be >= 0, got {self.reconstruction_weight!r}"
            )
        from nasmlcn.training._schedules import LR_POLICIES

        if self.lr_policy not in LR_POLICIES:
            raise SpecError(f"training lr_policy: {LR_POLICIES.unknown_message(self.lr_policy)}")
        from nasmlcn.training._batch_policy import BATCH_POLICIES

        if self.batch_policy not in BATCH_POLICIES:
            raise SpecError(
                f"training batch_policy: {BATCH_POLICIES.unknown_message(self.batch_policy)}"
            )
        from nasmlcn.training._augment import AUGMENTATIONS

        if self.augment not in AUGMENTATIONS:
            raise SpecError(
                f"training augment: unknown augmentation {self.augment!r}; "
                f"choose one of: {', '.join(AUGMENTATIONS.names())}"
            )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class EpochResult:
    """What one epoch produced; the per-epoch callback receives it.

    Attributes:
        epoch: 1-based epoch number.
        train_loss: Mean training loss over the epoch.
        train_accuracy: Training accuracy over the epoch (lane dropout active).
        val_loss: Validation loss.
        val_accuracy: Validation accuracy in [0, 1].
        seconds: Wall time of the training pass (without validation).
        eval_seconds: Wall time of the validation pass.
        images_per_second: Training images per second.
        lr: Learning rate at the start of the epoch.
        batch_size: The epoch's training batch size (its batch policy's; 0 in
            results saved before batch policies).
    """

    epoch: int
    train_loss: float
    train_accuracy: float
    val_loss: float
    val_accuracy: float
    seconds: float
    eval_seconds: float
    images_per_second: float
    lr: float
    batch_size: int = 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class RunOptions:
    """What a training run keeps, resumes from, tests and writes, beside how it trains.

    :func:`~nasmlcn.training._trainer.train_epochs` reads the checkpoint fields and
    ``should_stop``; :func:`~nasmlcn.training.run_job` also ``test``, ``select``
    and ``out_dir``.

    Attributes:
        checkpoint_path: Written atomically after every epoch when given.
        resume: Continue from ``checkpoint_path`` if it exists; its architecture
            must be the run's.
        run_id: The id every checkpoint of the run carries (a resumed checkpoint's
            own id wins; None and no resumed id: a new one).
        should_stop: Asked after every training and validation batch; a reason it
            returns stops training at once with
            :class:`~nasmlcn.training.TrainingStopped` (the last epoch's checkpoint
            is the one kept), as Ctrl-C would.
        test: Select the best-validation epoch's weights and evaluate them, and the
            last epoch's, on the test split (:mod:`~nasmlcn.training._selection`).
        select: With ``test``, False tests the last epoch only and reports it as the
            selected one: for a run whose epochs were chosen beforehand (a refit on
            training + validation data, with nothing held out to select on).
        out_dir: ``arch.json`` is written here once the model is built.
    """

    checkpoint_path: str | os.PathLike[str] | None = None
    resume: bool = False
    run_id: str | None = None
    should_stop: Callable[[], str | None] | None = None
    test: bool = True
    select: bool = True
    out_dir: Path | None = None
