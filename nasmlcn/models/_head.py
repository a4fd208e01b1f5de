"""The part shared by MLCN and CapsNet after the class capsules: lengths, masking,
lane dropout and the reconstruction decoder."""

from __future__ import annotations

import math
from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import nn


class CapsuleOutput(NamedTuple):
    """What a capsule model returns.

    Attributes:
        lengths: Class probabilities as capsule lengths ``(B, K)``.
        class_capsules: ``(B, K, D)``; for an MLCN, ``D`` is the number of lanes.
        reconstruction: ``(B, C*H*W)`` in [0, 1], or None without a decoder.
    """

    lengths: torch.Tensor
    class_capsules: torch.Tensor
    reconstruction: torch.Tensor | None


class Decoder(nn.Module):
    """Fully connected 512-1024-(C*H*W) decoder with a sigmoid output.

    ``full`` reads all ``K x D`` class capsule values with every capsule but the
    selected one zeroed (Sabour et al.); ``reduced`` reads only the ``D`` values of
    the selected capsule (FasTrCaps, sec. IV-C), which drops ``(K-1) * D * 512``
    weights that only ever multiply zeros.
    """

    def __init__(self, kind: str, num_classes: int, capsule_dim: int, pixels: int) -> None:
        super().__init__()
        if kind not in ("full", "reduced"):
            raise ValueError(f"decoder kind must be 'full' or 'reduced', got {kind!r}")
        self.kind = kind
        in_features = num_classes * capsule_dim if kind == "full" else capsule_dim
        self.layers = nn.Sequential(
            nn.Linear(in_features, 512),
            nn.ReLU(inplace=True),
            nn.Linear(512, 1024),
            nn.ReLU(inplace=True),
            nn.Linear(1024, pixels),
            nn.Sigmoid(),
        )

    def forward(self, class_capsules: torch.Tensor, selected: torch.Tensor) -> torch.Tensor:
        """Reconstructs images from the ``selected`` class ``(B,)`` of ``(B, K, D)`` capsules."""
        b, k, d = class_capsules.shape
        if self.kind == "full":
            mask = F.one_hot(selected, k).to(class_capsules.dtype).unsqueeze(-1)  # (B, K, 1)
            x = (class_capsules * mask).reshape(b, k * d)  # (B, K*D)
        else:
            x = class_capsules[torch.arange(b, device=selected.device), selected]  # (B, D)
        return self.layers(x)


class CapsuleHead(nn.Module):
    """Class capsules -> lengths (with lane dropout in training) and reconstruction.

    Args:
        num_classes: K.
        capsule_dim: D.
        decoder: ``full``, ``reduced`` or ``none``.
        pixels: Number of values in one image (C*H*W).
        lane_dropout: Probability of dropping each capsule dimension (an MLCN lane)
            from the lengths during training. Dropped lanes are zeroed per sample and
            the rest scaled by ``1/sqrt(1-p)`` so the expected squared length is
            unchanged; the decoder always sees every lane (thesis sec. 4.2.1).
    """

    def __init__(
        self,
        num_classes: int,
        capsule_dim: int,
        decoder: str,
        pixels: int,
        lane_dropout: float = 0.0,
    ) -> None:
        super().__init__()
        self.lane_dropout = lane_dropout
        self.decoder = (
            None if decoder == "none" else Decoder(decoder, num_classes, capsule_dim, pixels)
        )

    def forward(
        self, class_capsules: torch.Tensor, target: torch.Tensor | None = None
    ) -> CapsuleOutput:
        caps = class_capsules  # (B, K, D)
        if self.training and self.lane_dropout > 0:
            keep = 1.0 - self.lane_dropout
            mask = torch.bernoulli(caps.new_full((caps.shape[0], 1, caps.shape[2]), keep))
            caps = caps * mask / math.sqrt(keep)
        lengths = torch.linalg.vector_norm(caps, dim=-1)  # (B, K)
        recon = None
        if self.decoder is not None:
            selected = target if target is not None else lengths.argmax(dim=1)
            recon = self.decoder(class_capsules, selected)
        return CapsuleOutput(lengths, class_capsules, recon)
