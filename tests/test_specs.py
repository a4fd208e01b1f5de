from __future__ import annotations

import json
from pathlib import Path

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
        ("mlcn1:0x1", "LaneSpec.width must be an integer >= 1, got 0"),
        ("mlcn1:2x0", "LaneSpec.depth must be an integer >= 1, got 0"),
        ("0*mlcn1:2x1", "repeat count must be 1..4096, got 0"),
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
        ({"type": "mlcn1", "width": 0}, "LaneSpec.width must be an integer >= 1, got 0"),
        (
            {"type": "mlcn1", "width": 2, "depth": -1},
            "LaneSpec.depth must be an integer >= 1, got -1",
        ),
        ({"type": "mlcn1", "width": 2.5}, "LaneSpec.width must be an integer >= 1, got 2.5"),
        ({"type": "mlcn1", "width": True}, "LaneSpec.width must be an integer >= 1, got True"),
        ({"type": "capsule", "width": 1}, "LaneSpec.type: unknown lane type 'capsule'"),
    ],
)
def test_lane_spec_validation_names_field_and_value(kwargs: dict, message: str) -> None:  # type: ignore[type-arg]
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
            "MLCNSpec.routing must be one of vector, classwise; got 'dynamic'",
        ),
        ({"decoder": "big"}, "MLCNSpec.decoder must be one of full, reduced, none; got 'big'"),
        ({"lane_dropout": 1.0}, r"MLCNSpec.lane_dropout must be a number in \[0, 1\), got 1.0"),
        ({"num_classes": 1}, "MLCNSpec.num_classes must be an integer >= 2, got 1"),
        ({"routing_iterations": 0}, "MLCNSpec.routing_iterations must be an integer >= 1, got 0"),
        ({"input_shape": (1, 28)}, r"MLCNSpec.input_shape must be \[channels, height, width\]"),
        ({"input_shape": (1, 8, 8)}, "lane mlcn1:1x1 does not fit input 1x8x8"),
        ({"lanes": []}, "MLCNSpec.lanes must hold at least one lane"),
    ],
)
def test_mlcn_spec_validation(kwargs: dict, message: str) -> None:  # type: ignore[type-arg]
    args = {"lanes": "mlcn1:1x1", **kwargs}
    with pytest.raises(SpecError, match=message):
        MLCNSpec(**args)


def test_mlcn_spec_accepts_strings_and_lists() -> None:
    a = MLCNSpec("2*mlcn2:4x1")
    b = MLCNSpec([LaneSpec("mlcn2", 4), {"type": "mlcn2", "width": 4, "depth": 1}])  # type: ignore[list-item]
    assert a == b and a.num_lanes == 2 and a.class_capsule_dim == 2
    assert hash(a) == hash(b)


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
    assert isinstance(spec, MLCNSpec) and spec.describe() == "mlcn1:2x1,mlcn2:1x2"
    with pytest.raises(SpecError, match="schema_version 99 is newer"):
        arch_from_dict({"schema_version": 99, "kind": "mlcn", "lanes": "mlcn1:1"})
    with pytest.raises(SpecError, match="MLCNSpec has no field 'width'"):
        arch_from_dict({"kind": "mlcn", "lanes": "mlcn1:1", "width": 3})
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
