"""The differentiable all-gather of lane outputs, and the time spent in it.

Each rank computes its own lanes on the full batch; the head needs every lane. The
forward pass all-gathers the ranks' ``(B, K, M)`` blocks (``M``: the most lanes
any rank owns; ranks with fewer pad with zeros, because gloo and NCCL gather
equal-sized tensors only).

The backward pass is a *slice*, not a reduce-scatter. The head is replicated:
every rank computes the same loss from the same gathered tensor, so every rank
already holds the complete ``dL/d(gathered)`` and rank ``r`` needs only block
``r``. ``torch.distributed.nn.functional.all_gather`` sums the ranks' gradients in
its backward (reduce-scatter, or all-to-all on gloo); with a replicated loss that
would multiply lane gradients by the world size, and it would also cost a second
collective per step. Here the backward sends nothing at all.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist

from nasmlcn.errors import DistributedError


@dataclass
class CommStats:
    """Time a rank spent in collectives (host wall time).

    For the lane all-gather this is blocking time, which includes waiting for the
    slowest rank to reach the gather (load imbalance shows up here). On CUDA with
    NCCL the host call returns before the transfer ends, so these figures are only
    meaningful on CPU (gloo).

    Attributes:
        seconds: Summed wall time.
        calls: Number of collectives.
        bytes: Bytes this rank contributed.
    """

    seconds: float = 0.0
    calls: int = 0
    bytes: int = 0

    def reset(self) -> None:
        self.seconds, self.calls, self.bytes = 0.0, 0, 0


def collective_failed(what: str, err: BaseException, group: Any = None) -> DistributedError:
    """A one-line :class:`DistributedError` for a failed collective on this rank."""
    rank = dist.get_rank(group) if dist.is_initialized() else -1
    return DistributedError(
        f"rank {rank}: {what} failed ({_first_sentence(err)}); a peer rank crashed, "
        "was killed or did not answer within the timeout"
    )


def _first_sentence(err: BaseException) -> str:
    """Gloo's message without its source location and advice: ``[.../pair.cc:561]
    Connection closed by peer [127.0.0.1]:37770. This is typically ...``."""
    text = str(err).strip()
    if not text:
        return type(err).__name__
    text = re.sub(r"^\[[^\]]*\]\s*", "", text.splitlines()[0])
    return re.split(r"\.\s", text, maxsplit=1)[0].rstrip(".")


class _GatherLanes(torch.autograd.Function):
    """``(B, K, M)`` on every rank -> ``(W, B, K, M)``; backward: this rank's block."""

    @staticmethod
    def forward(ctx: Any, local: torch.Tensor, group: Any, stats: CommStats | None) -> torch.Tensor:
        world = dist.get_world_size(group)
        ctx.rank = dist.get_rank(group)
        local = local.contiguous()
        parts = [torch.empty_like(local) for _ in range(world)]
        t0 = time.perf_counter()
        try:
            dist.all_gather(parts, local, group=group)
        except RuntimeError as err:  # dist.DistError and gloo failures are RuntimeErrors
            raise collective_failed("the all-gather of lane outputs", err, group) from err
        if stats is not None:
            stats.seconds += time.perf_counter() - t0
            stats.calls += 1
            stats.bytes += local.numel() * local.element_size()
        return torch.stack(parts)  # (W, B, K, M)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None, None]:
        # grad: (W, B, K, M), identical on every rank (replicated head); see the
        # module docstring for why this is a slice and not a reduce-scatter.
        return grad[ctx.rank], None, None


def gather_lanes(
    local: torch.Tensor, group: Any = None, stats: CommStats | None = None
) -> torch.Tensor:
    """All-gathers every rank's ``(B, K, M)`` lane block into ``(W, B, K, M)``.

    Differentiable; the gradient of rank ``r``'s block is block ``r`` of the
    incoming gradient (correct when every rank computes the same loss from the
    result, as the replicated head does).

    Raises:
        DistributedError: The collective failed (a peer died or timed out).
    """
    out: torch.Tensor = _GatherLanes.apply(local, group, stats)
    return out
