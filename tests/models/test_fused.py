"""Fused lane groups compute the same model as the per-lane loop: outputs and
gradients agree in float64 on random heterogeneous models, both routings, with and
without weight sharing, on grey and colour images."""

from __future__ import annotations

import random
from typing import cast

import pytest
import torch

from nasmlcn.models import build_model
from nasmlcn.models._fused import fused_lane_outputs, lane_groups
from nasmlcn.models._lane import Lane
from nasmlcn.specs import LaneSpec, MLCNSpec

KINDS = ("mlcn1", "mlcn2")


def _random_spec(rng: random.Random, **fields: object) -> MLCNSpec:
    kinds = [LaneSpec(rng.choice(KINDS), rng.randint(1, 2), rng.randint(1, 2)) for _ in range(3)]
    lanes = [kinds[0], *(rng.choice(kinds) for _ in range(rng.randint(1, 6)))]
    rng.shuffle(lanes)
    return MLCNSpec((kinds[0], *lanes), **fields)  # type: ignore[arg-type]


def _compare(spec: MLCNSpec, seed: int) -> None:
    torch.manual_seed(seed)
    model = build_model(spec).double()
    x = torch.rand(3, *spec.input_shape, dtype=torch.float64)
    mix = torch.randn(3, spec.num_classes, dtype=torch.float64)

    def run(fused: bool) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
        model.zero_grad()
        lanes = model.lanes
        outs = fused_lane_outputs(lanes, x) if fused else [lane(x) for lane in lanes]
        loss = sum(((out * mix).sum() * (i + 1)) for i, out in enumerate(outs))
        assert isinstance(loss, torch.Tensor)
        loss.backward()
        grads = [p.grad.clone() for p in model.parameters() if p.grad is not None]
        return [o.detach() for o in outs], grads

    loop_out, loop_grads = run(False)
    fused_out, fused_grads = run(True)
    assert len(fused_out) == len(loop_out) == spec.num_lanes
    for a, b in zip(fused_out, loop_out, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-7)
    assert len(fused_grads) == len(loop_grads) > 0
    for a, b in zip(fused_grads, loop_grads, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("routing", ["vector", "classwise"])
def test_fused_groups_equal_the_per_lane_loop(seed: int, routing: str) -> None:
    spec = _random_spec(random.Random(seed), routing=routing, weight_sharing=seed % 2 == 1)
    assert any(len(g) > 1 for g in lane_groups(build_model(spec).lanes))  # something fuses
    _compare(spec, seed)


def test_colour_images_and_a_lone_lane() -> None:
    spec = MLCNSpec.from_lanes("3*mlcn2:1x2,mlcn1:1x1", input_shape=(3, 32, 32))
    _compare(spec, 0)


def test_groups_are_by_kind_in_order_of_first_appearance() -> None:
    model = build_model(MLCNSpec.from_lanes("mlcn2:1x1,mlcn1:1x1,mlcn2:1x1,mlcn1:1x2,mlcn1:1x1"))
    assert lane_groups(model.lanes) == [[0, 2], [1, 4], [3]]


def test_a_fused_group_differs_when_one_lane_s_weights_do() -> None:
    """The check can fail: changing one lane's vote weights changes only its output."""
    torch.manual_seed(0)
    model = build_model(MLCNSpec.from_lanes("3*mlcn2:1x1")).double()
    x = torch.rand(2, 1, 28, 28, dtype=torch.float64)
    before = fused_lane_outputs(model.lanes, x)
    with torch.no_grad():
        cast(Lane, model.lanes[1]).weight.mul_(3.0)
    after = fused_lane_outputs(model.lanes, x)
    torch.testing.assert_close(after[0], before[0])
    torch.testing.assert_close(after[2], before[2])
    assert not torch.allclose(after[1], before[1])
