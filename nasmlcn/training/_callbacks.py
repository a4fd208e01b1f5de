"""Hooks into training: the CLI's progress bar and the search's trial reporting
are both callbacks. Library code never prints."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from nasmlcn.training._config import EpochResult


@dataclass(frozen=True)
class TrainStart:
    """Sent once before the first epoch.

    Attributes:
        epochs: Total epochs (including ones already done when resuming).
        first_epoch: The 1-based epoch training starts at (> 1 when resuming).
        batches_per_epoch: Training batches per epoch.
        train_images: Images per training epoch.
        params: Trainable parameters.
        device: Where the model trains.
        model: The module being trained, for callbacks that evaluate it after an
            epoch (on data of their own); they must leave it as they found it
            (``nasmlcn.training.evaluate`` does).
    """

    epochs: int
    first_epoch: int
    batches_per_epoch: int
    train_images: int
    params: int
    device: str
    model: Any = field(default=None, repr=False, compare=False)


class Callback:
    """Base class with no-op hooks; override what you need.

    ``on_epoch_end`` may raise to stop training (the search raises
    ``optuna.TrialPruned`` there); the exception propagates out of ``train``.
    """

    def on_train_start(self, start: TrainStart) -> None:
        pass

    def on_epoch_start(self, epoch: int) -> None:
        pass

    def on_batch_end(self, epoch: int, batch: int, loss: float, accuracy: float) -> None:
        pass

    def on_eval_start(self, epoch: int) -> None:
        pass

    def on_epoch_end(self, result: EpochResult) -> None:
        pass
