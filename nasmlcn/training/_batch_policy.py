"""Batch-size policies (FasTrCaps, sec. IV-B and IV-E): the batch size of every epoch.

A policy maps (1-based epoch, the run's ``batch_size``) to that epoch's batch size.
The trainer draws every epoch's batches at that size (a fresh shuffle per epoch,
seeded by the epoch), so a resumed run trains each epoch at the size an
uninterrupted one would, and lays the learning-rate schedule out over the steps
the sizes give (:class:`~nasmlcn.training.StepPlan`).

The paper's numbers, with its ``2^P`` (``P = 4``: 16, the batch its fixed baseline
trains with, 49 s/epoch on a GTX 1080 Ti) read as the run's ``--batch-size`` ``B``:

* ``adabatch`` (Algorithm 3): batch 1 in epochs 1-3, ``B`` in 4-8, ``2B`` in 9-13,
  ``4B`` from epoch 14 on;
* ``warmadabatch`` (sec. IV-E, Algorithm 5): batch 1 in epochs 1-3, then ``B`` for
  the rest of the run; its learning rate is cosine warm restarts with one cycle per
  batch-size phase (the ``phase-restarts`` lr policy, the one it trains with unless
  another is given: :func:`default_lr_policy`).

Pure Python (no torch).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from nasmlcn.errors import CheckpointError, option
from nasmlcn.registry import Registry

WARMUP_EPOCHS = 3
"""Epochs at :data:`WARMUP_BATCH_SIZE` that both adaptive policies start with (FasTrCaps)."""

WARMUP_BATCH_SIZE = 1
"""The batch size of those epochs (FasTrCaps: 1)."""

ADABATCH_PHASE_EPOCHS = 5
"""AdaBatch doubles the batch every 5 epochs after the warm-up (epochs 4-8, 9-13, 14-)."""

DEFAULT_LR_POLICY = "one-cycle"
"""The lr policy of a run that names none and whose batch policy has none of its own
(what :class:`~nasmlcn.training.TrainConfig` puts in an ``lr_policy`` not given)."""


@dataclass(frozen=True)
class BatchPolicy:
    """A batch-size schedule.

    Attributes:
        name: Its registry name.
        size: ``size(epoch, batch_size)``: the batch size of the 1-based ``epoch`` of
            a run configured with ``batch_size``.
        description: One line for ``--help``.
        lr_policy: The learning-rate policy it comes with (WarmAdaBatch's restarts),
            used where none is given; None: the usual default.
    """

    name: str
    size: Callable[[int, int], int]
    description: str
    lr_policy: str | None = None


BATCH_POLICIES: Registry[BatchPolicy] = Registry("batch-size policy")


def _fixed(epoch: int, batch_size: int) -> int:
    return batch_size


def _adabatch(epoch: int, batch_size: int) -> int:
    if epoch <= WARMUP_EPOCHS:
        return WARMUP_BATCH_SIZE
    doublings = min((epoch - WARMUP_EPOCHS - 1) // ADABATCH_PHASE_EPOCHS, 2)
    return batch_size * 2**doublings


def _warmadabatch(epoch: int, batch_size: int) -> int:
    return WARMUP_BATCH_SIZE if epoch <= WARMUP_EPOCHS else batch_size


BATCH_POLICIES.register("fixed", BatchPolicy("fixed", _fixed, "--batch-size in every epoch"))
BATCH_POLICIES.register(
    "adabatch",
    BatchPolicy(
        "adabatch",
        _adabatch,
        "AdaBatch: batch 1 in epochs 1-3, then --batch-size B, 2B from epoch 9, 4B from 14 "
        "(FasTrCaps Alg. 3)",
    ),
)
BATCH_POLICIES.register(
    "warmadabatch",
    BatchPolicy(
        "warmadabatch",
        _warmadabatch,
        "WarmAdaBatch: batch 1 in epochs 1-3, then --batch-size, with a warm restart of the "
        "lr at the change (lr policy phase-restarts unless given; FasTrCaps Alg. 5)",
        lr_policy="phase-restarts",
    ),
)


def epoch_batch_sizes(batch_policy: str, batch_size: int, epochs: int) -> tuple[int, ...]:
    """The batch size of epochs 1..``epochs`` under ``batch_policy``.

    Raises:
        UnknownNameError: ``batch_policy`` is not registered.
    """
    size = BATCH_POLICIES.get(batch_policy).size
    return tuple(size(epoch, batch_size) for epoch in range(1, epochs + 1))


def largest_batch_size(batch_policy: str, batch_size: int, epochs: int) -> int:
    """The largest batch a step of the run sees (what its memory must hold)."""
    return max(epoch_batch_sizes(batch_policy, batch_size, epochs))


def default_lr_policy(batch_policy: str) -> str:
    """The lr policy of a run that names none: ``batch_policy``'s own, else
    :data:`DEFAULT_LR_POLICY` (``TrainConfig`` resolves an ``lr_policy`` not given so)."""
    return BATCH_POLICIES.get(batch_policy).lr_policy or DEFAULT_LR_POLICY


def check_same_batch_policy(
    path: str | os.PathLike[str], saved: Mapping[str, Any], batch_policy: str
) -> None:
    """Refuses to resume a checkpoint under another batch policy: its epochs were
    drawn (and its lr schedule laid out) at the other policy's batch sizes.
    Checkpoints that predate batch policies trained with ``fixed``.

    Raises:
        CheckpointError: Naming both policies and the option to resume with.
    """
    before = saved.get("batch_policy", "fixed") if saved else batch_policy
    if before != batch_policy:
        raise CheckpointError(
            f"checkpoint {str(path)!r} was trained with batch policy {before!r}, not "
            f"{batch_policy!r}; resume with {option('batch_policy')} {before}"
        )
