"""A trained capsule model as deployed to classify: no decoder.

The decoder reconstructs images for the training loss and plays no part in
classifying them, so what is timed and exported is a copy of the model built
without it (same weights otherwise). Its forward pass returns the class
probabilities (the class capsules' lengths) and the class capsules themselves.
"""

from __future__ import annotations

from dataclasses import replace

import torch
from torch import nn

from nasmlcn.specs import ArchSpec

DECODER_PREFIX = "capsule_head.decoder."
"""State-dict keys of the reconstruction decoder (see :class:`~nasmlcn.models.CapsuleHead`)."""


class Classifier(nn.Module):
    """``images (B, C, H, W) -> (probabilities (B, K), class capsules (B, K, D))``.

    For an MLCN, ``D`` is the number of lanes. :meth:`lane_outputs` makes any
    capsule model timeable by :func:`nasmlcn.measure.time_inference`: an MLCN's
    own lanes, or a CapsNet's class capsules cut into their ``D`` dimensions
    (whose stacked norm is again the class probability).
    """

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, images: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        out = self.model(images)
        return out.lengths, out.class_capsules  # (B, K), (B, K, D)

    def lane_outputs(self, images: torch.Tensor) -> list[torch.Tensor]:
        """``D`` tensors ``(B, K)``: dimension ``d`` of every class capsule."""
        lanes = getattr(self.model, "lane_outputs", None)
        if lanes is not None:
            return list(lanes(images))
        return list(self.model(images).class_capsules.unbind(-1))


def classifier(model: nn.Module, arch: ArchSpec) -> Classifier:
    """The decoder-free :class:`Classifier` of ``model`` (built from ``arch``), on
    ``model``'s device, in eval mode."""
    from nasmlcn.models import build_model

    bare = build_model(replace(arch, decoder="none"))
    state = {k: v for k, v in model.state_dict().items() if not k.startswith(DECODER_PREFIX)}
    bare.load_state_dict(state)
    device = next(model.parameters()).device
    return Classifier(bare).to(device).eval()
