"""Capsule primitives: squash, votes, dynamic routing (Sabour et al. 2017, Alg. 1).

Layout convention: votes are **capsules first**, ``(N, B, K, D)`` = (input capsules,
batch, output capsules, output capsule dim). With the capsule axis leading, votes
come straight out of one batched matmul per input capsule (no permute copy), and
the routing sums over capsules are reductions over the outer axis. No tensor
larger than the votes themselves is ever built (some public implementations build
a ``B x 1152 x 8 x 160`` intermediate; here the largest is ``N x B x K x D``).
"""

from __future__ import annotations

import torch


def squash(s: torch.Tensor, dim: int = -1, eps: float = 1e-8) -> torch.Tensor:
    """Sabour's non-linearity: keeps the direction, maps the length to [0, 1).

    ``squash(s) = |s|^2 / (1 + |s|^2) * s / |s|``; ``eps`` keeps the gradient finite
    at ``s = 0``.
    """
    n2 = (s * s).sum(dim=dim, keepdim=True)
    return s * (n2 / ((1.0 + n2) * torch.sqrt(n2 + eps)))


def primary_capsules(features: torch.Tensor, capsule_dim: int) -> torch.Tensor:
    """Cuts conv features into squashed capsules, capsules first.

    Consecutive channels at one position form a capsule, as in CapsNet; capsules
    are numbered position-major (``n = (y * W + x) * C/d + group``), which is the
    channels-last memory order, so no copy is made and the gradient flows back to
    the convolution in channels-last order too.

    Args:
        features: ``(B, C, H, W)`` with ``C`` a multiple of ``capsule_dim``.

    Returns:
        ``(N, B, capsule_dim)`` with ``N = C / capsule_dim * H * W`` (a transposed
        view of a batch-major tensor).
    """
    b, c, h, w = features.shape
    caps = features.permute(0, 2, 3, 1).reshape(
        b, h * w * (c // capsule_dim), capsule_dim
    )  # (B, N, d)
    return squash(caps).transpose(0, 1)  # (N, B, d)


def votes(u: torch.Tensor, weight: torch.Tensor, out_capsules: int) -> torch.Tensor:
    """Prediction vectors ``u_hat[n, b, k] = W[n]^T u[n, b]``.

    Args:
        u: Primary capsules ``(N, B, d)``.
        weight: One transform per input capsule ``(N, d, K * D)``.
        out_capsules: ``K``; the output capsule dim ``D`` follows from ``weight``.

    Returns:
        ``(N, B, K, D)``.
    """
    n, b, _ = u.shape
    return torch.bmm(u, weight).view(n, b, out_capsules, -1)  # (N, B, K, D)


def shared_transforms(weight: torch.Tensor, positions: int) -> torch.Tensor:
    """Weight sharing (FasTrCaps sec. IV-D, Alg. 4): one transform per capsule
    channel, used by that channel's capsule at every position of the grid.

    Args:
        weight: One transform per capsule channel ``(G, d, K * D)``.
        positions: Positions of the grid (``H * W``).

    Returns:
        One transform per primary capsule ``(N, d, K * D)`` with ``N = positions * G``,
        in :func:`primary_capsules`' position-major order (capsule ``p * G + g`` gets
        ``weight[g]``), for :func:`votes`. A copy of the weights (not of the batch),
        so the votes are computed exactly as without sharing; the gradient of each
        shared transform is the sum over its positions.
    """
    return weight.repeat(positions, 1, 1)  # (N, d, K*D)


def dynamic_routing(u_hat: torch.Tensor, iterations: int) -> torch.Tensor:
    """Routing by agreement, vectorised over capsules and batch.

    Args:
        u_hat: Votes ``(N, B, K, D)``.
        iterations: Routing iterations (>= 1).

    Returns:
        Output capsules ``(B, K, D)``.

    The votes are copied once into ``(B*K, N, D)`` so that both the weighted sum
    ``s_k = sum_n c_nk u_hat_nk`` and the agreement ``u_hat_nk . v_k`` are batched
    matrix products: no temporary as large as the votes is made per iteration
    (2.4x faster than broadcast-multiply-and-sum for CapsNet on a CPU).

    The agreement updates read detached votes, so gradients reach the votes only
    through the final weighted sum (as in the Keras CapsNet that the MLCN reference
    code builds on); the forward values are those of Algorithm 1 exactly. With one
    output capsule (``K == 1``) the softmax is identically 1, every iteration gives
    the same result, and the loop is skipped.
    """
    if iterations < 1:
        raise ValueError(f"iterations must be >= 1, got {iterations}")
    n, b, k, d = u_hat.shape
    if k == 1:
        return squash(u_hat.sum(dim=0))  # (B, 1, D)
    flat = u_hat.permute(1, 2, 0, 3).reshape(b * k, n, d)  # (B*K, N, D)
    detached = flat.detach()
    logits = u_hat.new_zeros(b, k, n)  # (B, K, N)
    for i in range(iterations):
        coupling = torch.softmax(logits, dim=1).view(b * k, 1, n)  # softmax over K
        source = flat if i == iterations - 1 else detached
        v = squash(torch.bmm(coupling, source).view(b, k, d))  # (B, K, D)
        if i < iterations - 1:
            agreement = torch.bmm(detached, v.view(b * k, d, 1))  # (B*K, N, 1)
            logits = logits + agreement.view(b, k, n)
    return v
