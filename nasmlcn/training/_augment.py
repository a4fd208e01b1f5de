"""Training-data augmentations, applied to each training batch on its device.

An augmentation maps a batch of images ``(B, C, H, W)`` in [0, 1] to one of the
same shape and dtype, drawing its randomness from a CPU ``torch.Generator`` the
trainer seeds from (training seed, epoch): a run is reproducible, a resumed run
augments as an uninterrupted one does, and ranks that train lanes of one model
in several processes draw the same shifts for the same batch. (Data-parallel ranks
draw from the same stream for their own shards, so image i of every shard gets the
same shift.) Validation and test batches are never augmented.

Augmentations see the images in [0, 1], before a colour dataset's per-channel
normalisation (:meth:`nasmlcn.data.Split.inputs`), so zero fill is black, as in
torchvision's ``RandomCrop(padding=4)`` placed before ``Normalize``.

Built-ins, and what each suits:

- ``none`` (the default): no augmentation.
- ``shift``: the only augmentation of Sabour et al. (2017), each image shifted by
  up to 2 pixels in each direction, zero-padded; for the 28x28 sets (MNIST,
  Fashion-MNIST).
- ``crop``: pad by 4 pixels and crop a random window of the original size, i.e.
  a zero-filled shift of up to 4 pixels; for SVHN, whose digits must not be
  mirrored.
- ``crop-flip``: ``crop``, then a horizontal flip of each image with probability
  1/2: the standard CIFAR-10 augmentation (He et al. 2016, sec. 4.2).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from nasmlcn.registry import Registry

if TYPE_CHECKING:
    import torch


@dataclass(frozen=True)
class Augmentation:
    """``apply(images, generator)`` returns the augmented batch (None: unchanged)."""

    name: str
    apply: Callable[[torch.Tensor, torch.Generator], torch.Tensor] | None
    description: str


AUGMENTATIONS: Registry[Augmentation] = Registry("augmentation")

SHIFT_PIXELS = 2
"""The ``shift`` augmentation's largest shift per direction (Sabour et al., sec. 5)."""

CROP_PADDING = 4
"""The padding of ``crop`` and ``crop-flip`` (the standard CIFAR-10 setting of He et
al. 2016, sec. 4.2: "4 pixels are padded on each side, and a 32x32 crop is randomly
sampled from the padded image or its horizontal flip")."""


def random_shift(images: torch.Tensor, max_pixels: int, generator: torch.Generator) -> torch.Tensor:
    """Translates every image by its own random (dy, dx), each in [-max_pixels, max_pixels].

    Pixels shifted out are dropped and the uncovered border is zero. Vectorised: one
    zero pad and one gather for the whole batch, on the batch's device; the shifts
    are drawn on the CPU from ``generator``, so they do not depend on the device.

    Args:
        images: ``(B, C, H, W)``.
        max_pixels: Largest shift per direction (>= 0).
        generator: A CPU generator.
    """
    import torch
    import torch.nn.functional as F

    from nasmlcn.data import to_device

    if max_pixels < 0:
        raise ValueError(f"max_pixels must be >= 0, got {max_pixels}")
    if max_pixels == 0:
        return images
    b, c, h, w = images.shape
    p = max_pixels
    shifts = torch.randint(-p, p + 1, (b, 2), generator=generator)  # (B, 2), on the CPU
    shifts = to_device(shifts, images.device)  # no wait on a GPU
    padded = F.pad(images, (p, p, p, p))  # (B, C, H+2p, W+2p)
    # out[i, j] = images[i - dy, j - dx] = padded[i - dy + p, j - dx + p]: the content
    # moves by (+dy, +dx).
    rows = torch.arange(h, device=images.device) + p - shifts[:, :1]  # (B, H)
    cols = torch.arange(w, device=images.device) + p - shifts[:, 1:]  # (B, W)
    rows = rows[:, None, :, None].expand(b, c, h, w + 2 * p)  # (B, C, H, W+2p)
    picked = padded.gather(2, rows)  # (B, C, H, W+2p)
    cols = cols[:, None, None, :].expand(b, c, h, w)  # (B, C, H, W)
    return picked.gather(3, cols)  # (B, C, H, W)


def random_hflip(images: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """Mirrors each image left-right with probability 1/2 (drawn on the CPU from
    ``generator``, one draw per image).

    Args:
        images: ``(B, C, H, W)``.
        generator: A CPU generator.
    """
    import torch

    from nasmlcn.data import to_device

    flip = torch.rand(images.shape[0], generator=generator) < 0.5  # (B,)
    flip = to_device(flip, images.device)[:, None, None, None]  # (B, 1, 1, 1)
    return torch.where(flip, images.flip(3), images)  # (B, C, H, W)


def _shift(images: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    return random_shift(images, SHIFT_PIXELS, generator)


def _crop(images: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    # A random H x W window of the image zero-padded by CROP_PADDING on every side
    # is the image shifted by (dy, dx) in [-CROP_PADDING, CROP_PADDING]^2, zero-filled.
    return random_shift(images, CROP_PADDING, generator)


def _crop_flip(images: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    return random_hflip(random_shift(images, CROP_PADDING, generator), generator)


AUGMENTATIONS.register("none", Augmentation("none", None, "no augmentation"))
AUGMENTATIONS.register(
    "shift",
    Augmentation(
        "shift",
        _shift,
        f"random shifts of up to {SHIFT_PIXELS} px per direction, zero fill (Sabour et al.)",
    ),
)
AUGMENTATIONS.register(
    "crop",
    Augmentation(
        "crop",
        _crop,
        f"pad {CROP_PADDING} px (zero) and crop back to size at random, no flip (SVHN digits)",
    ),
)
AUGMENTATIONS.register(
    "crop-flip",
    Augmentation(
        "crop-flip",
        _crop_flip,
        "crop as 'crop', then a random horizontal flip (the standard CIFAR-10 augmentation)",
    ),
)
