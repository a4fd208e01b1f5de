"""A lane stack: the lanes of one kind, each parameter one tensor ``(G, ...)``.

A stack is how every lane runs: an MLCN's lanes are stacks by kind, and a single
lane is a stack of one.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from nasmlcn.models._fused import Params, Patches, fused_outputs, member_outputs
from nasmlcn.models._lane import LaneKind
from nasmlcn.specs import lane_fuses


class LaneStack(nn.Module):
    """``G`` lanes of one kind whose parameters are stacked along a leading lane
    dimension: one tensor per layer parameter for the whole stack.

    Why: a model of 58 lanes kept as 58 modules made every training step touch 588
    parameter tensors (Adam's step was 27 % of it on an H100) and cat them into the
    fused kernels at every step; stacked, the optimizer updates a few tensors per
    stack and the fused layers read the stacked kernels as views.

    Args:
        kind: The lanes' kind (the layers' geometry and the parameter names).
        tensors: Each parameter of the kind stacked over the lanes ``(G, ...)``, in
            the order of ``kind.names``.
    """

    def __init__(self, kind: LaneKind, tensors: Sequence[torch.Tensor]) -> None:
        super().__init__()
        self.kind = kind  # not a module: its meta layers are never moved or saved
        self.names = kind.names
        if len(tensors) != len(self.names):
            raise ValueError(
                f"{len(tensors)} tensors for the {len(self.names)} parameters of a lane"
            )
        self.params = nn.ParameterList([nn.Parameter(t) for t in tensors])

    def __len__(self) -> int:
        return int(self.params[0].shape[0])

    def named(self) -> Params:
        """The stacked parameters by the lane's own names."""
        return dict(zip(self.names, self.params, strict=True))

    def fuses(self, device_type: str, batch_size: int) -> bool:
        """Whether the stack's kind runs as one computation on such a device
        (:func:`nasmlcn.specs.lane_fuses`)."""
        return lane_fuses(self.kind.spec, self.kind.input_shape, device_type, batch_size)

    def forward(self, patches: Patches, fused: bool = True) -> torch.Tensor:
        """``(G, B, K)``: every lane's output, fused or lane by lane."""
        run = fused_outputs if fused else member_outputs
        return run(self.kind, self.named(), patches)
