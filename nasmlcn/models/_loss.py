"""Margin loss and reconstruction loss (Sabour et al. 2017)."""

from __future__ import annotations

from typing import NamedTuple

import torch
import torch.nn.functional as F

M_POS = 0.9
M_NEG = 0.1
LAMBDA = 0.5
RECONSTRUCTION_WEIGHT = 0.0005


def margin_loss(
    lengths: torch.Tensor,
    target: torch.Tensor,
    m_pos: float = M_POS,
    m_neg: float = M_NEG,
    lam: float = LAMBDA,
) -> torch.Tensor:
    """``sum_k T_k max(0, m+ - |v_k|)^2 + lam (1 - T_k) max(0, |v_k| - m-)^2``, batch mean.

    Args:
        lengths: Class capsule lengths ``(B, K)``.
        target: Class indices ``(B,)``.
    """
    t = F.one_hot(target, lengths.shape[1]).to(lengths.dtype)  # (B, K)
    present = t * F.relu(m_pos - lengths).pow(2)
    absent = lam * (1.0 - t) * F.relu(lengths - m_neg).pow(2)
    return (present + absent).sum(dim=1).mean()


def reconstruction_loss(reconstruction: torch.Tensor, images: torch.Tensor) -> torch.Tensor:
    """Sum of squared pixel errors per image, batch mean (weight it by 0.0005)."""
    return (reconstruction - images.flatten(1)).pow(2).sum(dim=1).mean()


class CapsuleLoss(NamedTuple):
    total: torch.Tensor
    margin: torch.Tensor
    reconstruction: torch.Tensor


def capsule_loss(
    lengths: torch.Tensor,
    reconstruction: torch.Tensor | None,
    images: torch.Tensor,
    target: torch.Tensor,
    reconstruction_weight: float = RECONSTRUCTION_WEIGHT,
) -> CapsuleLoss:
    """Margin loss plus the weighted reconstruction loss (zero without a decoder)."""
    margin = margin_loss(lengths, target)
    if reconstruction is None:
        recon = margin.new_zeros(())
    else:
        recon = reconstruction_loss(reconstruction, images)
    return CapsuleLoss(margin + reconstruction_weight * recon, margin, recon)
