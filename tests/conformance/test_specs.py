"""Conformance of every lane type (``nasmlcn.specs.LANE_TYPES``) and every named
architecture (``nasmlcn.specs.ARCHITECTURES``, the zoo of ``_zoo.py``).

Lane types (``nasmlcn/specs/_lane_types.py``): the last convolution's channels cut
into ``capsule_dim``-D capsules, as many as the description states for 28x28
input; width scales every layer's channels; depth ``d`` inserts ``d - 1`` extra
3x3 convolutions, so cost grows linearly in depth and about quadratically in
width; the torch lane has the parameters the cost model counts and returns
``(B, K)``.

Architectures (``nasmlcn/specs/_zoo.py``): every name builds a spec and a torch
model, takes field overrides (``num_classes=...``), round-trips through JSON, has
the lanes its name declares (``mlcn1-8x4``: 8 mlcn1 lanes of width 4, depth 1,
Table 4.1), the parameters stated where a count is declared, and a ``*-tiny``
entry is smaller than the entry it shrinks.
"""

from __future__ import annotations

import math
import re

import pytest
import torch

from nasmlcn.costs import CostContext, get_cost_model, lane_profile
from nasmlcn.models import BUILDERS, build_model, count_parameters
from nasmlcn.specs import (
    ARCHITECTURES,
    LANE_TYPES,
    CapsNetSpec,
    LaneSpec,
    LaneType,
    MLCNSpec,
    arch_from_json,
    arch_to_json,
    create_arch,
)
from tests.models.reference_lane import Lane

TYPES = list(LANE_TYPES)
ARCHS = list(ARCHITECTURES)
SHAPES = [(1, 28, 28), (3, 32, 32)]


@pytest.mark.parametrize("name", TYPES)
def test_lane_type_entry(name: str) -> None:
    lane_type = LANE_TYPES.get(name)
    assert isinstance(lane_type, LaneType)
    assert lane_type.name == name
    assert lane_type.capsule_dim >= 1
    assert lane_type.description


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("name", TYPES)
def test_last_layer_is_cut_into_capsules(name: str, shape: tuple[int, int, int]) -> None:
    dim = LANE_TYPES.get(name).capsule_dim
    for w in (1, 2, 5):
        for d in (1, 3):
            layout = LaneSpec(name, w, d).layout(shape)
            channels, h, wd = layout.feature_shapes[-1]
            assert layout.capsule_dim == dim
            assert channels % dim == 0, (w, d, channels)
            assert layout.num_primary == channels // dim * h * wd > 0


@pytest.mark.parametrize("name", TYPES)
def test_capsule_count_is_the_one_the_description_states(name: str) -> None:
    found = re.search(r"(\d+)w caps on 28x28", LANE_TYPES.get(name).description)
    assert found, "the description states the capsules per unit of width on 28x28 input"
    for w in (1, 2, 3, 4):
        assert LaneSpec(name, w, 2).layout((1, 28, 28)).num_primary == int(found[1]) * w


@pytest.mark.parametrize("name", TYPES)
def test_width_scales_channels_and_depth_adds_layers(name: str) -> None:
    convs = LANE_TYPES.get(name).convs
    for w in (1, 2, 3):
        for d in (1, 2, 4):
            base = convs(w, d, 1)
            twice = convs(2 * w, d, 1)
            assert [c.out_channels * 2 for c in base] == [c.out_channels for c in twice]
            deeper = convs(w, d + 1, 1)
            assert len(deeper) == len(base) + 1
            assert all(c.kernel == 3 for c in deeper if c not in base)


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("name", TYPES)
def test_cost_is_linear_in_depth_and_about_quadratic_in_width(
    name: str, shape: tuple[int, int, int]
) -> None:
    ctx = CostContext(input_shape=shape)

    def flops(w: int, d: int) -> int:
        return lane_profile(LaneSpec(name, w, d), ctx).train_flops

    steps = [flops(2, d + 1) - flops(2, d) for d in range(1, 5)]
    assert steps[0] > 0, steps
    assert len(set(steps)) == 1, steps  # each depth adds the same
    for w in (1, 2, 3):
        # measured 2.9-3.97 over the built-in types: quadratic layers, linear votes
        assert 2.5 < flops(2 * w, 2) / flops(w, 2) <= 4.0, w


@pytest.mark.parametrize("routing", ["vector", "classwise"])
@pytest.mark.parametrize("name", TYPES)
def test_torch_lane_matches_its_cost_profile(name: str, routing: str) -> None:
    lane = LaneSpec(name, 1, 2)
    for shape in SHAPES:
        module = Lane(lane, shape, 10, routing, 3)
        ctx = CostContext(input_shape=shape, routing=routing)
        assert count_parameters(module) == lane_profile(lane, ctx).params
        assert module(torch.rand(2, *shape)).shape == (2, 10)  # (B, K)


# -- the architectures zoo -----------------------------------------------------

# Parameter counts stated in the project's own text: docs/figures.md
# (training throughput and Table 4.1 tables); CapsNetSpec's docstring says 8.2 M.
DECLARED_PARAMS = {
    "capsnet": 8_215_568,
    "mlcn1-2x4": 2_059_920,
    "mlcn2-2x4": 1_611_728,
    "mlcn1-8x4": 4_251_408,
    "mlcn2-8x4": 2_458_640,
}


@pytest.fixture(scope="module")
def params_of() -> dict[str, int]:
    return {name: count_parameters(build_model(create_arch(name))) for name in ARCHS}


@pytest.mark.parametrize("name", ARCHS)
def test_architecture_builds_and_classifies(name: str) -> None:
    spec = create_arch(name)
    assert isinstance(spec, (MLCNSpec, CapsNetSpec))
    assert spec.kind in BUILDERS
    assert arch_from_json(arch_to_json(spec)) == spec
    torch.manual_seed(0)  # the weights and the image: the same whatever ran before
    model = build_model(spec).eval()
    with torch.no_grad():
        out = model(torch.rand(1, *spec.input_shape))  # (B, C, H, W)
    assert out.lengths.shape == (1, spec.num_classes)
    # An MLCN's class capsule has one dimension per lane, and each lane's outputs are
    # squashed on their own: its length is at most sqrt(lanes) (1.02 seen with 32).
    bound = math.sqrt(spec.num_lanes) if isinstance(spec, MLCNSpec) else 1.0
    assert bool(((out.lengths >= 0) & (out.lengths <= bound)).all())


@pytest.mark.parametrize("name", ARCHS)
def test_architecture_takes_overrides(name: str) -> None:
    spec = create_arch(name, num_classes=5, input_shape=(3, 32, 32), decoder="reduced")
    assert (spec.num_classes, spec.input_shape, spec.decoder) == (5, (3, 32, 32), "reduced")
    model = build_model(spec)
    if isinstance(spec, MLCNSpec):  # the model is built for the overridden fields
        assert count_parameters(model) == get_cost_model().model_cost(spec).params
    else:
        assert count_parameters(model) != count_parameters(build_model(create_arch(name)))


@pytest.mark.parametrize("name", ARCHS)
def test_architecture_is_what_its_name_and_text_declare(
    name: str, params_of: dict[str, int]
) -> None:
    table = re.fullmatch(r"(mlcn\d)-(\d+)x(\d+)", name)
    if table:  # Table 4.1: LANES lanes of TYPE, width WIDTH, depth 1
        lane_type, lanes, width = table[1], int(table[2]), int(table[3])
        spec = create_arch(name)
        assert isinstance(spec, MLCNSpec)
        assert spec.lanes == (LaneSpec(lane_type, width, 1),) * lanes
    if name in DECLARED_PARAMS:
        assert params_of[name] == DECLARED_PARAMS[name]
    if name.endswith("-tiny"):
        assert params_of[name] < params_of[name.removesuffix("-tiny")]
