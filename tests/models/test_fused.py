"""Lane stacks compute the per-lane model: each lane's outputs and gradients, fused
or lane by lane, agree in float64 with the reference lane module
(``tests/models/reference_lane.py``, loaded with the lane's tensors) on random
heterogeneous models, both routings, with and without weight sharing, on grey and
colour images; a single lane (a stack of one) of every lane type starts from the
reference lane's weights and computes what it computes."""

from __future__ import annotations

import random
from dataclasses import replace
from pathlib import Path
from typing import cast

import pytest
import torch

from nasmlcn.models import (
    MLCN,
    LaneKind,
    LaneSet,
    LaneStack,
    build_model,
    capsule_loss,
    per_lane_tensors,
)
from nasmlcn.specs import (
    CPU_MAX_DEEP_LANE_CHANNELS,
    CPU_MAX_LANE_CHANNELS,
    LANE_TYPES,
    LaneSpec,
    MLCNSpec,
    execution_groups,
    lane_channels,
    lane_fuses,
    parse_lane,
)
from tests.models.reference_lane import Lane

KINDS = ("mlcn1", "mlcn2")


def _random_spec(rng: random.Random, **fields: object) -> MLCNSpec:
    kinds = [LaneSpec(rng.choice(KINDS), rng.randint(1, 2), rng.randint(1, 2)) for _ in range(3)]
    lanes = [kinds[0], *(rng.choice(kinds) for _ in range(rng.randint(1, 6)))]
    rng.shuffle(lanes)
    return MLCNSpec((kinds[0], *lanes), **fields)  # type: ignore[arg-type]


def _oracle_lanes(model: MLCN) -> list[Lane]:
    """Each lane as its own :class:`Lane` module, holding that lane's tensors."""
    spec = model.spec
    state = {k: v.clone() for k, v in model.lanes.state_dict().items()}
    lanes = []
    for i, lane_spec in enumerate(spec.lanes):
        lane = Lane(
            lane_spec,
            spec.input_shape,
            spec.num_classes,
            spec.routing,
            spec.routing_iterations,
            spec.weight_sharing,
        ).double()
        lane.load_state_dict(
            {k[len(f"{i}.") :]: v for k, v in state.items() if k.startswith(f"{i}.")}
        )
        lanes.append(lane)
    return lanes


def _compare(spec: MLCNSpec, seed: int) -> None:
    torch.manual_seed(seed)
    model = build_model(spec).double()
    oracle = _oracle_lanes(model)
    x = torch.rand(3, *spec.input_shape, dtype=torch.float64)
    mix = torch.randn(3, spec.num_classes, dtype=torch.float64)

    def loss_of(outs: list[torch.Tensor]) -> torch.Tensor:
        loss = sum(((out * mix).sum() * (i + 1)) for i, out in enumerate(outs))
        assert isinstance(loss, torch.Tensor)
        return loss

    want = [lane(x) for lane in oracle]
    loss_of(want).backward()
    want_grads = {
        f"lanes.{i}.{name}": p.grad
        for i, lane in enumerate(oracle)
        for name, p in lane.named_parameters()
    }
    for fused in (True, False):
        model.zero_grad()
        model.fuse_lanes = fused
        outs = model.lane_outputs(x)
        assert len(outs) == spec.num_lanes
        for a, b in zip(outs, want, strict=True):
            torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-7)
        loss_of(outs).backward()
        grads = per_lane_tensors(model, lambda p: p.grad)
        lane_grads = {k: v for k, v in grads.items() if k.startswith("lanes.")}
        assert lane_grads.keys() == want_grads.keys()
        for name, grad in lane_grads.items():
            torch.testing.assert_close(grad, want_grads[name], rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("routing", ["vector", "classwise"])
def test_stacks_equal_the_per_lane_model(seed: int, routing: str) -> None:
    spec = _random_spec(random.Random(seed), routing=routing, weight_sharing=seed % 2 == 1)
    assert any(len(m) > 1 for m in build_model(spec).lanes.members)  # something stacks
    _compare(spec, seed)


@pytest.mark.parametrize("weight_sharing", [False, True])
@pytest.mark.parametrize("routing", ["vector", "classwise"])
@pytest.mark.parametrize("lane_type", LANE_TYPES.names())
def test_a_single_lane_is_a_stack_of_one(
    lane_type: str, routing: str, weight_sharing: bool
) -> None:
    """A lane of every type, alone: built under a seed it holds the reference lane's
    weights (the same draws), and gives its outputs and gradients within 1e-5."""
    spec, shape = LaneSpec(lane_type, 1, 2), (1, 28, 28)
    torch.manual_seed(0)
    ref = Lane(spec, shape, 10, routing, 3, weight_sharing, "glorot").double()
    torch.manual_seed(0)
    one = LaneSet.build([LaneKind(spec, shape, 10, routing, 3, weight_sharing)], "glorot")
    one = one.double()
    assert one.state_dict().keys() == {f"0.{k}" for k in ref.state_dict()}
    for name, tensor in ref.state_dict().items():
        assert torch.equal(one.state_dict()[f"0.{name}"], tensor), name
    x = torch.rand(3, *shape, dtype=torch.float64)
    want, got = ref(x), one(x)[..., 0]  # (B, K)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-7)
    mix = torch.randn_like(want)
    (want * mix).sum().backward()
    (got * mix).sum().backward()
    grads = per_lane_tensors(one, lambda p: p.grad)
    for name, p in ref.named_parameters():
        torch.testing.assert_close(grads[f"0.{name}"], p.grad, rtol=1e-5, atol=1e-7)


def test_colour_images_and_a_lone_lane() -> None:
    spec = MLCNSpec.from_lanes("3*mlcn2:1x2,mlcn1:1x1", input_shape=(3, 32, 32))
    _compare(spec, 0)


def test_reference_lanes_with_a_depthwise_layer() -> None:
    """mlcn2-ref's separable convolution (a depthwise layer without bias) stacks too."""
    _compare(MLCNSpec.from_lanes("2*mlcn2-ref:1x1,mlcn1-ref:1x1"), 0)


def test_stacks_are_by_kind_in_order_of_first_appearance_one_tensor_per_parameter() -> None:
    model = build_model(MLCNSpec.from_lanes("mlcn2:1x1,mlcn1:1x1,mlcn2:1x1,mlcn1:1x2,mlcn1:1x1"))
    assert model.lanes.members == ((0, 2), (1, 4), (3,))
    stack = cast(LaneStack, model.lanes.stacks[0])
    # mlcn2:1x1: vote weights, the folded 1x1 + 9x9 pair (4), the last 9x9 (2)
    assert len(stack.params) == 7
    assert all(p.shape[0] == 2 for p in stack.params)
    head = len(list(model.capsule_head.parameters()))
    assert len(list(model.parameters())) == 7 + 5 + 7 + head  # mlcn1:1x2 adds a 3x3 layer
    # what a per-lane model had, lane by lane, in the state dict
    assert len([k for k in model.state_dict() if k.startswith("lanes.")]) == 7 * 2 + 5 * 2 + 7


def test_a_stack_differs_when_one_lane_s_weights_do() -> None:
    """The check can fail: changing one lane's vote weights changes only its output."""
    torch.manual_seed(0)
    model = build_model(MLCNSpec.from_lanes("3*mlcn2:1x1")).double()
    x = torch.rand(2, 1, 28, 28, dtype=torch.float64)
    before = model.lane_outputs(x)
    with torch.no_grad():
        cast(LaneStack, model.lanes.stacks[0]).named()["weight"][1].mul_(3.0)
    after = model.lane_outputs(x)
    torch.testing.assert_close(after[0], before[0])
    torch.testing.assert_close(after[2], before[2])
    assert not torch.allclose(after[1], before[1])


def test_a_checkpoint_written_lane_by_lane_loads(tmp_path: Path) -> None:
    """One checkpoint format: the lanes' own tensors under the lanes' own names, as a
    model of lane modules wrote them (the oracle's), load into the stacks."""
    spec = MLCNSpec.from_lanes("2*mlcn2:1x1,mlcn1:1x1")
    torch.manual_seed(0)
    model = build_model(spec).double()
    oracle = _oracle_lanes(model)
    state = {
        f"lanes.{i}.{k}": v for i, lane in enumerate(oracle) for k, v in lane.state_dict().items()
    }
    state.update({f"capsule_head.{k}": v for k, v in model.capsule_head.state_dict().items()})
    torch.save(state, tmp_path / "old.pt")
    torch.manual_seed(1)
    other = build_model(spec).double()
    assert not torch.equal(
        other.lanes.groups()[0][0].params[0], model.lanes.groups()[0][0].params[0]
    )
    other.load_state_dict(torch.load(tmp_path / "old.pt"))
    x = torch.rand(2, 1, 28, 28, dtype=torch.float64)
    torch.testing.assert_close(other(x).lengths, model(x).lengths)
    with pytest.raises(RuntimeError, match=r"lanes\.2\.weight"):
        other.load_state_dict({k: v for k, v in state.items() if k != "lanes.2.weight"})


def test_lane_dropout_and_the_whole_model_fused_or_not() -> None:
    """Through the whole model in training mode (lane dropout active, the same
    masks), fused and per-lane give the same outputs, loss and gradients."""
    spec = MLCNSpec.from_lanes("3*mlcn2:1x1,2*mlcn1:1x2,mlcn2:1x1", lane_dropout=0.3)
    torch.manual_seed(0)
    model = build_model(spec).double().train()
    x = torch.rand(4, 1, 28, 28, dtype=torch.float64)
    y = torch.tensor([0, 3, 5, 9])

    def run(fused: bool) -> tuple[torch.Tensor, list[torch.Tensor]]:
        model.fuse_lanes = fused
        model.zero_grad()
        torch.manual_seed(7)  # the same dropout masks
        out = model(x, y)
        capsule_loss(out.lengths, out.reconstruction, x, y).total.backward()
        return out.lengths.detach(), [
            p.grad.clone() for p in model.parameters() if p.grad is not None
        ]

    loop_lengths, loop_grads = run(False)
    fused_lengths, fused_grads = run(True)
    torch.testing.assert_close(fused_lengths, loop_lengths, rtol=1e-5, atol=1e-7)
    assert len(fused_grads) == len(loop_grads) == len(list(model.parameters()))
    for a, b in zip(fused_grads, loop_grads, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-7)


def test_fusion_is_on_by_default_and_on_a_cpu_only_narrow_kinds_fuse(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    model = build_model(MLCNSpec.from_lanes("4*mlcn2:1x1,3*mlcn1:2x1,2*mlcn2:2x1"))
    assert model.fuse_lanes
    assert (CPU_MAX_LANE_CHANNELS, CPU_MAX_DEEP_LANE_CHANNELS) == (16, 8)
    # on a CPU: 8 channels at any depth, 16 without 3x3 layers; on a GPU every kind
    fusing = ["mlcn2:1x1", "mlcn2:1x4", "mlcn2:2x1", "mlcn1:1x1"]
    alone = ["mlcn2:2x2", "mlcn1:1x2", "mlcn1:2x1", "mlcn2:3x1"]
    shape = (1, 28, 28)
    assert all(lane_fuses(parse_lane(k), shape, "cpu") for k in fusing)
    assert not any(lane_fuses(parse_lane(k), shape, "cpu") for k in alone)
    assert all(lane_fuses(parse_lane(k), shape, "cuda") for k in fusing + alone)
    # at batches of a few images (inference) every kind fuses on a CPU too
    assert all(lane_fuses(parse_lane(k), shape, "cpu", 1) for k in alone)
    assert not any(lane_fuses(parse_lane(k), shape, "cpu", 5) for k in alone)
    channels = [lane_channels(lane, model.spec.input_shape) for lane in model.spec.lanes]
    assert channels == [8] * 4 + [32] * 3 + [16] * 2
    fused = _fused_stacks(monkeypatch)
    model(torch.rand(8, 1, 28, 28))
    assert fused == [4, 2]  # at batch 8 mlcn1 (32 channels) runs lane by lane on a CPU
    fused.clear()
    model(torch.rand(2, 1, 28, 28))
    assert fused == [4, 3, 2]  # at batch 2 every kind fuses
    # the pure rule the cost model follows says the same
    groups = execution_groups(model.spec.lanes, model.spec.input_shape, "cpu")
    assert groups == [[0, 1, 2, 3], [4], [5], [6], [7, 8]]
    assert len(execution_groups(model.spec.lanes, (1, 28, 28), "cuda")) == 3
    assert len(execution_groups(model.spec.lanes, (1, 28, 28), "cpu", fuse=False)) == 9
    assert len(execution_groups(model.spec.lanes, (1, 28, 28), "cpu", batch_size=1)) == 3
    fused.clear()
    model.lanes.fuse_as = "cuda"  # a GPU's rule on a CPU: every kind
    model(torch.rand(8, 1, 28, 28))
    assert fused == [4, 3, 2]
    model.lanes.fuse_as = None
    model.fuse_lanes = False
    fused.clear()
    model(torch.rand(2, 1, 28, 28))
    assert fused == []


def test_a_per_lane_checkpoint_resumes_fused_and_fused_weights_load_per_lane(
    tmp_path: Path,
) -> None:
    """One checkpoint format: a run trained lane by lane (as every checkpoint before
    fusion was) resumes fused, and lands where an all-per-lane run lands."""
    from nasmlcn.data import load_splits
    from nasmlcn.training import InMemoryJob, RunOptions, TrainConfig, train

    spec = MLCNSpec.from_lanes("3*mlcn2:1x1", decoder="none")
    splits = load_splits("synthetic", train_limit=40, val_limit=20, test_limit=20)
    per_lane = TrainConfig(
        epochs=1, batch_size=20, seed=1, lr_policy="exponential", fuse_lanes=False
    )
    ckpt = tmp_path / "checkpoint.pt"
    untested = RunOptions(checkpoint_path=ckpt, test=False)
    first = train(InMemoryJob(spec, splits, per_lane, untested))
    assert not cast(MLCN, first.model).fuse_lanes
    fused = replace(per_lane, epochs=2, fuse_lanes=True)
    resumed = train(InMemoryJob(spec, splits, fused, RunOptions(checkpoint_path=ckpt, resume=True)))
    assert cast(MLCN, resumed.model).fuse_lanes
    unfused = replace(per_lane, epochs=2)
    reference = train(InMemoryJob(spec, splits, unfused, RunOptions(test=False)))
    assert [e.epoch for e in resumed.history] == [1, 2]
    assert resumed.history[-1].train_loss == pytest.approx(
        reference.history[-1].train_loss, rel=1e-4
    )
    # the fused model's weights in a per-lane model: the same outputs
    other = build_model(spec)
    other.load_state_dict(resumed.model.state_dict())
    other.fuse_lanes = False
    x = torch.rand(3, 1, 28, 28)
    resumed.model.eval()
    other.eval()
    with torch.no_grad():
        torch.testing.assert_close(other(x).lengths, resumed.model(x).lengths, rtol=1e-5, atol=1e-6)


def test_train_no_fuse_lanes_reaches_the_model_and_its_checkpoint(tmp_path: Path) -> None:
    """``nasmlcn train --no-fuse-lanes``: the run trains lane by lane (recorded in the
    checkpoint's training config); without it, fused."""
    from nasmlcn.training import load_checkpoint
    from tests.conftest import run_cli

    common = ["train", "--lanes", "2*mlcn2:1x1", "--dataset", "synthetic", "--epochs", "1"]
    common += ["--train-limit", "40", "--val-limit", "20", "--test-limit", "20"]
    common += ["--batch-size", "20", "--quiet"]
    for flag, fused in (("--no-fuse-lanes", False), ("--fuse-lanes", True)):
        out = tmp_path / flag
        result = run_cli(*common, flag, "--out", str(out))
        assert result.returncode == 0, result.stderr
        assert load_checkpoint(out / "checkpoint.pt")["train_config"]["fuse_lanes"] is fused


@pytest.mark.parametrize("batch", [2, 8])
def test_a_lone_lane_runs_as_its_own_convolution_on_a_cpu(
    monkeypatch: pytest.MonkeyPatch, batch: int
) -> None:
    """A lone lane has nothing to batch: on a CPU its patch product is slower than
    the convolution of the image (and holds the patches); on a GPU it stays fused."""
    model = build_model(MLCNSpec.from_lanes("4*mlcn2:1x1,mlcn2:2x2"))
    fused = _fused_stacks(monkeypatch)
    x = torch.rand(batch, 1, 28, 28)
    out = model(x)
    assert fused == [4]  # the stack of four fuses; the lone mlcn2:2x2 does not
    fused.clear()
    model.lanes.fuse_as = "cuda"
    torch.testing.assert_close(model(x), out, rtol=1e-5, atol=1e-6)  # the same model
    assert fused == [4, 1]


def _fused_stacks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The sizes of the stacks that run fused, appended as the model runs them."""
    fused: list[int] = []
    real = LaneStack.forward

    def spy(stack: LaneStack, patches: object, fuse: bool = True) -> torch.Tensor:
        if fuse:
            fused.append(len(stack))
        return real(stack, patches, fuse)  # type: ignore[arg-type]

    monkeypatch.setattr(LaneStack, "forward", spy)
    return fused


@pytest.mark.parametrize(("width", "depth"), [(1, 1), (4, 1), (3, 2), (2, 3)])
@pytest.mark.parametrize("lane_type", LANE_TYPES.names())
def test_initial_tensors_are_the_conv_layers_own_draws(
    lane_type: str, width: int, depth: int
) -> None:
    """A lane's conv parameters are drawn without building its layers, yet are the
    values (and shapes) ``nn.Conv2d``'s initialisation gives under the same seed."""
    from nasmlcn.models._conv import conv_layers, initial_conv_tensors

    kind = LaneKind(LaneSpec(lane_type, width, depth), (1, 28, 28), 10, "vector", 3)
    convs = kind.layout.convs
    torch.manual_seed(7)
    want = [p.detach() for p in conv_layers(convs).parameters()]
    torch.manual_seed(7)
    got = initial_conv_tensors(kind.convs)  # from the meta device's layers
    after = torch.rand(3)  # as many draws: the vote weights that follow are the same
    assert [t.shape for t in got] == [t.shape for t in want]
    assert all(torch.equal(g, w) for g, w in zip(got, want, strict=True))
    torch.manual_seed(7)
    conv_layers(convs)
    assert torch.equal(after, torch.rand(3))
