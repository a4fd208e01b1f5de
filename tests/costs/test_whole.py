"""The whole-model cost model: its features follow the model as it runs (the FLOPs
torch counts, the groups the torch model fuses), its fit recovers a known model,
and the random calibration models span the models a search draws (1-64 lanes, mixed)."""

from __future__ import annotations

import random

import pytest

from nasmlcn.costs import (
    MODEL_TIME_FEATURES,
    CostContext,
    calibration_models,
    fit_model_time,
    model_time_features,
    whole_model_features,
)
from nasmlcn.costs._features import dot
from nasmlcn.specs import MLCNSpec, execution_groups


def _feature(row: list[float], name: str) -> float:
    return row[MODEL_TIME_FEATURES.index(name)]


@pytest.mark.parametrize("lanes", ["mlcn2:1x1", "3*mlcn2:1x2,mlcn1:2x1", "2*mlcn1:1x3,4*mlcn2:2x1"])
def test_train_flops_are_what_torch_counts_for_a_whole_training_step(lanes: str) -> None:
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    from nasmlcn.models import build_model, capsule_loss

    spec = MLCNSpec.from_lanes(lanes)
    ctx = CostContext.of(spec, batch_size=4)
    model = build_model(spec)
    model.fuse_lanes = False  # torch's counter miscounts grouped convolutions' backward
    x, y = torch.rand(4, 1, 28, 28), torch.randint(0, 10, (4,))
    with FlopCounterMode(display=False) as counter:
        out = model(x, y)
        capsule_loss(out.lengths, out.reconstruction, x, y).total.backward()
    counted = counter.get_total_flops()
    predicted = _feature(whole_model_features(spec.lanes, ctx, "cpu"), "train_flops")
    assert predicted == pytest.approx(counted, rel=0.01)


def test_groups_follow_fusion_and_the_step_term_follows_the_head() -> None:
    spec = MLCNSpec.from_lanes("6*mlcn2:1x2,3*mlcn1:2x1")
    ctx = CostContext.of(spec)
    cpu = whole_model_features(spec.lanes, ctx, "cpu")
    cuda = whole_model_features(spec.lanes, ctx, "cuda")
    loop = whole_model_features(spec.lanes, ctx, "cpu", fuse=False)
    # on a CPU the 32-channel mlcn1 lanes run alone: 1 + 3 groups; on a GPU 2; unfused 9
    assert [_feature(r, "groups") for r in (cpu, cuda, loop)] == [4, 2, 9]
    assert _feature(cpu, "groups") == len(execution_groups(spec.lanes, (1, 28, 28), "cpu"))
    # mlcn2:1x2 runs 3 layers (1x1 folded into the 9x9, a 3x3, the 9x9/2), mlcn1:2x1 2
    assert [_feature(r, "group_layers") for r in (cpu, cuda, loop)] == [9, 5, 24]
    # arithmetic does not depend on how the lanes run
    assert _feature(cpu, "train_flops") == _feature(loop, "train_flops")
    assert _feature(cpu, "step") == 1.0
    share = model_time_features(spec.lanes[:6], ctx, "cpu")  # a device without the head
    assert _feature(share, "step") == 0.0
    assert _feature(share, "train_flops") < _feature(cpu, "train_flops")
    # only the mlcn2:1x2 lanes (at most 16 channels) count as narrow
    assert 0 < _feature(cpu, "narrow_flops") < _feature(cpu, "train_flops")


def test_the_fit_recovers_a_known_linear_model() -> None:
    rng = random.Random(0)
    truth = [3e-12, 1e-12, 2e-9, 4e-9, 1e-7, 2e-4, 5e-4, 0.02]
    ctx = CostContext()
    rows = [whole_model_features(lanes, ctx, "cpu") for lanes in calibration_models(30, seed=1)]
    seconds = [dot(truth, row) * rng.uniform(0.999, 1.001) for row in rows]
    coefficients = fit_model_time(rows, seconds)
    assert len(coefficients) == len(MODEL_TIME_FEATURES)
    assert all(c >= 0 for c in coefficients)
    for row, want in zip(rows, seconds, strict=True):
        assert dot(coefficients, row) == pytest.approx(want, rel=0.01)
    with pytest.raises(ValueError, match="at least 2"):
        fit_model_time(rows[:1], seconds[:1])


def test_calibration_models_span_1_to_64_lanes_of_mixed_kinds() -> None:
    models = calibration_models(40, seed=0)
    assert models == calibration_models(40, seed=0)
    assert models != calibration_models(40, seed=1)
    counts = [len(m) for m in models]
    assert min(counts) >= 1
    assert max(counts) <= 64
    assert min(counts) <= 3  # few-lane and many-lane models both
    assert max(counts) >= 32
    assert any(len(set(m)) > 1 for m in models)  # mixed kinds
    for m in models:
        if len(m) > 16:
            assert all(lane.width <= 2 for lane in m)  # many-lane models are narrow
    assert max(len(m) for m in calibration_models(20, seed=0, max_lanes=4)) <= 4
    with pytest.raises(ValueError):
        calibration_models(0)


def test_a_measured_whole_model_step() -> None:
    from nasmlcn.measure import time_model_step
    from nasmlcn.specs import parse_lanes

    ctx = CostContext(batch_size=8)
    small = time_model_step(parse_lanes("mlcn2:1x1"), ctx, steps=2)
    large = time_model_step(parse_lanes("8*mlcn1:2x2"), ctx, steps=2)
    assert 0 < small < large  # 8 lanes of ~30x the arithmetic
