"""Hooks into training: the CLI's progress bar and the search's trial reporting
are both callbacks. Library code never prints."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from nasmlcn.training._config import EpochResult


@dataclass(frozen=True)
class TrainStart:
    """Sent once before the first epoch.

    Attributes:
        epochs: Total epochs (including ones already done when resuming).
        first_epoch: The 1-based epoch training starts at (> 1 when resuming).
        batches_per_epoch: Training batches of the first epoch trained.
        epoch_batches: The training batches of every epoch (empty: all
            ``batches_per_epoch``).
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
    epoch_batches: tuple[int, ...] = ()

    @property
    def batches(self) -> tuple[int, ...]:
        """The training batches of every epoch (epoch 1 first): they differ under a
        batch-size policy such as ``adabatch``."""
        return self.epoch_batches or (self.batches_per_epoch,) * self.epochs

    def batches_of(self, epoch: int) -> int:
        """The training batches of the 1-based ``epoch``."""
        return self.batches[min(max(epoch, 1), len(self.batches)) - 1]


class Callback:
    """Base class with no-op hooks; override what you need.

    ``on_epoch_end`` may return a reason to stop training after that epoch (the
    search's pruning does): training ends there and returns the epochs it ran.
    """

    @property
    def wants_batches(self) -> bool:
        """Whether ``on_batch_end`` should be called: true where it is overridden.

        Per-batch figures cost a read-back from the device after every batch (a
        host sync that stalls a GPU's queue), so the trainer makes them only when
        some callback wants them.
        """
        return type(self).on_batch_end is not Callback.on_batch_end

    def on_train_start(self, start: TrainStart) -> None:
        pass

    def on_epoch_start(self, epoch: int) -> None:
        pass

    def on_batch_end(self, epoch: int, batch: int, loss: float, accuracy: float) -> None:
        pass

    def on_eval_start(self, epoch: int) -> None:
        pass

    def on_epoch_end(self, result: EpochResult) -> str | None:
        """After an epoch: a reason to stop training here, or None to go on."""
        return None


class CallbackList(Callback):
    """Several callbacks as one: every hook goes to each of them, in order.

    Subclass it to change what the callbacks see (override a hook, call
    ``super()`` with the changed event).
    """

    def __init__(self, callbacks: Iterable[Callback] = ()) -> None:
        self.callbacks = list(callbacks)

    @property
    def wants_batches(self) -> bool:
        return any(cb.wants_batches for cb in self.callbacks)

    def on_train_start(self, start: TrainStart) -> None:
        for cb in self.callbacks:
            cb.on_train_start(start)

    def on_epoch_start(self, epoch: int) -> None:
        for cb in self.callbacks:
            cb.on_epoch_start(epoch)

    def on_batch_end(self, epoch: int, batch: int, loss: float, accuracy: float) -> None:
        for cb in self.callbacks:
            cb.on_batch_end(epoch, batch, loss, accuracy)

    def on_eval_start(self, epoch: int) -> None:
        for cb in self.callbacks:
            cb.on_eval_start(epoch)

    def on_epoch_end(self, result: EpochResult) -> str | None:
        """Every callback hears the epoch; the first reason to stop is returned."""
        reasons = [cb.on_epoch_end(result) for cb in self.callbacks]
        return next((r for r in reasons if r is not None), None)


class TrainingStopped(KeyboardInterrupt):
    """Training was stopped between two batches by its ``should_stop`` (the
    search's ``--timeout``). A :class:`KeyboardInterrupt`, so that everything
    that handles Ctrl-C (the search saves the trial, queues it again and a re-run
    resumes it from its last epoch's checkpoint) handles it the same way.

    Attributes:
        reason: What ``should_stop`` said.
    """

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason

    def __str__(self) -> str:
        return self.reason
