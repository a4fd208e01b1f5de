"""The CapsNet baseline (Sabour et al. 2017), from the same parts as the MLCN."""

from __future__ import annotations

import math

import torch
from torch import nn

from nasmlcn.models._capsules import dynamic_routing, primary_capsules, votes
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
        self.weight = nn.Parameter(
            torch.randn(n, spec.primary_dim, spec.num_classes * spec.class_dim) / math.sqrt(n)
        )
        self.capsule_head = CapsuleHead(
            spec.num_classes, spec.class_dim, spec.decoder, math.prod(spec.input_shape)
        )

    def forward(self, x: torch.Tensor, target: torch.Tensor | None = None) -> CapsuleOutput:
        features = self.convs(channels_last(x))  # (B, 256, 6, 6)
        u = primary_capsules(features, self.spec.primary_dim)  # (1152, B, 8)
        u_hat = votes(u, self.weight, self.spec.num_classes)  # (1152, B, 10, 16)
        class_capsules = dynamic_routing(u_hat, self.spec.routing_iterations)  # (B, 10, 16)
        return self.capsule_head(class_capsules, target)
