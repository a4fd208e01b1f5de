"""Learning-rate policies (FasTrCaps, sec. III), each a torch scheduler factory.

A policy returns the scheduler and whether it steps once per batch or per epoch.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from nasmlcn.registry import Registry

if TYPE_CHECKING:
    import torch


@dataclass(frozen=True)
class LRPolicy:
    """``make(optimizer, config, steps_per_epoch)`` builds the scheduler.

    ``planned``: the schedule is laid out over the whole run (its length is
    ``epochs x steps per epoch``), so a checkpoint can only be resumed with the
    epochs and batch size it was started with.
    """

    name: str
    per_batch: bool
    make: Callable[[torch.optim.Optimizer, Any, int], Any]
    description: str
    planned: bool = False


LR_POLICIES: Registry[LRPolicy] = Registry("learning-rate policy")


def _exponential(opt: torch.optim.Optimizer, config: Any, steps: int) -> Any:
    from torch.optim.lr_scheduler import ExponentialLR

    return ExponentialLR(opt, gamma=config.lr_decay)


def _fixed(opt: torch.optim.Optimizer, config: Any, steps: int) -> Any:
    from torch.optim.lr_scheduler import ConstantLR

    return ConstantLR(opt, factor=1.0, total_iters=0)


def _one_cycle(opt: torch.optim.Optimizer, config: Any, steps: int) -> Any:
    # FasTrCaps: from lr/10 up to lr and back, then annealed to lr/100 in the
    # last 10 % of the steps.
    from torch.optim.lr_scheduler import OneCycleLR

    return OneCycleLR(
        opt,
        max_lr=config.lr,
        total_steps=max(2, config.epochs * steps),
        pct_start=0.45,
        anneal_strategy="linear",
        div_factor=10.0,
        final_div_factor=10.0,
        three_phase=True,
    )


def _warm_restarts(opt: torch.optim.Optimizer, config: Any, steps: int) -> Any:
    from torch.optim.lr_scheduler import CosineAnnealingWarmRestarts

    return CosineAnnealingWarmRestarts(opt, T_0=max(1, steps), eta_min=config.lr / 100)


LR_POLICIES.register(
    "exponential", LRPolicy("exponential", False, _exponential, "lr * decay^epoch (thesis: 0.9)")
)
LR_POLICIES.register("fixed", LRPolicy("fixed", False, _fixed, "constant lr"))
LR_POLICIES.register(
    "one-cycle",
    LRPolicy(
        "one-cycle", True, _one_cycle, "up to lr and back, then anneal (FasTrCaps)", planned=True
    ),
)
LR_POLICIES.register(
    "warm-restarts",
    LRPolicy("warm-restarts", True, _warm_restarts, "cosine to lr/100, restart every epoch (SGDR)"),
)
