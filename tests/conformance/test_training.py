"""Conformance of every learning-rate policy (``nasmlcn.training.LR_POLICIES``),
every batch-size policy (``nasmlcn.training.BATCH_POLICIES``) and every
augmentation (``nasmlcn.training.AUGMENTATIONS``).

LR policies (``nasmlcn/training/_schedules.py`` and the trainer that steps them):
``make(optimizer, config, plan)`` builds a torch scheduler for a ``StepPlan`` (the
batch size and steps of every epoch, which a batch policy may vary), stepped once
per batch (``per_batch``) or per epoch; over the whole run every learning rate is
positive, finite and at most the configured ``lr`` (the policies schedule down
from it, or up to it and back); a scheduler restored from its ``state_dict`` (a
resumed checkpoint) goes on exactly as the uninterrupted one.

Batch policies (``nasmlcn/training/_batch_policy.py``): ``size(epoch, batch_size)``
is a positive integer for every epoch, and the configured batch size where the
policy is ``fixed``; an lr policy a batch policy comes with is registered.

Augmentations (``nasmlcn/training/_augment.py``): ``apply(images, generator)``
keeps the batch's shape, dtype, device and [0, 1] range, draws its randomness
from ``generator`` only (so a seeded generator reproduces it and the global torch
generator is untouched), or is None for no change.
"""

from __future__ import annotations

import math

import pytest
import torch

from nasmlcn.training import (
    AUGMENTATIONS,
    BATCH_POLICIES,
    LR_POLICIES,
    Augmentation,
    BatchPolicy,
    LRPolicy,
    StepPlan,
    TrainConfig,
)

POLICIES = list(LR_POLICIES)
BATCHES = list(BATCH_POLICIES)
AUGMENTS = list(AUGMENTATIONS)
EPOCHS, STEPS = 4, 6
# (epochs, batches per epoch), tiny runs too; and epochs whose batch size changes
# (a batch policy's: 8 steps at batch 1, then 2 at batch 4).
SCHEDULES: list[tuple[int, int] | StepPlan] = [
    (EPOCHS, STEPS),
    (1, 1),
    (2, 3),
    StepPlan.of(8, (1, 1, 4, 4, 8)),
]
LR = 2e-3


def _scheduler(
    name: str, schedule: tuple[int, int] | StepPlan = (EPOCHS, STEPS)
) -> tuple[LRPolicy, torch.optim.Optimizer, object, int]:
    policy = LR_POLICIES.get(name)
    weight = torch.nn.Parameter(torch.zeros(3))
    optimizer = torch.optim.Adam([weight], lr=LR)
    plan = schedule if isinstance(schedule, StepPlan) else StepPlan.uniform(*schedule)
    config = TrainConfig(epochs=plan.epochs, lr=LR, lr_policy=name)
    scheduler = policy.make(optimizer, config, plan)
    steps = plan.total_steps if policy.per_batch else plan.epochs
    return policy, optimizer, scheduler, steps


def _lrs(optimizer: torch.optim.Optimizer, scheduler: object, steps: int) -> list[float]:
    """The learning rate before each step of the run, as the trainer steps it."""
    out = []
    for _ in range(steps):
        out.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        scheduler.step()  # type: ignore[attr-defined]
    return out


@pytest.mark.parametrize("name", POLICIES)
def test_policy_entry(name: str) -> None:
    policy = LR_POLICIES.get(name)
    assert isinstance(policy, LRPolicy)
    assert policy.name == name
    assert policy.description
    assert isinstance(policy.per_batch, bool)
    assert isinstance(policy.planned, bool)
    TrainConfig(lr_policy=name)  # accepted by the training configuration


@pytest.mark.parametrize("schedule", SCHEDULES, ids=str)
@pytest.mark.parametrize("name", POLICIES)
def test_learning_rates_stay_positive_and_at_most_lr(
    name: str, schedule: tuple[int, int] | StepPlan
) -> None:
    _, optimizer, scheduler, steps = _scheduler(name, schedule)
    lrs = _lrs(optimizer, scheduler, steps)
    assert len(lrs) == steps
    for i, lr in enumerate(lrs):
        assert math.isfinite(lr), (i, lr)
        assert 0 < lr <= LR * (1 + 1e-9), (i, lr)


@pytest.mark.parametrize("schedule", [(EPOCHS, STEPS), SCHEDULES[-1]], ids=str)
@pytest.mark.parametrize("name", POLICIES)
def test_a_restored_scheduler_goes_on_as_the_uninterrupted_one(
    name: str, schedule: tuple[int, int] | StepPlan
) -> None:
    _, optimizer, scheduler, steps = _scheduler(name, schedule)
    whole = _lrs(optimizer, scheduler, steps)
    _, first_opt, first, _ = _scheduler(name, schedule)
    cut = steps // 2
    _lrs(first_opt, first, cut)
    _, opt, restored, _ = _scheduler(name, schedule)
    opt.load_state_dict(first_opt.state_dict())
    restored.load_state_dict(first.state_dict())  # type: ignore[attr-defined]
    assert _lrs(opt, restored, steps - cut) == pytest.approx(whole[cut:], rel=1e-12)


@pytest.mark.parametrize("name", BATCHES)
def test_batch_policy_entry(name: str) -> None:
    policy = BATCH_POLICIES.get(name)
    assert isinstance(policy, BatchPolicy)
    assert policy.name == name
    assert policy.description
    TrainConfig(batch_policy=name)  # accepted by the training configuration
    if policy.lr_policy is not None:
        assert policy.lr_policy in LR_POLICIES
    for batch_size in (1, 16, 100):
        sizes = [policy.size(epoch, batch_size) for epoch in range(1, 41)]
        assert all(isinstance(b, int) and b >= 1 for b in sizes), sizes
        if name == "fixed":
            assert sizes == [batch_size] * 40


@pytest.mark.parametrize("channels", [1, 3])
@pytest.mark.parametrize("name", AUGMENTS)
def test_augmentation_keeps_shape_dtype_and_range(name: str, channels: int) -> None:
    augmentation = AUGMENTATIONS.get(name)
    assert isinstance(augmentation, Augmentation)
    assert augmentation.name == name
    assert augmentation.description
    TrainConfig(augment=name)  # accepted by the training configuration
    if augmentation.apply is None:
        return
    images = torch.rand(8, channels, 28, 28, generator=torch.Generator().manual_seed(0))
    out = augmentation.apply(images, torch.Generator().manual_seed(1))
    assert out.shape == images.shape
    assert out.dtype == images.dtype
    assert out.device == images.device
    assert float(out.min()) >= 0.0
    assert float(out.max()) <= 1.0


@pytest.mark.parametrize("name", AUGMENTS)
def test_augmentation_draws_only_from_its_generator(name: str) -> None:
    apply = AUGMENTATIONS.get(name).apply
    if apply is None:
        return
    images = torch.rand(16, 1, 28, 28, generator=torch.Generator().manual_seed(0))
    torch.manual_seed(123)
    first = apply(images.clone(), torch.Generator().manual_seed(7))
    after = torch.rand(4)  # the global generator, had nothing drawn from it
    torch.manual_seed(123)
    assert torch.equal(after, torch.rand(4))
    assert torch.equal(apply(images.clone(), torch.Generator().manual_seed(7)), first)
