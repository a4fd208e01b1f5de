"""What a training step costs a GPU's host, counted on any machine.

On a GPU a step of small kernels waits on their launches, and every top-level aten
op is at least one launch. So the ops a step dispatches, and the tensors the
optimizer updates, tell on a CPU (and in CI) what a GPU will pay, before any GPU is
lent: lanes are grouped as on a GPU (``LaneSet.fuse_as = "cuda"``: every kind
stacked) and the optimizer is the one a GPU run builds
(:func:`nasmlcn.training.make_optimizer`).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile

from nasmlcn._defaults import LEARNING_RATE
from nasmlcn.models import MLCN, build_model, capsule_loss
from nasmlcn.specs import ArchSpec
from nasmlcn.training import make_optimizer


@dataclass(frozen=True)
class StepOps:
    """One training step's count.

    Attributes:
        ops: Top-level aten ops (those not called by another aten op): forward,
            loss, backward and optimizer step.
        optimizer_tensors: Parameter tensors the optimizer updates.
        top: The most frequent ops, ``(name, count)``, most frequent first.
    """

    ops: int
    optimizer_tensors: int
    top: tuple[tuple[str, int], ...]


def count_step_ops(
    spec: ArchSpec, batch_size: int = 100, device_type: str = "cuda", *, fuse: bool = True
) -> StepOps:
    """Counts a training step of ``spec``'s model (margin + reconstruction loss,
    backward, Adam) at ``batch_size``, grouped and optimized as on ``device_type``
    (``fuse=False``: an MLCN's lanes one by one); the step runs on the CPU, after one
    step of warm-up (Adam's state exists)."""
    torch.manual_seed(0)
    model = build_model(spec)
    if isinstance(model, MLCN):
        model.lanes.fuse_as = device_type
        model.fuse_lanes = fuse
    optimizer = make_optimizer(model.parameters(), LEARNING_RATE, device_type)
    x = torch.rand(batch_size, *spec.input_shape)  # (B, C, H, W)
    y = torch.randint(0, spec.num_classes, (batch_size,))
    _step(model, optimizer, x, y)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        _step(model, optimizer, x, y)
    names = [
        e.name
        for e in prof.events()
        if e.name.startswith("aten::")
        and (e.cpu_parent is None or not e.cpu_parent.name.startswith("aten::"))
    ]
    tensors = sum(len(group["params"]) for group in optimizer.param_groups)
    return StepOps(len(names), tensors, tuple(Counter(names).most_common(8)))


def _step(
    model: nn.Module, optimizer: torch.optim.Optimizer, x: torch.Tensor, y: torch.Tensor
) -> None:
    out = model(x, y)
    loss = capsule_loss(out.lengths, out.reconstruction, x, y).total
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()
