"""The live progress displays of long commands (stderr): one bar layout, one base.

:class:`ProgressDisplay` owns the rich bars (started and stopped as a context
manager, disabled when quiet) and adds or updates a bar by key; the displays of
``train`` (:class:`TrainProgress`), ``search``
(:class:`~nasmlcn.cli._search_progress.SearchProgress`, its own module so that
``train`` and ``calibrate`` do not import the search and Optuna) and ``calibrate``
(:class:`MeasureProgress`) only turn their events into bars and lines.
"""

from __future__ import annotations

import time
from typing import Any, ClassVar, TypeVar

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from nasmlcn.training import Callback, EpochResult, TrainStart

_Display = TypeVar("_Display", bound="ProgressDisplay")


def progress_bars(console: Console, *, disable: bool = False) -> Progress:
    """The live bars of long commands: description, bar, k/N, a ``stats`` field,
    elapsed time and ETA; transient, so only the per-item lines stay."""
    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(bar_width=26),
        MofNCompleteColumn(),
        TextColumn("{task.fields[stats]}"),
        TimeElapsedColumn(),
        TextColumn("eta"),
        TimeRemainingColumn(),
        console=console,
        transient=True,
        disable=disable,
    )


class ProgressDisplay:
    """Bars on ``console`` between ``__enter__`` and ``__exit__``, each under a key.

    Args:
        console: Where the bars and the display's lines go (the CLI's stderr).
        quiet: Show no bars (the lines a subclass prints still go to ``console``).
    """

    def __init__(self, console: Console, *, quiet: bool = False) -> None:
        self.console = console
        self.progress = progress_bars(console, disable=quiet)
        self._bars: dict[str, TaskID] = {}

    def __enter__(self: _Display) -> _Display:
        self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        # Progress.stop() writes an empty line when the console is not a terminal (a
        # pipe, a log), which put a blank line before the CLI's "error:"; stop the bars'
        # Live alone there (transient: a terminal keeps nothing of it either)
        if self.console.is_interactive:
            self.progress.stop()
        else:
            self.progress.live.stop()

    def bar(
        self,
        key: str,
        description: str | None = None,
        *,
        total: float | None = None,
        completed: int | None = None,
        advance: float | None = None,
        stats: str | None = None,
    ) -> None:
        """Adds the bar ``key`` (labelled ``description``, else ``key``), or updates
        the fields given of the one there."""
        task = self._bars.get(key)
        if task is None:
            self._bars[key] = self.progress.add_task(
                description or key, total=total, completed=completed or 0, stats=stats or ""
            )
            if advance:
                self.progress.advance(self._bars[key], advance)
            return
        fields: dict[str, Any] = {} if stats is None else {"stats": stats}
        self.progress.update(
            task,
            description=description,
            total=total,
            completed=completed,
            advance=advance,
            **fields,
        )

    def remove(self, key: str) -> None:
        """Removes the bar ``key``, if there is one."""
        task = self._bars.pop(key, None)
        if task is not None:
            self.progress.remove_task(task)


class TrainProgress(ProgressDisplay, Callback):
    """Two bars (all epochs with ETA; the current epoch's batches with ETA, live
    loss, accuracy and images/s) and a line per finished epoch."""

    def __init__(self, console: Console, title: str, label: str = "train") -> None:
        super().__init__(console)
        self.title = title
        self.label = label
        self.validates = True  # False: no validation images (a refit), none shown
        self._start: TrainStart | None = None
        self._epoch_started = 0.0
        self._epoch_batches = 1

    def on_train_start(self, start: TrainStart) -> None:
        self._start = start
        self.console.print(
            f"{self.title}: {start.params:,} parameters, {start.train_images:,} images/epoch "
            f"on {start.device}"
        )
        done = start.first_epoch - 1
        self.bar("epochs", f"{self.label} epochs", total=start.epochs, completed=done)
        if done:
            self.console.print(f"resuming after epoch {done}/{start.epochs}")

    def on_epoch_start(self, epoch: int) -> None:
        assert self._start is not None
        self.remove("epoch")
        self._epoch_started = time.perf_counter()
        self._epoch_batches = self._start.batches_of(epoch)
        self.bar("epoch", f"epoch {epoch}/{self._start.epochs}", total=self._epoch_batches)

    def on_batch_end(self, epoch: int, batch: int, loss: float, accuracy: float) -> None:
        assert self._start is not None
        elapsed = time.perf_counter() - self._epoch_started
        per_batch = -(-self._start.train_images // self._epoch_batches)
        images = min(batch * per_batch, self._start.train_images)
        rate = f"{images / elapsed:6.0f} img/s" if elapsed > 0 else ""
        self.bar("epoch", completed=batch, stats=f"loss {loss:.4f} acc {accuracy:.3f} {rate}")

    def on_eval_start(self, epoch: int) -> None:
        if self.validates:
            self.bar("epoch", f"validating {epoch}")

    def on_epoch_end(self, result: EpochResult) -> None:
        assert self._start is not None
        val = f"val acc {result.val_accuracy:.4f}" if self.validates else ""
        self.bar("epochs", advance=1, stats=val)
        self.console.print(
            f"epoch {result.epoch}/{self._start.epochs}: "
            f"train loss {result.train_loss:.4f} acc {result.train_accuracy:.4f} | "
            f"{f'val loss {result.val_loss:.4f} acc {result.val_accuracy:.4f} | ' if val else ''}"
            f"{result.seconds:.1f} s, {result.images_per_second:.0f} img/s",
            highlight=False,
        )


class MeasureProgress(ProgressDisplay):
    """A bar per measuring phase of ``calibrate``; call it with ``(phase, done, total)``."""

    LABELS: ClassVar[dict[str, str]] = {
        "time": "timing lanes",
        "memory": "peak memory",
        "models": "timing whole models",
    }

    def __call__(self, phase: str, done: int, total: int) -> None:
        self.bar(phase, self.LABELS.get(phase, phase), total=total, completed=done)
