"""A lane kind: what a lane of an MLCN is, without a module of its own.

Lanes run as :class:`~nasmlcn.models.LaneStack`s (a single lane is a stack of one),
so a lane is described, not built: its kind gives the layers' geometry, the names
of its parameters and the tensors it starts from. Lane ``l`` turns the image into
primary capsules and routes them to ``K`` outputs; entry ``k`` becomes dimension
``l`` of class capsule ``k`` (:mod:`nasmlcn.models._fused` computes it).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import torch
from torch import nn

from nasmlcn.models._conv import initial_conv_tensors, meta_conv_layers
from nasmlcn.specs import LaneLayout, LaneSpec

ROUTINGS = ("vector", "classwise")


@dataclass(frozen=True)
class LaneKind:
    """What makes lanes stack together: one spec, and the model's routing, weight
    sharing, input shape and classes.

    Attributes:
        spec: Type, width and depth.
        input_shape: ``(C, H, W)``.
        num_classes: K.
        routing: ``vector`` — the lane's primary capsules route to a single K-D
            capsule (the reference code); or ``classwise`` — they route to K 1-D
            capsules with a softmax over classes.
        routing_iterations: Routing iterations.
        weight_sharing: One vote transform per capsule channel, shared by its
            capsules at every position (FasTrCaps Alg. 4), instead of one per
            primary capsule.
    """

    spec: LaneSpec
    input_shape: tuple[int, int, int]
    num_classes: int
    routing: str
    routing_iterations: int
    weight_sharing: bool = False

    def __post_init__(self) -> None:
        if self.routing not in ROUTINGS:
            raise ValueError(f"routing must be 'vector' or 'classwise', got {self.routing!r}")

    @cached_property
    def layout(self) -> LaneLayout:
        return self.spec.layout(self.input_shape)

    @property
    def capsule_dim(self) -> int:
        return self.layout.capsule_dim

    @property
    def num_primary(self) -> int:
        return self.layout.num_primary

    @property
    def channels(self) -> int:
        """Capsule channels of the last layer (``C/d``)."""
        return self.layout.feature_shapes[-1][0] // self.capsule_dim

    @property
    def positions(self) -> int:
        """Positions sharing a vote transform (0: no weight sharing)."""
        return self.num_primary // self.channels if self.weight_sharing else 0

    @cached_property
    def convs(self) -> nn.Sequential:
        """The lane's conv layers on the ``meta`` device: geometry and parameter
        names, never values (building them draws no random numbers)."""
        return meta_conv_layers(self.layout.convs)

    @cached_property
    def names(self) -> tuple[str, ...]:
        """The lane's parameter names, as checkpoints name them under ``lanes.<l>.``:
        the vote transforms ``weight`` ``(transforms, d, K)``, then ``convs.<i>...``."""
        return ("weight", *(f"convs.{name}" for name, _ in self.convs.named_parameters()))

    def initial_tensors(self, vote_init: str = "scaled") -> list[torch.Tensor]:
        """A new lane's parameters, in the order of :attr:`names`: the conv layers'
        default initialisation, then the vote transforms (:func:`vote_weights`), drawn
        in that order (so a seed gives the weights it always gave)."""
        convs = initial_conv_tensors(self.convs)  # the meta layers' shapes, drawn anew
        # One (d x K) transform per primary capsule; both routings use the same
        # weights, only how the K outputs are grouped into capsules differs. With
        # weight sharing, one per capsule channel (C/d of them), shared by the
        # channel's capsules at all H*W positions.
        transforms = self.channels if self.weight_sharing else self.num_primary
        shape = (transforms, self.capsule_dim, self.num_classes)
        weight = vote_weights(shape, self.num_primary, vote_init)
        return [weight, *convs]


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
