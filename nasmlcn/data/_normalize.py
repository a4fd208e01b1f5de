"""Per-channel normalisation of model inputs (pure Python; ``apply`` imports torch).

Colour datasets (CIFAR-10, SVHN) declare a per-channel mean and standard deviation
(:attr:`~nasmlcn.data.DatasetInfo.normalization`); the grey ones declare none and
their models see the images in [0, 1], as before. The splits loaded for a dataset
carry its normalisation, and :meth:`Split.inputs <nasmlcn.data.Split.inputs>`
is the one place where a batch in [0, 1] becomes what a model is given: training,
validation, test and the search's latency measurement all go through it. The
reconstruction decoder (a sigmoid) still reconstructs the [0, 1] image, and
augmentations act on the [0, 1] image, so a zero-padded border stays black.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from nasmlcn.errors import DatasetError

if TYPE_CHECKING:
    import torch


@dataclass(frozen=True)
class Normalization:
    """``(x - mean[c]) / std[c]`` for every channel ``c`` of an image in [0, 1].

    Attributes:
        mean: One mean per channel, in [0, 1] units.
        std: One standard deviation per channel (> 0), in [0, 1] units.
    """

    mean: tuple[float, ...]
    std: tuple[float, ...]

    def __post_init__(self) -> None:
        if not self.mean or len(self.mean) != len(self.std):
            raise DatasetError(
                f"normalization needs one mean and one std per channel, got "
                f"{len(self.mean)} mean(s) and {len(self.std)} std(s)"
            )
        for name, values in (("mean", self.mean), ("std", self.std)):
            for v in values:
                if not isinstance(v, (int, float)) or not math.isfinite(v):
                    raise DatasetError(f"normalization {name} must be finite numbers, got {v!r}")
        if any(s <= 0 for s in self.std):
            raise DatasetError(f"normalization std must be > 0, got {list(self.std)}")

    @property
    def channels(self) -> int:
        return len(self.mean)

    def apply(self, images: torch.Tensor) -> torch.Tensor:
        """Normalised copy of ``images`` ``(B, C, H, W)`` (float, in [0, 1]), on their device."""
        if images.dim() != 4 or images.shape[1] != self.channels:
            raise DatasetError(
                f"normalization is for {self.channels} channel(s), got images of shape "
                f"{tuple(images.shape)}"
            )
        mean, std = _channel_stats(self.mean, self.std, images.dtype, images.device)  # (C, 1, 1)
        return (images - mean) / std  # (B, C, H, W)

    def to_dict(self) -> dict[str, list[float]]:
        return {"mean": list(self.mean), "std": list(self.std)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Normalization:
        """Reads what :meth:`to_dict` wrote (a checkpoint's or result.json's record)."""
        try:
            return cls(tuple(float(v) for v in data["mean"]), tuple(float(v) for v in data["std"]))
        except (KeyError, TypeError, ValueError) as err:
            raise DatasetError(
                f"not a normalization record (needs 'mean' and 'std' lists): {err}"
            ) from None


@functools.lru_cache(maxsize=16)
def _channel_stats(
    mean: tuple[float, ...], std: tuple[float, ...], dtype: torch.dtype, device: torch.device
) -> tuple[torch.Tensor, torch.Tensor]:
    """``mean`` and ``std`` as ``(C, 1, 1)`` tensors on ``device``, made once: a copy
    to a GPU per batch would wait for the batches queued before it."""
    import torch

    def column(values: tuple[float, ...]) -> torch.Tensor:
        return torch.tensor(values, dtype=dtype).view(-1, 1, 1).to(device)  # (C, 1, 1)

    return column(mean), column(std)


def normalization_record(normalization: Normalization | None) -> dict[str, list[float]] | None:
    """What a run records (checkpoint ``train_config``, result.json): None for none."""
    return normalization.to_dict() if normalization is not None else None


CIFAR10_NORMALIZATION = Normalization(mean=(0.4914, 0.4822, 0.4465), std=(0.2470, 0.2435, 0.2616))
"""CIFAR-10's per-channel mean and standard deviation over all pixels of the 50,000
training images, in [0, 1] units (125.3/123.0/113.9 and 63.0/62.1/66.7 out of 255,
as fb.resnet.torch uses; recomputed from torchvision's CIFAR10 in
MadryLab/robustness issue 70). The often-copied std (0.2023, 0.1994, 0.2010) of
kuangliu/pytorch-cifar is a mean of per-image stds, not the channel's std."""

SVHN_NORMALIZATION = Normalization(mean=(0.4377, 0.4438, 0.4728), std=(0.1980, 0.2010, 0.1970))
"""SVHN's per-channel mean and standard deviation over the 73,257 images of its
``train`` split (the ``extra`` split not included), in [0, 1] units, as published
and widely used (e.g. the DeepCore coreset library's SVHN loader)."""
