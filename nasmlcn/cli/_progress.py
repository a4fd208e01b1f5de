"""A rich progress display for training, driven by the trainer's callbacks."""

from __future__ import annotations

import time

from rich.console import Console
from rich.progress import (
    TaskID,
)

from nasmlcn.cli._console import progress_bars
from nasmlcn.training import Callback, EpochResult, TrainStart


class TrainProgress(Callback):
    """Two bars on stderr: all epochs (with ETA) and the current epoch's batches
    (with ETA, live loss, accuracy and images/s); a line per finished epoch."""

    def __init__(self, console: Console, title: str, label: str = "train") -> None:
        self.console = console
        self.title = title
        self.label = label
        self.progress = progress_bars(console)
        self._overall: TaskID | None = None
        self._epoch: TaskID | None = None
        self._start: TrainStart | None = None
        self._epoch_started = 0.0

    def __enter__(self) -> TrainProgress:
        self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.stop()

    def on_train_start(self, start: TrainStart) -> None:
        self._start = start
        self.console.print(
            f"{self.title}: {start.params:,} parameters, {start.train_images:,} images/epoch "
            f"on {start.device}"
        )
        done = start.first_epoch - 1
        self._overall = self.progress.add_task(
            f"{self.label} epochs", total=start.epochs, completed=done, stats=""
        )
        if done:
            self.console.print(f"resuming after epoch {done}/{start.epochs}")

    def on_epoch_start(self, epoch: int) -> None:
        assert self._start is not None
        if self._epoch is not None:
            self.progress.remove_task(self._epoch)
        self._epoch_started = time.perf_counter()
        self._epoch = self.progress.add_task(
            f"epoch {epoch}/{self._start.epochs}", total=self._start.batches_per_epoch, stats=""
        )

    def on_batch_end(self, epoch: int, batch: int, loss: float, accuracy: float) -> None:
        assert self._epoch is not None and self._start is not None
        elapsed = time.perf_counter() - self._epoch_started
        per_batch = -(-self._start.train_images // self._start.batches_per_epoch)
        images = min(batch * per_batch, self._start.train_images)
        rate = f"{images / elapsed:6.0f} img/s" if elapsed > 0 else ""
        self.progress.update(
            self._epoch, completed=batch, stats=f"loss {loss:.4f} acc {accuracy:.3f} {rate}"
        )

    def on_eval_start(self, epoch: int) -> None:
        assert self._epoch is not None
        self.progress.update(self._epoch, description=f"validating {epoch}")

    def on_epoch_end(self, result: EpochResult) -> None:
        assert self._overall is not None and self._start is not None
        self.progress.update(self._overall, advance=1, stats=f"val acc {result.val_accuracy:.4f}")
        self.console.print(
            f"epoch {result.epoch}/{self._start.epochs}: "
            f"train loss {result.train_loss:.4f} acc {result.train_accuracy:.4f} | "
            f"val loss {result.val_loss:.4f} acc {result.val_accuracy:.4f} | "
            f"{result.seconds:.1f} s, {result.images_per_second:.0f} img/s",
            highlight=False,
        )
