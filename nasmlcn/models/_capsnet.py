"""The CapsNet baseline (Sabour et al. 2017), from the same parts as the MLCN."""

from __future__ import annotations

import math

import torch
from torch import nn

from nasmlcn.models._capsules import dynamic_routing, primary_capsules, shared_transforms, votes
from nasmlcn.models._conv import channels_last, conv_layers
from nasmlcn.models._head import CapsuleHead, CapsuleOutput
from nasmlcn.specs import CapsNetSpec


class CapsNet(nn.Module):
    """conv 256 9x9 -> 32x8-D primary caps (9x9/2) -> 10x16-D class caps, 3 routings."""

    def __init__(self, spec: CapsNetSpec) -> None:
        super().__init__()
        self.spec = spec
        self.convs = conv_layers(spec.layout.convs)  # conv + ReLU, primary capsule conv
        n = spec.layout.num_primary
        # One transform per primary capsule, or with weight sharing one per capsule
        # channel (32), shared over its 6x6 grid (FasTrCaps Alg. 4).
        self.positions = n // spec.primary_channels if spec.weight_sharing else 0
        transforms = spec.primary_channels if spec.weight_sharing else n
        self.weight = nn.Parameter(
            torch.randn(transforms, spec.primary_dim, spec.num_classes * spec.class_dim)
            / math.sqrt(n)
        )
        self.capsule_head = CapsuleHead(
            spec.num_classes, spec.class_dim, spec.decoder, math.prod(spec.input_shape)
        )

    def forward(self, x: torch.Tensor, target: torch.Tensor | None = None) -> CapsuleOutput:
        features = self.convs(channels_last(x))  # (B, 256, 6, 6)
        u = primary_capsules(features, self.spec.primary_dim)  # (1152, B, 8)
        weight: torch.Tensor = self.weight  # (1152, 8, 160), or (32, 8, 160) shared
        if self.positions:
            weight = shared_transforms(weight, self.positions)  # (1152, 8, 160)
        u_hat = votes(u, weight, self.spec.num_classes)  # (1152, B, 10, 16)
        class_capsules = dynamic_routing(u_hat, self.spec.routing_iterations)  # (B, 10, 16)
        return self.capsule_head(class_capsules, target)
