"""One MLCN lane as a torch module: convolutions -> primary capsules -> routing."""

from __future__ import annotations

import torch
from torch import nn

from nasmlcn.models._capsules import dynamic_routing, primary_capsules, shared_transforms, votes
from nasmlcn.models._conv import channels_last, conv_layers
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
        vote_init: How the vote transforms start (:func:`vote_weights`).

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
        u = primary_capsules(self.convs(channels_last(x)), self.capsule_dim)  # (N, B, 8)
        weight: torch.Tensor = self.weight  # (N, 8, K), or (C/8, 8, K) shared
        if self.positions:
            weight = shared_transforms(weight, self.positions)  # (N, 8, K)
        if self.routing == "vector":
            u_hat = votes(u, weight, 1)  # (N, B, 1, K)
            return dynamic_routing(u_hat, self.routing_iterations)[:, 0, :]  # (B, K)
        u_hat = votes(u, weight, self.num_classes)  # (N, B, K, 1)
        return dynamic_routing(u_hat, self.routing_iterations)[:, :, 0]  # (B, K)


def vote_weights(shape: tuple[int, int, int], num_primary: int, init: str) -> torch.Tensor:
    """Initial vote transforms ``(transforms, d, K)`` of a lane with ``num_primary`` capsules.

    ``scaled``: normal, standard deviation :func:`init_scale`. ``glorot``: Glorot
    uniform as Keras draws the reference code's ``CapsuleLayer`` weights ``(1, N, K,
    d)`` (fan in ``K*N``, fan out ``d*N``): bound ``sqrt(6 / ((K + d) N))``; for 648
    16-D capsules and 10 classes a standard deviation of 0.011 against ``scaled``'s 0.039.
    """
    if init == "scaled":
        return torch.randn(shape) * init_scale(num_primary)
    if init == "glorot":
        _, d, k = shape
        bound = (6.0 / ((k + d) * max(num_primary, 1))) ** 0.5
        return (torch.rand(shape) * 2 - 1) * bound
    raise ValueError(f"vote_init must be 'scaled' or 'glorot', got {init!r}")


def init_scale(num_inputs: int) -> float:
    """Standard deviation of the vote weights.

    Scaled so the summed votes start with unit-order length whatever the number of
    primary capsules, which keeps squash out of its flat region near zero.
    """
    return float(1.0 / max(num_inputs, 1) ** 0.5)
