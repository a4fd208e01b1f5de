"""Torch models: capsule primitives, MLCN lanes, the MLCN and the CapsNet baseline."""

from __future__ import annotations

from nasmlcn.models._capsnet import CapsNet
from nasmlcn.models._capsules import dynamic_routing, primary_capsules, squash, votes
from nasmlcn.models._factory import BUILDERS, build_model, count_parameters, create_model
from nasmlcn.models._fused import stack_tensors
from nasmlcn.models._head import CapsuleHead, CapsuleOutput, Decoder
from nasmlcn.models._lane import Lane
from nasmlcn.models._lanes import LaneKind, LaneSet, per_lane_tensors
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
    "Lane",
    "LaneKind",
    "LaneSet",
    "LaneStack",
    "build_model",
    "capsule_loss",
    "count_parameters",
    "create_model",
    "dynamic_routing",
    "margin_loss",
    "per_lane_tensors",
    "primary_capsules",
    "reconstruction_loss",
    "squash",
    "stack_tensors",
    "votes",
]
