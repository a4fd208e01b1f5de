"""Torch models: capsule primitives, MLCN lanes, the MLCN and the CapsNet baseline.

One verb builds a model: :func:`build_model` of a spec (a named architecture's spec
is ``nasmlcn.specs.create_arch(name)``). An MLCN's lanes run as lane stacks, one per
kind (:class:`LaneSet`, :class:`LaneStack`); a single lane is a stack of one.
"""

from __future__ import annotations

from nasmlcn.models._capsnet import CapsNet
from nasmlcn.models._capsules import dynamic_routing, primary_capsules, squash, votes
from nasmlcn.models._factory import BUILDERS, build_model, count_parameters
from nasmlcn.models._fused import stack_tensors
from nasmlcn.models._head import CapsuleHead, CapsuleOutput, Decoder
from nasmlcn.models._lane import LaneKind
from nasmlcn.models._lanes import LaneSet, per_lane_tensors
from nasmlcn.models._loss import CapsuleLoss, capsule_loss, margin_loss, reconstruction_loss
from nasmlcn.models._mlcn import MLCN
from nasmlcn.models._stack import LaneStack

__all__ = [
    "BUILDERS",
    "MLCN",
    "CapsNet",
    "CapsuleHead",
    "CapsuleLoss",
    "CapsuleOutput",
    "Decoder",
    "LaneKind",
    "LaneSet",
    "LaneStack",
    "build_model",
    "capsule_loss",
    "count_parameters",
    "dynamic_routing",
    "margin_loss",
    "per_lane_tensors",
    "primary_capsules",
    "reconstruction_loss",
    "squash",
    "stack_tensors",
    "votes",
]
