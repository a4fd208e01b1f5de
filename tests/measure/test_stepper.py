"""The measured step of one lane: a stack of one, run lane by lane, that starts from
the reference lane's weights, computes its outputs and holds what it holds for
backward (so lane measurements stay comparable with those of the per-lane module)."""

from __future__ import annotations

import pytest
import torch

from nasmlcn.costs import CostContext
from nasmlcn.measure import LaneStepper
from nasmlcn.models import per_lane_tensors
from nasmlcn.specs import parse_lane
from tests.models.reference_lane import Lane


def _saved_bytes(run: object) -> int:
    """Bytes of the distinct storages autograd saves for backward while ``run()``."""
    saved: dict[int, int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        saved[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        run()  # type: ignore[operator]
    return sum(saved.values())


@pytest.mark.parametrize("routing", ["vector", "classwise"])
@pytest.mark.parametrize("text", ["mlcn2:2x2", "mlcn1:1x2", "mlcn2-ref:1x1"])
def test_the_stepped_lane_is_the_reference_lane(text: str, routing: str) -> None:
    lane, ctx = parse_lane(text), CostContext(routing=routing, batch_size=4)
    stepper = LaneStepper(lane, ctx, torch.device("cpu"), seed=3)
    torch.manual_seed(3)
    ref = Lane(lane, ctx.input_shape, ctx.num_classes, routing, ctx.routing_iterations)
    ours = per_lane_tensors(stepper.module)
    assert ours.keys() == {f"0.{name}" for name, _ in ref.named_parameters()}
    for name, p in ref.named_parameters():
        assert torch.equal(ours[f"0.{name}"], p), name
    lanes = stepper.module

    def output() -> torch.Tensor:
        return lanes.class_capsules(lanes.stack_outputs(stepper.x, by_lane=True))[..., 0]

    torch.testing.assert_close(output(), ref(stepper.x), rtol=1e-5, atol=1e-6)
    # the first layer a convolution as the lane's module ran it: no patches kept
    # (within a few bytes: mlcn2-ref saves 64 more)
    assert _saved_bytes(output) == pytest.approx(_saved_bytes(lambda: ref(stepper.x)), rel=1e-3)
    stepper.step()  # and a step runs
    assert all(p.grad is not None for p in stepper.module.parameters())
