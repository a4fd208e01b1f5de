"""The relay of rank 0's training callbacks to the process that launched the ranks:
rank 0's :class:`Emit` turns every hook call into a small event, the launcher's
:func:`replay` calls its own callbacks (the display) with it."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from nasmlcn.training._callbacks import Callback, TrainStart
from nasmlcn.training._config import EpochResult

if TYPE_CHECKING:
    from nasmlcn.parallel import RankContext


@dataclass(frozen=True)
class EpochStart:
    epoch: int


@dataclass(frozen=True)
class BatchEnd:
    epoch: int
    batch: int
    loss: float
    accuracy: float


@dataclass(frozen=True)
class EvalStart:
    epoch: int


Event = TrainStart | EpochStart | BatchEnd | EvalStart | EpochResult
"""One callback call of rank 0, sent to the launching process."""


class Emit(Callback):
    """Rank 0's end of the relay: every hook becomes an event for the launching
    process, which owns the display and replays it with :func:`replay`."""

    def __init__(self, ctx: RankContext, batches: bool) -> None:
        self.ctx = ctx
        self.batches = batches

    @property
    def wants_batches(self) -> bool:
        return self.batches  # only when the launcher's callbacks want them

    def on_train_start(self, start: TrainStart) -> None:
        # The module stays here: a rank's share cannot be unpickled elsewhere (DDP
        # needs the process group).
        self.ctx.emit(replace(start, model=None))

    def on_epoch_start(self, epoch: int) -> None:
        self.ctx.emit(EpochStart(epoch))

    def on_batch_end(self, epoch: int, batch: int, loss: float, accuracy: float) -> None:
        self.ctx.emit(BatchEnd(epoch, batch, loss, accuracy))

    def on_eval_start(self, epoch: int) -> None:
        self.ctx.emit(EvalStart(epoch))

    def on_epoch_end(self, result: EpochResult) -> None:
        self.ctx.emit(result)


def replay(event: Event, callbacks: Callback) -> None:
    """The launcher's end of the relay: the hook call that ``event`` stands for."""
    if isinstance(event, TrainStart):
        callbacks.on_train_start(event)
    elif isinstance(event, EpochStart):
        callbacks.on_epoch_start(event.epoch)
    elif isinstance(event, BatchEnd):
        callbacks.on_batch_end(event.epoch, event.batch, event.loss, event.accuracy)
    elif isinstance(event, EvalStart):
        callbacks.on_eval_start(event.epoch)
    else:
        callbacks.on_epoch_end(event)
