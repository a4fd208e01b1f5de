"""The Multi-Lane Capsule Network.

Lanes are independent until the class capsules: lane ``l`` turns the image into
primary capsules and routes them to a K-vector; class capsule ``k`` is
``(lane_1[k], ..., lane_L[k])`` and its length is the probability of class ``k``.
The model is split into :meth:`MLCN.lane_outputs` (what can run on other devices)
and :meth:`MLCN.head` (what runs after gathering the lanes), so lane-parallel
training can reuse both.

Routing variant (``MLCNSpec.routing``). ``vector`` routes each lane to one K-D
capsule, as the reference code does; the routing softmax over one capsule is
always 1, so it is ``squash(sum of votes)`` and the lane's K outputs compete for
length inside one squash. ``classwise`` routes each lane to K 1-D capsules with a
softmax over classes, so routing by agreement really happens. The default is
``vector`` (measured figures: docs/results.md).

The lanes run as stacks by kind (:class:`~nasmlcn.models.LaneSet`); there is no
per-lane module.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from nasmlcn.models._fused import LAYER_PATHS
from nasmlcn.models._head import CapsuleHead, CapsuleOutput
from nasmlcn.models._lane import LaneKind
from nasmlcn.models._lanes import LaneSet
from nasmlcn.specs import MLCNSpec


class MLCN(nn.Module):
    """An MLCN built from any :class:`~nasmlcn.specs.MLCNSpec` (lanes may all differ)."""

    def __init__(self, spec: MLCNSpec, *, fuse_lanes: bool = True) -> None:
        super().__init__()
        self.spec = spec
        # Drawn lane by lane (the same initial weights for a seed as ever), then
        # stacked by kind: one tensor per layer parameter for all lanes of a kind.
        kinds = [
            LaneKind(
                lane,
                spec.input_shape,
                spec.num_classes,
                spec.routing,
                spec.routing_iterations,
                spec.weight_sharing,
            )
            for lane in spec.lanes
        ]
        self.lanes = LaneSet.build(kinds, spec.vote_init)
        self.fuse_lanes = fuse_lanes
        self.capsule_head = CapsuleHead(
            spec.num_classes,
            spec.num_lanes,
            spec.decoder,
            math.prod(spec.input_shape),
            spec.lane_dropout,
        )

    @property
    def fuse_lanes(self) -> bool:
        """Lanes of one kind run as one computation (where the device's rule says
        so, :func:`nasmlcn.specs.lane_fuses`); False: one after another."""
        return self.lanes.fuse

    @fuse_lanes.setter
    def fuse_lanes(self, value: bool) -> None:
        self.lanes.fuse = bool(value)

    @property
    def layer_path(self) -> str:
        """How the lane stacks' later conv layers run: ``grouped`` (one grouped
        convolution a layer, the default) or ``bmm`` (one batched matrix product a
        layer, the lanes as its batch); the same results within rounding, the same
        parameters and checkpoints (:data:`nasmlcn.models._fused.LAYER_PATHS`)."""
        return self.lanes.layer_path

    @layer_path.setter
    def layer_path(self, value: str) -> None:
        if value not in LAYER_PATHS:
            raise ValueError(f"layer_path must be one of {sorted(LAYER_PATHS)}, got {value!r}")
        self.lanes.layer_path = value

    def lane_outputs(self, x: torch.Tensor) -> list[torch.Tensor]:
        """Each lane's ``(B, K)`` output, in lane order."""
        return list(self.lanes(x).unbind(-1))

    def head(
        self, lane_outputs: list[torch.Tensor], target: torch.Tensor | None = None
    ) -> CapsuleOutput:
        """Assembles class capsules from lane outputs and applies the capsule head."""
        class_capsules = torch.stack(lane_outputs, dim=-1)  # (B, K, L)
        return self.capsule_head(class_capsules, target)

    def forward(self, x: torch.Tensor, target: torch.Tensor | None = None) -> CapsuleOutput:
        out: CapsuleOutput = self.capsule_head(self.lanes(x), target)  # (B, K, L) capsules
        return out
