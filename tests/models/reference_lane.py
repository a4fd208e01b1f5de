"""The reference lane: one MLCN lane as a plain torch module, convolutions -> primary
capsules -> routing, written for reading.

The package has no per-lane module: lanes run as lane stacks
(:mod:`nasmlcn.models._fused`; a single lane is a stack of one). This is what the
stacks are checked against (``tests/models/test_fused.py``: outputs and gradients
within 1e-5 in float64, every lane kind, both routings, with and without weight
sharing), and what the cost models' FLOP and memory counts are checked against
(``tests/costs/test_analytic.py``). Built under a seed it holds the tensors a lane
of the package starts from (drawn in the same order), named as checkpoints name a
lane's (``lanes.<l>.weight``, ``lanes.<l>.convs.<i>...``), so a lane's entries of an
MLCN's state dict load into it.
"""

from __future__ import annotations

import torch
from torch import nn

from nasmlcn.models import dynamic_routing, primary_capsules, votes
from nasmlcn.models._capsules import shared_transforms
from nasmlcn.models._conv import channels_last, conv_layers
from nasmlcn.models._lane import vote_weights
from nasmlcn.specs import LaneSpec


class Lane(nn.Module):
    """A lane produces one dimension of every class capsule.

    Args:
        spec: Type, width and depth.
        input_shape: ``(C, H, W)``.
        num_classes: K.
        routing: ``vector`` — the lane's primary capsules route to a single
            K-D capsule (the reference code); or ``classwise`` — they route to K
            1-D capsules with a softmax over classes.
        routing_iterations: Routing iterations.
        weight_sharing: One vote transform per capsule channel, shared by its
            capsules at every position (FasTrCaps Alg. 4), instead of one per
            primary capsule.
        vote_init: How the vote transforms start (``scaled`` or ``glorot``).

    The forward pass returns ``(B, K)``: lane ``l``'s entry ``k`` becomes dimension
    ``l`` of class capsule ``k``.
    """

    def __init__(
        self,
        spec: LaneSpec,
        input_shape: tuple[int, int, int],
        num_classes: int,
        routing: str,
        routing_iterations: int,
        weight_sharing: bool = False,
        vote_init: str = "scaled",
    ) -> None:
        super().__init__()
        if routing not in ("vector", "classwise"):
            raise ValueError(f"routing must be 'vector' or 'classwise', got {routing!r}")
        layout = spec.layout(input_shape)
        self.spec = spec
        self.input_shape = input_shape
        self.capsule_dim = layout.capsule_dim
        self.num_primary = layout.num_primary
        self.num_classes = num_classes
        self.routing = routing
        self.routing_iterations = routing_iterations
        self.convs = conv_layers(layout.convs)
        # One (capsule_dim x K) transform per primary capsule; both routings use the
        # same weights, only how the K outputs are grouped into capsules differs.
        # With weight sharing, one per capsule channel (C/8 of them), shared by the
        # channel's capsules at all H*W positions.
        channels = layout.feature_shapes[-1][0] // layout.capsule_dim
        self.positions = self.num_primary // channels if weight_sharing else 0
        transforms = channels if weight_sharing else self.num_primary
        self.weight = nn.Parameter(
            vote_weights((transforms, self.capsule_dim, num_classes), self.num_primary, vote_init)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        u = primary_capsules(self.convs(channels_last(x)), self.capsule_dim)  # (N, B, d)
        weight: torch.Tensor = self.weight  # (N, d, K), or (C/d, d, K) shared
        if self.positions:
            weight = shared_transforms(weight, self.positions)  # (N, d, K)
        if self.routing == "vector":
            u_hat = votes(u, weight, 1)  # (N, B, 1, K)
            return dynamic_routing(u_hat, self.routing_iterations)[:, 0, :]  # (B, K)
        u_hat = votes(u, weight, self.num_classes)  # (N, B, K, 1)
        return dynamic_routing(u_hat, self.routing_iterations)[:, :, 0]  # (B, K)
