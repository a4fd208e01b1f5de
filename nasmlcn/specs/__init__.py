"""Architecture specifications (pure Python, no torch)."""

from __future__ import annotations

from nasmlcn._io import write_text_atomic
from nasmlcn.specs._arch import (
    ARCH_SCHEMA_VERSION,
    DECODERS,
    DEFAULT_ROUTING,
    DEFAULT_VOTE_INIT,
    ROUTINGS,
    VOTE_INITS,
    ArchSpec,
    CapsNetSpec,
    LaneInput,
    LanesInput,
    MLCNSpec,
    arch_from_dict,
)
from nasmlcn.specs._fusion import (
    CPU_MAX_DEEP_LANE_CHANNELS,
    CPU_MAX_LANE_CHANNELS,
    execution_groups,
    lane_channels,
    lane_fuses,
)
from nasmlcn.specs._io import arch_from_json, arch_to_json, load_arch, save_arch
from nasmlcn.specs._lane import (
    MAX_DEPTH,
    MAX_REPEAT,
    MAX_WIDTH,
    LaneSpec,
    format_lane_mix,
    format_lanes,
    in_mix_order,
    lane_mix_ranks,
    parse_lane,
    parse_lanes,
)
from nasmlcn.specs._lane_types import LANE_TYPES, LaneType
from nasmlcn.specs._layers import ConvSpec, LaneLayout, can_fold, executed_convs
from nasmlcn.specs._zoo import ARCHITECTURES, DEFAULT_LANES, create_arch

__all__ = [
    "ARCHITECTURES",
    "ARCH_SCHEMA_VERSION",
    "CPU_MAX_DEEP_LANE_CHANNELS",
    "CPU_MAX_LANE_CHANNELS",
    "DECODERS",
    "DEFAULT_LANES",
    "DEFAULT_ROUTING",
    "DEFAULT_VOTE_INIT",
    "LANE_TYPES",
    "MAX_DEPTH",
    "MAX_REPEAT",
    "MAX_WIDTH",
    "ROUTINGS",
    "VOTE_INITS",
    "ArchSpec",
    "CapsNetSpec",
    "ConvSpec",
    "LaneInput",
    "LaneLayout",
    "LaneSpec",
    "LaneType",
    "LanesInput",
    "MLCNSpec",
    "arch_from_dict",
    "arch_from_json",
    "arch_to_json",
    "can_fold",
    "create_arch",
    "executed_convs",
    "execution_groups",
    "format_lane_mix",
    "format_lanes",
    "in_mix_order",
    "lane_channels",
    "lane_fuses",
    "lane_mix_ranks",
    "load_arch",
    "parse_lane",
    "parse_lanes",
    "save_arch",
    "write_text_atomic",
]
