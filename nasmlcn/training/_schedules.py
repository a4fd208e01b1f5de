"""Learning-rate policies (FasTrCaps, sec. III and IV-E), each a torch scheduler factory.

A policy returns the scheduler and whether it steps once per batch or per epoch.
It is laid out over the run's :class:`StepPlan` (the batch size and the number of
steps of every epoch), since a batch policy (:mod:`nasmlcn.training._batch_policy`)
may change the batch size, and so the steps, from epoch to epoch.

FasTrCaps's settings (sec. IV-A, for lr 0.001): one-cycle from 0.0001 up to 0.001
and back, annealed to 1e-5 in the last 10 % of the steps (Alg. 1); warm restarts
cosine from 0.001 to 0.0001 with a cycle of one epoch (Alg. 2); WarmAdaBatch the
same cosine with one cycle per batch-size phase (Alg. 5). Here every bound is
relative to the configured lr (``lr/10``, ``lr/100``). Its exponential decay
(x0.96 every 2,000 steps) is the thesis's x``lr_decay`` per epoch here.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from nasmlcn.registry import Registry

if TYPE_CHECKING:
    import torch

WARM_RESTART_FLOOR = 0.1
"""Warm restarts anneal from lr to lr x this (FasTrCaps: 0.001 to 0.0001)."""


@dataclass(frozen=True)
class StepPlan:
    """The run's epochs as the trainer steps them.

    Attributes:
        batch_sizes: The batch size of every epoch (epoch 1 first).
        steps: The optimizer steps (batches) of every epoch.
    """

    batch_sizes: tuple[int, ...]
    steps: tuple[int, ...]

    def __post_init__(self) -> None:
        if len(self.batch_sizes) != len(self.steps) or not self.steps:
            raise ValueError(
                f"a StepPlan needs one batch size and step count per epoch, got "
                f"{self.batch_sizes!r} and {self.steps!r}"
            )
        if min(self.steps) < 1 or min(self.batch_sizes) < 1:
            raise ValueError(f"every epoch needs a batch size and steps >= 1, got {self!r}")

    @classmethod
    def of(cls, images: int, batch_sizes: Sequence[int]) -> StepPlan:
        """The plan of epochs over ``images`` training images at ``batch_sizes``."""
        sizes = tuple(int(b) for b in batch_sizes)
        return cls(sizes, tuple(max(1, math.ceil(images / b)) for b in sizes))

    @classmethod
    def uniform(cls, epochs: int, steps: int, batch_size: int = 1) -> StepPlan:
        """``epochs`` epochs of ``steps`` batches each."""
        return cls((batch_size,) * epochs, (steps,) * epochs)

    @property
    def epochs(self) -> int:
        return len(self.steps)

    @property
    def total_steps(self) -> int:
        return sum(self.steps)

    def cycles(self, per_epoch: bool) -> tuple[int, ...]:
        """Lengths in steps of the restart cycles: one per epoch, or one per phase
        (a run of consecutive epochs with one batch size)."""
        if per_epoch:
            return self.steps
        out: list[int] = []
        for i, steps in enumerate(self.steps):
            if i and self.batch_sizes[i] == self.batch_sizes[i - 1]:
                out[-1] += steps
            else:
                out.append(steps)
        return tuple(out)


@dataclass(frozen=True)
class LRPolicy:
    """``make(optimizer, config, plan)`` builds the scheduler for a :class:`StepPlan`.

    ``planned``: the schedule is laid out over the whole run (its length is the
    plan's total steps), so a checkpoint can only be resumed with the epochs and
    batch size it was started with.
    """

    name: str
    per_batch: bool
    make: Callable[[torch.optim.Optimizer, Any, StepPlan], Any]
    description: str
    planned: bool = False


LR_POLICIES: Registry[LRPolicy] = Registry("learning-rate policy")


def _exponential(opt: torch.optim.Optimizer, config: Any, plan: StepPlan) -> Any:
    from torch.optim.lr_scheduler import ExponentialLR

    return ExponentialLR(opt, gamma=config.lr_decay)


def _fixed(opt: torch.optim.Optimizer, config: Any, plan: StepPlan) -> Any:
    from torch.optim.lr_scheduler import ConstantLR

    return ConstantLR(opt, factor=1.0, total_iters=0)


def _one_cycle(opt: torch.optim.Optimizer, config: Any, plan: StepPlan) -> Any:
    # FasTrCaps: from lr/10 up to lr and back, then annealed to lr/100 in the
    # last 10 % of the steps.
    from torch.optim.lr_scheduler import OneCycleLR

    return OneCycleLR(
        opt,
        max_lr=config.lr,
        total_steps=max(2, plan.total_steps),
        pct_start=0.45,
        anneal_strategy="linear",
        div_factor=10.0,
        final_div_factor=10.0,
        three_phase=True,
    )


def _cosine_cycles(cycles: Sequence[int], floor: float) -> Callable[[int], float]:
    """The lr factor at a global step: cosine from 1 down to ``floor`` over each
    cycle, restarting at 1 when the next one begins (SGDR; FasTrCaps Alg. 2).

    A plain function (not an object), so a scheduler's ``state_dict`` leaves it
    out: a resumed run follows the cycles of its own plan (a ``warm-restarts`` run
    may be extended by more epochs), not those saved with the checkpoint.
    """
    lengths = [int(c) for c in cycles]

    def factor(step: int) -> float:
        t = step
        for length in lengths:
            if t < length:
                return floor + (1.0 - floor) * 0.5 * (1.0 + math.cos(math.pi * t / length))
            t -= length
        return floor  # past the plan (the scheduler is stepped once after the last batch)

    return factor


def _cosine(opt: torch.optim.Optimizer, plan: StepPlan, per_epoch: bool) -> Any:
    from torch.optim.lr_scheduler import LambdaLR

    return LambdaLR(opt, _cosine_cycles(plan.cycles(per_epoch), WARM_RESTART_FLOOR))


def _warm_restarts(opt: torch.optim.Optimizer, config: Any, plan: StepPlan) -> Any:
    return _cosine(opt, plan, per_epoch=True)


def _phase_restarts(opt: torch.optim.Optimizer, config: Any, plan: StepPlan) -> Any:
    return _cosine(opt, plan, per_epoch=False)


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
    LRPolicy(
        "warm-restarts",
        True,
        _warm_restarts,
        "cosine to lr/10, restart every epoch (SGDR; FasTrCaps)",
    ),
)
LR_POLICIES.register(
    "phase-restarts",
    LRPolicy(
        "phase-restarts",
        True,
        _phase_restarts,
        "cosine to lr/10, restart where the batch size changes (WarmAdaBatch, FasTrCaps)",
        planned=True,
    ),
)
