"""The MLCN and CapsNet modules built from specs."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from nasmlcn.models import MLCN, build_model, capsule_loss, count_parameters
from nasmlcn.models._conv import FoldedConv2d, PointwiseConv2d
from nasmlcn.specs import ARCHITECTURES, CapsNetSpec, MLCNSpec, create_arch, parse_lane
from tests.models.reference_lane import Lane


def _analytic_lane_params(spec: MLCNSpec) -> int:
    total = 0
    for layout in spec.lane_layouts:
        total += sum(
            c.kernel**2 * (c.in_channels // c.groups) * c.out_channels
            + (c.out_channels if c.bias else 0)
            for c in layout.convs
        )
        total += layout.num_primary * layout.capsule_dim * spec.num_classes
    return total


def _decoder_params(in_features: int, pixels: int) -> int:
    return in_features * 512 + 512 + 512 * 1024 + 1024 + 1024 * pixels + pixels


def test_capsnet_matches_sabour_parameter_count() -> None:
    model = build_model(create_arch("capsnet"))
    assert count_parameters(model) == 8_215_568  # Sabour et al.: 8.2 M with the decoder
    out = model(torch.rand(2, 1, 28, 28))
    assert out.lengths.shape == (2, 10)
    assert out.class_capsules.shape == (2, 10, 16)
    assert out.reconstruction is not None
    assert out.reconstruction.shape == (2, 784)


@pytest.mark.parametrize(
    ("lanes", "input_shape"),
    [
        ("mlcn1:1x1,mlcn2:2x2,mlcn1:1x3", (1, 28, 28)),
        ("mlcn2:1x1,mlcn1:2x2", (3, 32, 32)),
        ("mlcn2-ref:1x1,mlcn1-ref:1x2,mlcn2-72:2x1", (3, 32, 32)),
    ],
)
def test_heterogeneous_lanes_shapes_and_parameters(
    lanes: str, input_shape: tuple[int, int, int]
) -> None:
    spec = MLCNSpec(lanes, input_shape=input_shape)
    model = build_model(spec)
    assert isinstance(model, MLCN)
    x = torch.rand(4, *input_shape)
    lane_outputs = model.lane_outputs(x)
    assert [o.shape for o in lane_outputs] == [(4, 10)] * spec.num_lanes
    out = model(x)
    assert out.class_capsules.shape == (4, 10, spec.num_lanes)
    assert torch.allclose(out.lengths, out.class_capsules.norm(dim=-1))
    assert out.reconstruction is not None
    assert out.reconstruction.shape == (
        4,
        math.prod(input_shape),
    )
    expected = _analytic_lane_params(spec) + _decoder_params(
        10 * spec.num_lanes, math.prod(input_shape)
    )
    assert count_parameters(model) == expected


@pytest.mark.parametrize(
    ("lane", "expected"),
    [
        # 9x9 1->64: 64*81 + 64 = 5,248; 9x9/2 64->64: 64*64*81 + 64 = 331,840;
        # 6*6 positions * 8 capsule channels = 288 capsules * 8-D * 10 classes = 23,040
        ("mlcn1:4x1", 360_128),
        # 1x1 1->16: 16 + 16 = 32; 9x9 16->32: 32*16*81 + 32 = 41,504;
        # 9x9/2 32->32: 32*32*81 + 32 = 82,976; 36 * 4 = 144 capsules * 8 * 10 = 11,520
        ("mlcn2:4x1", 136_032),
        # as mlcn2 but 9x9/2 32->64: 64*32*81 + 64 = 165,952; 288 capsules * 8 * 10 = 23,040
        ("mlcn2-72:4x1", 230_528),
        # 9x9 1->64: 5,248; 6x6/2 64->128: 128*64*36 + 128 = 295,040;
        # 8*8 positions * 8 channels = 512 capsules * 16-D * 10 classes = 81,920
        ("mlcn1-ref:4x1", 382_208),
        # 1x1 1->64: 128; depthwise 6x6, one 1-channel filter per channel, no bias:
        # 64*36 = 2,304; pointwise 64->64: 4,096 + 64 = 4,160 (Keras's SeparableConv2D:
        # 6,464); three 3x3 64->64: 3 * (64*64*9 + 64) = 110,784; 6x6/2 64->128: 295,040;
        # 9*9 positions * 8 channels = 648 capsules * 16-D * 10 classes = 103,680
        ("mlcn2-ref:4x1", 516_096),
    ],
)
def test_one_lane_parameter_counts_by_hand(lane: str, expected: int) -> None:
    module = Lane(parse_lane(lane), (1, 28, 28), 10, "vector", 3)
    assert count_parameters(module) == expected


def test_mlcn2_ref_builds_a_separable_convolution() -> None:
    convs = Lane(parse_lane("mlcn2-ref:4x1"), (1, 28, 28), 10, "vector", 3).convs
    grouped = [m for m in convs if isinstance(m, nn.Conv2d) and m.groups > 1]
    assert len(grouped) == 1
    depthwise = grouped[0]
    assert depthwise.weight.shape == (64, 1, 6, 6)
    assert depthwise.bias is None


@pytest.mark.parametrize(
    "lanes", ["2*mlcn2-ref:1x1", "2*mlcn1-ref:1x2", "mlcn2-72:1x2,mlcn2-ref:1x1"]
)
def test_the_other_lane_types_train(lanes: str) -> None:
    torch.manual_seed(0)
    spec = MLCNSpec(lanes, routing="classwise")
    model = build_model(spec)
    x, y = torch.rand(3, 1, 28, 28), torch.randint(0, 10, (3,))
    out = model(x, y)
    assert out.class_capsules.shape == (3, 10, spec.num_lanes)
    assert torch.isfinite(out.lengths).all()
    capsule_loss(out.lengths, out.reconstruction, x, y).total.backward()
    for name, p in model.named_parameters():
        assert p.grad is not None, name
        assert p.grad.abs().sum() > 0, name


def test_gradients_reach_every_lane() -> None:
    torch.manual_seed(0)
    model = build_model(MLCNSpec("mlcn1:1x1,mlcn2:1x2,mlcn1:2x1", routing="classwise"))
    x, y = torch.rand(6, 1, 28, 28), torch.randint(0, 10, (6,))
    out = model(x, y)
    capsule_loss(out.lengths, out.reconstruction, x, y).total.backward()
    for name, p in model.named_parameters():
        assert p.grad is not None, name
        assert p.grad.abs().sum() > 0, name


def test_routing_variants_differ_but_share_parameters() -> None:
    torch.manual_seed(0)
    vector = build_model(MLCNSpec("2*mlcn1:1x1", routing="vector"))
    classwise = build_model(MLCNSpec("2*mlcn1:1x1", routing="classwise"))
    classwise.load_state_dict(vector.state_dict())
    x = torch.rand(3, 1, 28, 28)
    a, b = vector(x).lengths, classwise(x).lengths
    assert a.shape == b.shape
    assert not torch.allclose(a, b)
    # vector: each lane's K outputs are one squashed vector, so its length is < 1
    assert (vector.lane_outputs(x)[0].norm(dim=-1) < 1).all()


def test_lane_dropout_only_touches_classification() -> None:
    torch.manual_seed(0)
    model = build_model(MLCNSpec("4*mlcn1:1x1", lane_dropout=0.5))
    x, y = torch.rand(8, 1, 28, 28), torch.randint(0, 10, (8,))
    model.train()
    first, second = model(x, y), model(x, y)
    assert not torch.allclose(first.lengths, second.lengths)
    assert first.reconstruction is not None
    assert second.reconstruction is not None
    assert torch.allclose(first.reconstruction, second.reconstruction)
    assert torch.allclose(first.class_capsules, second.class_capsules)
    model.eval()
    evaluated = model(x)
    assert torch.allclose(evaluated.lengths, evaluated.class_capsules.norm(dim=-1))


def test_decoder_kinds() -> None:
    full = build_model(MLCNSpec("3*mlcn1:1x1", decoder="full"))
    reduced = build_model(MLCNSpec("3*mlcn1:1x1", decoder="reduced"))
    none = build_model(MLCNSpec("3*mlcn1:1x1", decoder="none"))
    # FasTrCaps' reduced decoder drops the (K-1)*D*512 weights that only see zeros
    assert count_parameters(full) - count_parameters(reduced) == 9 * 3 * 512
    x, y = torch.rand(2, 1, 28, 28), torch.tensor([1, 2])
    out = reduced(x, y)
    assert out.reconstruction is not None
    assert out.reconstruction.shape == (2, 784)
    out_none = none(x, y)
    assert out_none.reconstruction is None
    loss = capsule_loss(out_none.lengths, None, x, y)
    assert loss.reconstruction.item() == 0.0
    assert loss.total.item() == loss.margin.item()


def test_full_decoder_reads_only_the_selected_capsule() -> None:
    torch.manual_seed(0)
    model = build_model(CapsNetSpec(conv_channels=16, primary_channels=4, class_dim=4))
    x = torch.rand(2, 1, 28, 28)
    out = model(x, torch.tensor([3, 3]))
    caps = out.class_capsules.clone()
    caps[:, 5] += 1.0  # change a non-selected capsule: reconstruction must not move
    assert model.capsule_head.decoder is not None
    again = model.capsule_head.decoder(caps, torch.tensor([3, 3]))
    assert torch.allclose(out.reconstruction, again)


def test_pointwise_conv_equals_conv2d() -> None:
    torch.manual_seed(0)
    pw = PointwiseConv2d(3, 5)
    ref = nn.Conv2d(3, 5, 1)
    ref.load_state_dict(pw.state_dict())
    x = torch.randn(2, 3, 7, 6)
    assert torch.allclose(pw(x), ref(x), atol=1e-6)
    assert torch.allclose(pw(x.contiguous(memory_format=torch.channels_last)), ref(x), atol=1e-6)


@pytest.mark.parametrize("name", ARCHITECTURES.names())
def test_every_named_architecture_runs(name: str) -> None:
    model = build_model(create_arch(name))
    out = model(torch.rand(2, 1, 28, 28))
    assert out.lengths.shape == (2, 10)
    assert torch.isfinite(out.lengths).all()


def _grad(param: torch.Tensor | None) -> torch.Tensor:
    assert param is not None
    assert param.grad is not None
    return param.grad


def test_folded_pointwise_conv_equals_the_two_layers() -> None:
    from nasmlcn.specs import ConvSpec

    torch.manual_seed(0)
    first, second = ConvSpec(3, 8, 1, relu=False), ConvSpec(8, 6, 5, stride=2)
    folded = FoldedConv2d(first, second).double()
    ref_pointwise, ref_conv = nn.Conv2d(3, 8, 1), nn.Conv2d(8, 6, 5, 2)
    ref = nn.Sequential(ref_pointwise, ref_conv).double()
    ref_pointwise.load_state_dict(folded.pointwise.state_dict())
    ref_conv.load_state_dict(folded.conv.state_dict())
    x = torch.randn(2, 3, 13, 11, dtype=torch.float64)
    a, b = folded(x), ref(x)
    assert torch.allclose(a, b, atol=1e-10)
    a.square().sum().backward()
    b.square().sum().backward()
    assert torch.allclose(_grad(folded.pointwise.weight), _grad(ref_pointwise.weight), atol=1e-8)
    assert torch.allclose(_grad(folded.pointwise.bias), _grad(ref_pointwise.bias), atol=1e-8)
    assert torch.allclose(_grad(folded.conv.weight), _grad(ref_conv.weight), atol=1e-8)


def test_mlcn2_executes_its_first_two_layers_folded() -> None:
    from nasmlcn.specs import LaneSpec, executed_convs

    layout = LaneSpec("mlcn2", 4, 2).layout((1, 28, 28))
    executed = executed_convs(layout.convs)
    assert len(executed) == len(layout.convs) - 1
    assert (executed[0].in_channels, executed[0].out_channels, executed[0].kernel) == (1, 32, 9)
    assert executed_convs(LaneSpec("mlcn1", 4, 2).layout((1, 28, 28)).convs) == list(
        LaneSpec("mlcn1", 4, 2).layout((1, 28, 28)).convs
    )


def _vote_weights(vote_init: str) -> torch.Tensor:
    """The vote weights of a built mlcn2-ref:4x1 lane: 648 primary capsules' votes
    (16-dimensional) for 10 classes."""
    torch.manual_seed(0)
    model = build_model(MLCNSpec.from_lanes("mlcn2-ref:4x1", vote_init=vote_init))
    votes = dict(model.named_parameters())["lanes.stacks.0.params.0"].detach()
    assert votes.shape == (1, 648, 16, 10)
    return votes


def test_glorot_vote_init_draws_the_reference_code_s_bound() -> None:
    glorot = _vote_weights("glorot")
    bound = (6 / ((10 + 16) * 648)) ** 0.5
    assert glorot.abs().max() <= bound
    assert glorot.abs().max() > 0.99 * bound
    assert glorot.std().item() == pytest.approx(bound / 3**0.5, rel=0.02)  # 0.011
    scaled = _vote_weights("scaled")  # votes of unit-order length: std 1/sqrt(inputs)
    assert scaled.std().item() == pytest.approx(648**-0.5, rel=0.02)  # 0.039
    model = build_model(create_arch("mlcn-tiny", vote_init="glorot"))
    assert torch.isfinite(model(torch.rand(2, 1, 28, 28)).lengths).all()
