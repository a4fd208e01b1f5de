"""The relay of rank 0's training callbacks to the process that launched the ranks:
rank 0's :class:`Emit` turns every hook call into a small event, the launcher's
:func:`replay` calls its own callbacks (the display) with it. An epoch's end is a
question: the launcher's callbacks may answer with a reason to stop, and
:class:`Agreed` makes every rank stop at that epoch."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from nasmlcn.training._callbacks import Callback, CallbackList, TrainStart
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

    def on_epoch_end(self, result: EpochResult) -> str | None:
        # the launcher's callbacks may stop the job: rank 0 waits for their answer
        answer = self.ctx.ask(result)
        return answer if isinstance(answer, str) else None


class Agreed(CallbackList):
    """Every rank's callbacks (rank 0's own, none elsewhere), with one decision per
    epoch for the whole job: rank 0's reason to stop, sent to every rank, so that
    all stop after the same epoch (a rank that trained on alone would wait for its
    peers until the job timed out)."""

    def __init__(self, ctx: RankContext, callbacks: Sequence[Callback]) -> None:
        super().__init__(callbacks)
        self.ctx = ctx

    def on_epoch_end(self, result: EpochResult) -> str | None:
        import torch.distributed as dist

        reason = super().on_epoch_end(result)
        if self.ctx.world_size == 1 or not dist.is_initialized():
            return reason
        decided = [reason]
        dist.broadcast_object_list(decided, src=0)
        return decided[0]


def replay(event: Event, callbacks: Callback) -> str | None:
    """The launcher's end of the relay: the hook call that ``event`` stands for, and
    at an epoch's end its callbacks' reason to stop (None: go on)."""
    if isinstance(event, TrainStart):
        callbacks.on_train_start(event)
    elif isinstance(event, EpochStart):
        callbacks.on_epoch_start(event.epoch)
    elif isinstance(event, BatchEnd):
        callbacks.on_batch_end(event.epoch, event.batch, event.loss, event.accuracy)
    elif isinstance(event, EvalStart):
        callbacks.on_eval_start(event.epoch)
    else:
        return callbacks.on_epoch_end(event)
    return None
