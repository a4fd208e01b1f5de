"""Capsule primitives against plain reference implementations."""

from __future__ import annotations

import math

import pytest
import torch

from nasmlcn.models import (
    dynamic_routing,
    margin_loss,
    primary_capsules,
    reconstruction_loss,
    squash,
    votes,
)


def test_squash_keeps_direction_and_maps_length() -> None:
    s = torch.tensor([[3.0, 4.0], [0.0, 0.0], [0.3, 0.4]])
    v = squash(s)
    assert torch.allclose(v[0], torch.tensor([0.6, 0.8]) * 25 / 26, atol=1e-6)
    assert torch.equal(v[1], torch.zeros(2))
    assert torch.allclose(v[2].norm(), torch.tensor(0.25 / 1.25), atol=1e-6)
    big = squash(torch.randn(100, 16) * 100)
    assert (big.norm(dim=-1) < 1).all()


def _reference_routing(u_hat: torch.Tensor, iterations: int) -> torch.Tensor:
    """Sabour et al. Algorithm 1, written with plain loops over every index."""
    n, b, k, d = u_hat.shape
    out = torch.zeros(b, k, d, dtype=u_hat.dtype)
    for bi in range(b):
        logits = [[0.0] * k for _ in range(n)]
        v = None
        for _ in range(iterations):
            coupling = []
            for i in range(n):
                m = max(logits[i])
                exps = [math.exp(x - m) for x in logits[i]]
                total = sum(exps)
                coupling.append([e / total for e in exps])
            v = []
            for j in range(k):
                s = sum(
                    (coupling[i][j] * u_hat[i, bi, j] for i in range(n)),
                    torch.zeros(d, dtype=u_hat.dtype),
                )
                norm2 = float((s * s).sum())
                v.append(s * (norm2 / (1 + norm2) / math.sqrt(norm2 + 1e-8)))
            for i in range(n):
                for j in range(k):
                    logits[i][j] += float((u_hat[i, bi, j] * v[j]).sum())
        assert v is not None
        out[bi] = torch.stack(v)
    return out


@pytest.mark.parametrize(("n", "b", "k", "d"), [(6, 3, 4, 5), (5, 2, 10, 1), (7, 2, 1, 10)])
@pytest.mark.parametrize("iterations", [1, 2, 3])
def test_routing_matches_reference_loop(n: int, b: int, k: int, d: int, iterations: int) -> None:
    torch.manual_seed(n * 100 + k * 10 + iterations)
    u_hat = torch.randn(n, b, k, d, dtype=torch.float64)
    fast = dynamic_routing(u_hat, iterations)
    assert fast.shape == (b, k, d)
    assert torch.allclose(fast, _reference_routing(u_hat, iterations), atol=1e-10)


def test_routing_really_routes_when_several_outputs() -> None:
    torch.manual_seed(0)
    u_hat = torch.randn(20, 2, 5, 3)
    assert not torch.allclose(dynamic_routing(u_hat, 1), dynamic_routing(u_hat, 3))


def test_votes_match_einsum() -> None:
    torch.manual_seed(1)
    u = torch.randn(9, 4, 8)
    w = torch.randn(9, 8, 3 * 5)
    expected = torch.einsum("nbd,ndo->nbo", u, w).view(9, 4, 3, 5)
    assert torch.allclose(votes(u, w, 3), expected, atol=1e-5)


def test_primary_capsules_group_consecutive_channels() -> None:
    torch.manual_seed(2)
    features = torch.randn(2, 16, 3, 4)  # 2 capsule channels of 8-D on a 3x4 grid
    caps = primary_capsules(features, 8)
    assert caps.shape == (2 * 3 * 4, 2, 8)
    # capsule (y, x, group g) is channels g*8..g*8+7 at (y, x), squashed
    index = (2 * 4 + 3) * 2 + 1  # y=2, x=3, g=1
    assert torch.allclose(caps[index, 1], squash(features[1, 8:16, 2, 3]), atol=1e-6)
    cl = features.contiguous(memory_format=torch.channels_last)
    assert torch.allclose(primary_capsules(cl, 8), caps)


def test_margin_loss_hand_computed() -> None:
    lengths = torch.tensor([[0.95, 0.05, 0.5], [0.5, 0.2, 0.0]])
    target = torch.tensor([0, 2])
    # sample 1: present 0.95 >= 0.9 -> 0; absent 0.05 <= 0.1 -> 0; absent 0.5 -> 0.5*0.4^2 = 0.08
    # sample 2: absent 0.5 -> 0.08; absent 0.2 -> 0.5*0.1^2 = 0.005; present 0.0 -> 0.81
    expected = (0.08 + (0.08 + 0.005 + 0.81)) / 2
    assert margin_loss(lengths, target).item() == pytest.approx(expected, abs=1e-6)
    perfect = torch.tensor([[0.9, 0.1, 0.1]])
    assert margin_loss(perfect, torch.tensor([0])).item() == 0.0


def test_reconstruction_loss_is_sum_of_squares_mean_over_batch() -> None:
    recon = torch.zeros(2, 4)
    images = torch.ones(2, 1, 2, 2)
    images[1] = 0.5
    assert reconstruction_loss(recon, images).item() == pytest.approx((4 * 1.0 + 4 * 0.25) / 2)


def test_no_intermediate_larger_than_votes() -> None:
    """CapsNet's votes are B x 1152 x 10 x 16; nothing larger is built, forward or backward."""
    from torch.utils._python_dispatch import TorchDispatchMode

    from nasmlcn.models import build_model, capsule_loss
    from nasmlcn.specs import create_arch

    torch.manual_seed(0)
    model = build_model(create_arch("capsnet"))
    weight_sizes = {p.numel() for p in model.parameters()}  # weights, their views and grads

    class MaxNumel(TorchDispatchMode):
        """Largest tensor any op returns, weights and weight gradients aside."""

        def __init__(self) -> None:
            super().__init__()
            self.largest = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
            out = func(*args, **(kwargs or {}))
            for t in out if isinstance(out, (tuple, list)) else [out]:
                if isinstance(t, torch.Tensor) and t.numel() not in weight_sizes:
                    self.largest = max(self.largest, t.numel())
            return out

    b = 3
    x, y = torch.rand(b, 1, 28, 28), torch.tensor([0, 1, 2])
    with MaxNumel() as mode:
        out = model(x, y)
        capsule_loss(out.lengths, out.reconstruction, x, y).total.backward()
    votes_numel = b * 1152 * 10 * 16
    assert votes_numel // 2 < mode.largest <= votes_numel
