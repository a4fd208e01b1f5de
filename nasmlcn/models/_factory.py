"""Building a torch model from any architecture spec (a registry keyed by kind)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, overload

from torch import nn

from nasmlcn.models._capsnet import CapsNet
from nasmlcn.models._mlcn import MLCN
from nasmlcn.registry import Registry
from nasmlcn.specs import ArchSpec, CapsNetSpec, MLCNSpec

BUILDERS: Registry[Callable[[Any], nn.Module]] = Registry("architecture kind")
BUILDERS.register("mlcn", MLCN)
BUILDERS.register("capsnet", CapsNet)


# The built-in kinds cannot be registered again, so their specs' models are known.
@overload
def build_model(spec: MLCNSpec) -> MLCN: ...


@overload
def build_model(spec: CapsNetSpec) -> CapsNet: ...


@overload
def build_model(spec: ArchSpec) -> nn.Module: ...


def build_model(spec: ArchSpec) -> nn.Module:
    """The torch model of ``spec`` (an MLCNSpec or a CapsNetSpec): the one way to
    build a model (a named architecture: ``build_model(create_arch(name))``)."""
    return BUILDERS.get(spec.kind)(spec)


def count_parameters(model: nn.Module) -> int:
    """Number of trainable parameters."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)
