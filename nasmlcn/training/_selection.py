"""The model a training run reports: the weights of its best-validation epoch.

Select on validation, report test once: a run's figure is the test accuracy of the
weights after the epoch with the best validation accuracy (the first such epoch on
a tie), with the last epoch's test accuracy beside it. The test set never picks an
epoch. (The thesis's reference code validates on the test set and keeps the best
epoch; that figure is optimistic and never one of ours.)

:class:`Selection` follows a run epoch by epoch. Its weights are a copy of the
model's state taken when validation improves, on the model's own devices; a
checkpoint carries them under ``selected`` while they differ from the checkpoint's
own ``model`` (an epoch after the best one), so a resumed run selects among all
its epochs, and a reader of a run folder (:func:`selected_weights`) gets the
selected model.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn


@dataclass
class Selection:
    """The best-validation epoch so far and, when the model has moved on, its weights.

    Attributes:
        epoch: The selected epoch (0: none yet).
        val_accuracy: Its validation accuracy.
        state: Its weights, None while they are the model's own (the selected epoch
            is the last one trained).
    """

    epoch: int = 0
    val_accuracy: float = -math.inf
    state: dict[str, torch.Tensor] | None = field(default=None, repr=False)
    _snapshot: dict[str, torch.Tensor] | None = field(default=None, repr=False)

    def update(self, epoch: int, val_accuracy: float, model: nn.Module) -> None:
        """After ``epoch``'s validation: selects it if it beats every epoch before."""
        if val_accuracy > self.val_accuracy:
            self.epoch, self.val_accuracy = epoch, val_accuracy
            # Copied now, since the next epoch changes the model in place; the copy
            # becomes ``state`` only once a later epoch did.
            self._snapshot = _copy(model.state_dict())
            self.state = None
        elif self.state is None:
            self.state = self._snapshot

    def to_checkpoint(self) -> dict[str, Any] | None:
        """What a checkpoint stores beside its own weights (None: they are the selected)."""
        if self.state is None:
            return None
        return {"epoch": self.epoch, "val_accuracy": self.val_accuracy, "model": self.state}

    def restore(self, payload: Mapping[str, Any], model: nn.Module) -> None:
        """Takes up the selection of a checkpoint just loaded into ``model``.

        A checkpoint without ``selected`` selected its own epoch (or predates
        selection: then the epochs before it are not selectable, their weights gone).
        """
        history = payload.get("history") or []
        saved = payload.get("selected")
        if isinstance(saved, Mapping):
            self.epoch, self.val_accuracy = int(saved["epoch"]), float(saved["val_accuracy"])
            self.state = self._snapshot = dict(saved["model"])
            return
        epoch = int(payload["epoch"])
        accuracy = history[epoch - 1]["val_accuracy"] if 1 <= epoch <= len(history) else -math.inf
        self.epoch, self.val_accuracy = epoch, float(accuracy)
        self._snapshot = _copy(model.state_dict())
        self.state = None


def selected_weights(payload: Mapping[str, Any]) -> tuple[dict[str, torch.Tensor], int]:
    """The selected model's weights of a loaded checkpoint and their epoch."""
    saved = payload.get("selected")
    if isinstance(saved, Mapping):
        return dict(saved["model"]), int(saved["epoch"])
    return payload["model"], int(payload["epoch"])


def _copy(state: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    return {name: tensor.detach().clone() for name, tensor in state.items()}
