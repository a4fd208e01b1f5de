from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from nasmlcn.errors import ArchFileError, SpecError
from nasmlcn.specs import (
    ARCH_SCHEMA_VERSION,
    ARCHITECTURES,
    CapsNetSpec,
    LaneSpec,
    MLCNSpec,
    arch_from_dict,
    arch_from_json,
    arch_to_json,
    create_arch,
    format_lanes,
    load_arch,
    parse_lanes,
    save_arch,
)


def test_lane_syntax_parses_types_widths_depths_and_repeats() -> None:
    lanes = parse_lanes("2*mlcn2:4x1, mlcn1:2x3,mlcn1:5")
    assert lanes == [
        LaneSpec("mlcn2", 4, 1),
        LaneSpec("mlcn2", 4, 1),
        LaneSpec("mlcn1", 2, 3),
        LaneSpec("mlcn1", 5, 1),
    ]
    assert format_lanes(lanes) == "2*mlcn2:4x1,mlcn1:2x3,mlcn1:5x1"
    assert parse_lanes(format_lanes(lanes)) == lanes
    assert len(parse_lanes("8*mlcn2:2x1")) == 8


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("mlcn3:4x1", "unknown lane type 'mlcn3'; did you mean"),
        ("mlcn1:0x1", "lane width must be an integer >= 1, got 0"),
        ("mlcn1:2x0", "lane depth must be an integer >= 1, got 0"),
        ("0*mlcn1:2x1", "repeat count must be 1..4096, got 0"),
        ("mlcn1:1025x1", "lane width must be 1..1024, got 1025"),
        ("mlcn2:1x99999999999", "lane depth must be 1..1024, got 99999999999"),
        ("mlcn1", "expected TYPE:WIDTHxDEPTH"),
        ("mlcn1:axb", "invalid lane 'mlcn1:axb'"),
        ("mlcn1:2x1,", "invalid lane ''"),
        ("", "no lanes given"),
    ],
)
def test_lane_syntax_errors_name_the_part(text: str, message: str) -> None:
    with pytest.raises(SpecError, match=message.replace("(", r"\(").replace("*", r"\*")):
        parse_lanes(text)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"type": "mlcn1", "width": 0}, "lane width must be an integer >= 1, got 0"),
        (
            {"type": "mlcn1", "width": 2, "depth": -1},
            "lane depth must be an integer >= 1, got -1",
        ),
        ({"type": "mlcn1", "width": 2.5}, "lane width must be an integer >= 1, got 2.5"),
        ({"type": "mlcn1", "width": True}, "lane width must be an integer >= 1, got True"),
        ({"type": "capsule", "width": 1}, "unknown lane type 'capsule'"),
    ],
)
def test_lane_spec_validation_names_field_and_value(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(SpecError, match=message):
        LaneSpec(**kwargs)


def test_primary_capsule_counts_follow_the_thesis() -> None:
    # mlcn1: 6x6 positions x 2w capsule channels = 72w on 28x28 (thesis sec. 4.2).
    for w in (1, 2, 4):
        assert LaneSpec("mlcn1", w, 1).layout((1, 28, 28)).num_primary == 72 * w
        # mlcn2 keeps the text's 8w filters: 36w capsules (see _lane_types.py).
        assert LaneSpec("mlcn2", w, 3).layout((1, 28, 28)).num_primary == 36 * w
    assert LaneSpec("mlcn1", 1, 1).layout((3, 32, 32)).num_primary == 8 * 8 * 2
    assert CapsNetSpec().layout.num_primary == 1152


@pytest.mark.parametrize(
    ("lane_type", "capsule_dim", "caps_28", "caps_32"),
    [
        # the text's Mlcn2 capsule count: 9x9/2 conv with 16w filters on the 6x6 grid
        # (20x20 after the 9x9 conv; 8x8 on 32x32): 6*6*2w = 72w, 8*8*2w = 128w
        ("mlcn2-72", 8, 72, 128),
        # reference code: 9x9 -> 20x20 (24x24), 6x6/2 -> 8x8 (10x10), 2w 16-D channels
        ("mlcn1-ref", 16, 8 * 8 * 2, 10 * 10 * 2),
        # reference code: 6x6 separable -> 23x23 (27x27), 6x6/2 -> 9x9 (11x11)
        ("mlcn2-ref", 16, 9 * 9 * 2, 11 * 11 * 2),
    ],
)
def test_capsule_layouts_of_the_other_lane_types(
    lane_type: str, capsule_dim: int, caps_28: int, caps_32: int
) -> None:
    for w, d in ((1, 1), (4, 1), (2, 3)):
        lane = LaneSpec(lane_type, w, d)
        for shape, per_width in (((1, 28, 28), caps_28), ((3, 32, 32), caps_32)):
            layout = lane.layout(shape)
            assert (layout.num_primary, layout.capsule_dim) == (per_width * w, capsule_dim)


def test_lane_syntax_parses_the_other_lane_types() -> None:
    lanes = parse_lanes("2*mlcn2-72:4x1,mlcn1-ref:2,mlcn2-ref:1x3")
    assert lanes == [
        LaneSpec("mlcn2-72", 4, 1),
        LaneSpec("mlcn2-72", 4, 1),
        LaneSpec("mlcn1-ref", 2, 1),
        LaneSpec("mlcn2-ref", 1, 3),
    ]
    assert parse_lanes(format_lanes(lanes)) == lanes
    spec = MLCNSpec("2*mlcn2-72:4x1,mlcn2-ref:1x1")
    assert arch_from_json(arch_to_json(spec)) == spec


def test_mlcn2_ref_is_the_reference_lane_at_depth_1() -> None:
    """1x1 -> separable 6x6 (depthwise, no bias; pointwise) -> three 3x3 -> capsules;
    depth d gives d + 2 of the 3x3 convolutions."""
    convs = LaneSpec("mlcn2-ref", 2, 1).layout((1, 28, 28)).convs
    pointwise, depthwise, separable_pointwise, *rest, capsules = convs
    assert (pointwise.in_channels, pointwise.out_channels, pointwise.kernel) == (1, 32, 1)
    assert not pointwise.relu
    assert (depthwise.kernel, depthwise.groups, depthwise.bias, depthwise.relu) == (
        6,
        32,
        False,
        False,
    )
    assert (separable_pointwise.kernel, separable_pointwise.relu) == (1, True)
    assert [(c.kernel, c.padding) for c in rest] == [(3, 1)] * 3
    assert (capsules.kernel, capsules.stride, capsules.out_channels) == (6, 2, 64)
    deeper = LaneSpec("mlcn2-ref", 2, 3).layout((1, 28, 28)).convs
    assert sum(c.kernel == 3 for c in deeper) == 5


def test_grouped_convolutions_are_validated_and_never_folded() -> None:
    from nasmlcn.specs import ConvSpec, can_fold, executed_convs

    with pytest.raises(SpecError, match=r"ConvSpec\.groups 3 must divide in_channels 8"):
        ConvSpec(8, 8, 3, groups=3)
    depthwise = ConvSpec(8, 8, 3, groups=8, bias=False)
    assert (depthwise.weights, depthwise.params) == (8 * 9, 8 * 9)
    assert ConvSpec(8, 4, 3, groups=2).params == 4 * 4 * 9 + 4
    widening = ConvSpec(1, 8, 1, relu=False)
    assert can_fold(widening, ConvSpec(8, 8, 3))
    assert not can_fold(widening, depthwise)
    assert not can_fold(widening, ConvSpec(8, 8, 3, bias=False))
    convs = LaneSpec("mlcn2-ref", 1, 1).layout((1, 28, 28)).convs
    assert executed_convs(convs) == list(convs)


def test_depth_adds_same_size_convolutions() -> None:
    shallow = LaneSpec("mlcn1", 2, 1).layout((1, 28, 28))
    deep = LaneSpec("mlcn1", 2, 4).layout((1, 28, 28))
    assert len(deep.convs) == len(shallow.convs) + 3
    assert deep.feature_shapes[1:4] == ((32, 20, 20),) * 3
    assert deep.num_primary == shallow.num_primary


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            {"routing": "dynamic"},
            "MLCN routing must be one of vector, classwise; got 'dynamic'",
        ),
        ({"decoder": "big"}, "MLCN decoder must be one of full, reduced, none; got 'big'"),
        ({"lane_dropout": 1.0}, r"MLCN lane_dropout must be a number in \[0, 1\), got 1.0"),
        ({"num_classes": 1}, "MLCN num_classes must be an integer >= 2, got 1"),
        ({"routing_iterations": 0}, "MLCN routing_iterations must be an integer >= 1, got 0"),
        ({"input_shape": (1, 28)}, r"MLCN input_shape must be \[channels, height, width\]"),
        ({"input_shape": (1, 8, 8)}, "lane mlcn1:1x1 does not fit input 1x8x8"),
        ({"lanes": []}, "MLCN lanes must hold at least one lane"),
    ],
)
def test_mlcn_spec_validation(kwargs: dict[str, Any], message: str) -> None:
    args = {"lanes": "mlcn1:1x1", **kwargs}
    with pytest.raises(SpecError, match=message):
        MLCNSpec(**args)


def test_mlcn_spec_accepts_strings_and_lists() -> None:
    a = MLCNSpec("2*mlcn2:4x1")
    b = MLCNSpec([LaneSpec("mlcn2", 4), {"type": "mlcn2", "width": 4, "depth": 1}])
    assert a == b
    assert a.num_lanes == 2
    assert a.class_capsule_dim == 2
    assert hash(a) == hash(b)


def test_mlcn_spec_init_signature_for_type_checkers_matches_the_fields() -> None:
    """MLCNSpec declares its __init__ under TYPE_CHECKING (to say that ``lanes`` takes
    more than the field holds); the dataclass generates the real one from the fields."""
    import ast
    import dataclasses
    import inspect

    from nasmlcn.specs import _arch

    tree = ast.parse(inspect.getsource(_arch))
    (cls,) = (n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "MLCNSpec")
    (init,) = (
        f
        for n in cls.body
        if isinstance(n, ast.If) and ast.unparse(n.test) == "TYPE_CHECKING"
        for f in n.body
        if isinstance(f, ast.FunctionDef) and f.name == "__init__"
    )
    declared = [a.arg for a in init.args.args[1:]]
    assert declared == [f.name for f in dataclasses.fields(MLCNSpec) if f.init]


@pytest.mark.parametrize(
    "spec",
    [
        MLCNSpec("mlcn1:4x2,2*mlcn2:1x3", routing="classwise", decoder="reduced", lane_dropout=0.1),
        MLCNSpec("8*mlcn2:2x1", num_classes=7, input_shape=(3, 32, 32)),
        CapsNetSpec(),
        CapsNetSpec(num_classes=5, class_dim=8, decoder="none"),
    ],
)
def test_json_round_trip(spec: MLCNSpec | CapsNetSpec) -> None:
    text = arch_to_json(spec)
    data = json.loads(text)
    assert data["schema_version"] == ARCH_SCHEMA_VERSION
    assert data["kind"] == spec.kind
    assert arch_from_json(text) == spec


def test_json_accepts_lane_strings_and_rejects_bad_documents() -> None:
    spec = arch_from_dict({"kind": "mlcn", "lanes": ["mlcn1:2x1", "mlcn2:1x2"]})
    assert isinstance(spec, MLCNSpec)
    assert spec.describe() == "mlcn1:2x1,mlcn2:1x2"
    with pytest.raises(SpecError, match="schema_version 99 is newer"):
        arch_from_dict({"schema_version": 99, "kind": "mlcn", "lanes": "mlcn1:1"})
    with pytest.raises(SpecError, match="the mlcn architecture: unknown key 'width'"):
        arch_from_dict({"kind": "mlcn", "lanes": "mlcn1:1", "width": 3})
    with pytest.raises(SpecError, match=r"unknown key 'lanse'; did you mean 'lanes'\?"):
        arch_from_dict({"kind": "mlcn", "lanse": "mlcn1:1"})
    with pytest.raises(SpecError, match="kind must be one of mlcn, capsnet; got 'resnet'"):
        arch_from_dict({"kind": "resnet"})
    with pytest.raises(SpecError, match="not valid JSON"):
        arch_from_json("{lanes: 1")


def test_load_arch_errors_name_the_file(tmp_path: Path) -> None:
    with pytest.raises(ArchFileError, match="does not exist"):
        load_arch(tmp_path / "nope.json")
    with pytest.raises(ArchFileError, match="is a directory"):
        load_arch(tmp_path)
    bad = tmp_path / "bad.json"
    bad.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(ArchFileError, match="is not UTF-8 text"):
        load_arch(bad)
    bad.write_text('{"kind": "mlcn", "lanes": "mlcn1:0x1"}')
    with pytest.raises(ArchFileError, match=r"bad.json.*width must be an integer >= 1, got 0"):
        load_arch(bad)


def test_save_and_load_arch(tmp_path: Path) -> None:
    spec = MLCNSpec("mlcn1:2x2,mlcn2:3x1")
    path = save_arch(spec, tmp_path / "sub" / "arch.json")
    assert load_arch(path) == spec
    assert not list(path.parent.glob(".arch.json.*"))  # no temporary left behind


def test_every_named_architecture_builds_a_valid_spec() -> None:
    for name in ARCHITECTURES.names():
        spec = create_arch(name)
        assert arch_from_json(arch_to_json(spec)) == spec
    assert create_arch("mlcn2-8x4").describe() == "8*mlcn2:4x1"
    assert create_arch("mlcn2-ref-8x4").describe() == "8*mlcn2-ref:4x1"
    assert create_arch("capsnet", num_classes=5).num_classes == 5


def test_saved_files_get_normal_permissions(tmp_path: Path) -> None:
    import os
    import stat

    old = os.umask(0o022)
    try:
        path = save_arch(MLCNSpec.from_lanes("mlcn1:1x1"), tmp_path / "arch.json")
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o644


def test_vote_init_round_trips_and_the_default_leaves_the_json_as_it_was() -> None:
    plain = MLCNSpec.from_lanes("2*mlcn2:4x1")
    assert "vote_init" not in plain.to_dict()  # model keys and arch files written before
    glorot = MLCNSpec.from_lanes("2*mlcn2:4x1", vote_init="glorot")
    assert glorot.to_dict()["vote_init"] == "glorot"
    assert arch_from_json(arch_to_json(glorot)) == glorot != plain
    with pytest.raises(SpecError, match="vote_init"):
        MLCNSpec.from_lanes("2*mlcn2:4x1", vote_init="xavier")
