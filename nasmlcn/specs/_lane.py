"""LaneSpec: one lane of a Multi-Lane Capsule Network, and its compact syntax
(written by ``str(lane)`` and :func:`format_lanes`, read by :func:`parse_lanes`).

``mlcn1:4x2`` is one lane of type mlcn1, width 4, depth 2 (``mlcn1:4`` means depth
1). Lanes are comma-separated, and ``8*mlcn2:2x1`` repeats a lane 8 times::

    >>> [str(lane) for lane in parse_lanes("2*mlcn2:4x1,mlcn1:2x3")]
    ['mlcn2:4x1', 'mlcn2:4x1', 'mlcn1:2x3']
    >>> format_lanes(parse_lanes("mlcn2:4x1, mlcn2:4x1, mlcn1:2x3"))
    '2*mlcn2:4x1,mlcn1:2x3'
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from nasmlcn._toml import check_keys
from nasmlcn._validate import check_int
from nasmlcn.errors import SpecError, nested
from nasmlcn.specs._lane_types import LANE_TYPES
from nasmlcn.specs._layers import LaneLayout

MAX_WIDTH = 1024
"""The widest lane: 256 already has a 0.5 GB inference footprint (``estimate``); a
wider one is a typo that would take minutes to build."""
MAX_DEPTH = 1024
"""The deepest lane (a depth of 10^6 took a minute to lay out)."""


@dataclass(frozen=True, order=True)
class LaneSpec:
    """One lane: its type, width and depth.

    Attributes:
        type: A registered lane type (``mlcn1``, ``mlcn2``, ...; see ``LANE_TYPES``).
        width: Filter multiplier, >= 1 (more filters, more primary capsules).
        depth: Number of feature convolutions before the capsule convolution, >= 1.
    """

    type: str
    width: int
    depth: int = 1

    def __post_init__(self) -> None:
        if self.type not in LANE_TYPES:
            raise SpecError(LANE_TYPES.unknown_message(str(self.type)))
        check_int("lane", "width", self.width, 1, MAX_WIDTH)
        check_int("lane", "depth", self.depth, 1, MAX_DEPTH)

    def __str__(self) -> str:
        return f"{self.type}:{self.width}x{self.depth}"

    def layout(self, input_shape: tuple[int, int, int]) -> LaneLayout:
        """The lane's convolutions and feature shapes for ``(C, H, W)`` input.

        Raises:
            SpecError: The input is too small for the lane's kernels.
        """
        channels, height, width = input_shape
        lane_type = LANE_TYPES.get(self.type)
        convs = tuple(lane_type.convs(self.width, self.depth, channels))
        shapes = []
        h, w = height, width
        for conv in convs:
            h, w = conv.output_size(h), conv.output_size(w)
            if h < 1 or w < 1:
                raise SpecError(
                    f"lane {self} does not fit input {channels}x{height}x{width}: "
                    f"its {conv.kernel}x{conv.kernel} convolution has nothing left to read"
                )
            shapes.append((conv.out_channels, h, w))
        last = convs[-1].out_channels
        if last % lane_type.capsule_dim:
            raise SpecError(
                f"lane {self}: {last} channels do not split into {lane_type.capsule_dim}-D capsules"
            )
        num_primary = last // lane_type.capsule_dim * shapes[-1][1] * shapes[-1][2]
        return LaneLayout(convs, tuple(shapes), lane_type.capsule_dim, num_primary)

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, "width": self.width, "depth": self.depth}

    @classmethod
    def from_dict(cls, data: Any) -> LaneSpec:
        if isinstance(data, str):
            return parse_lane(data)
        if not isinstance(data, dict):
            raise SpecError(f"a lane must be an object or a lane string, got {data!r}")
        check_keys(data, ("type", "width", "depth"), "a lane", SpecError)
        if "type" not in data or "width" not in data:
            raise SpecError(f"a lane needs 'type' and 'width', got {data!r}")
        return cls(data["type"], data["width"], data.get("depth", 1))


# -- the compact lane syntax -----------------------------------------------------

_LANE = re.compile(
    r"^\s*(?:(?P<count>[+-]?[0-9]+)\s*\*\s*)?(?P<type>[A-Za-z_][\w-]*)\s*:\s*"
    r"(?P<width>[+-]?[0-9]+)\s*(?:x\s*(?P<depth>[+-]?[0-9]+))?\s*$"
)  # ASCII digits: int() would read '٣' as 3
MAX_REPEAT = 4096
"""The most copies of a lane (``N*lane``), and the most lanes a homogeneous space draws."""


def parse_lane(text: str) -> LaneSpec:
    """Parses a single lane (no repeat count)."""
    lanes = parse_lanes(text)
    if len(lanes) != 1:
        raise SpecError(f"expected one lane, got {len(lanes)} in {text!r}")
    return lanes[0]


def parse_lanes(text: str) -> list[LaneSpec]:
    """Parses the compact syntax into lanes, in order.

    Raises:
        SpecError: A part is malformed, names an unknown type, or has a width,
            depth or count below 1; the message quotes the part.
    """
    if not isinstance(text, str) or not text.strip():
        raise SpecError(f"no lanes given ({text!r}); expected e.g. 'mlcn2:4x1' or '8*mlcn2:2x1'")
    lanes: list[LaneSpec] = []
    for position, part in enumerate(text.split(","), 1):
        if not part.strip():
            raise SpecError(
                f"invalid lane '' (lane {position} of {text!r} is empty); separate lanes "
                "with single commas, e.g. 'mlcn1:4x2,mlcn2:2x1'"
            )
        match = _LANE.match(part)
        if match is None:
            raise SpecError(
                f"invalid lane {part.strip()!r}; expected TYPE:WIDTHxDEPTH such as "
                "'mlcn1:4x2', optionally repeated as '8*mlcn2:2x1'"
            )
        count = int(match["count"]) if match["count"] is not None else 1
        if not 1 <= count <= MAX_REPEAT:
            raise SpecError(
                f"invalid lane {part.strip()!r}: repeat count must be 1..{MAX_REPEAT}, got {count}"
            )
        depth = int(match["depth"]) if match["depth"] is not None else 1
        try:
            lane = LaneSpec(match["type"], int(match["width"]), depth)
        except SpecError as err:
            raise SpecError(f"invalid lane {part.strip()!r}: {nested(err)}") from None
        lanes.extend([lane] * count)
    return lanes


def format_lanes(lanes: Sequence[LaneSpec]) -> str:
    """The compact syntax of ``lanes``, runs of equal lanes written as ``N*lane``.

    Raises:
        SpecError: ``lanes`` is not a sequence of LaneSpec (a string would come back
            as its characters).
    """
    if isinstance(lanes, str) or not all(isinstance(lane, LaneSpec) for lane in lanes):
        raise SpecError(f"format_lanes takes LaneSpec lanes (see parse_lanes), got {lanes!r}")
    parts: list[str] = []
    i = 0
    while i < len(lanes):
        j = i
        while j < len(lanes) and lanes[j] == lanes[i]:
            j += 1
        run = j - i
        parts.append(f"{run}*{lanes[i]}" if run > 1 else str(lanes[i]))
        i = j
    return ",".join(parts)


def lane_mix_ranks(lanes: Sequence[LaneSpec]) -> dict[LaneSpec, int]:
    """Each distinct lane's place in the lane mix: most frequent first, then by name
    (the order :func:`format_lane_mix` writes and canonical models keep)."""
    counts: dict[LaneSpec, int] = {}
    for lane in lanes:
        counts[lane] = counts.get(lane, 0) + 1
    ordered = sorted(counts, key=lambda lane: (-counts[lane], str(lane)))
    return {lane: rank for rank, lane in enumerate(ordered)}


def format_lane_mix(lanes: Sequence[LaneSpec]) -> str:
    """The lanes as a multiset, most frequent first: ``24*mlcn2:1x3,8*mlcn1:5x2``.

    A model's lane order does not change what it computes (class capsule ``k`` is
    its lanes' ``k``-th outputs side by side, and its length and the decoder's
    input are the same up to a permutation), so the search builds every model in
    this order (:meth:`nasmlcn.search.spaces.Candidate.canonical`), and for those
    models this is also :func:`format_lanes`' spelling.
    """
    return format_lanes(in_mix_order(lanes))


def in_mix_order(lanes: Sequence[LaneSpec]) -> list[LaneSpec]:
    """``lanes`` grouped in lane-mix order (:func:`lane_mix_ranks`), equal lanes in
    their order: the canonical order of a model with no placement of its own."""
    ranks = lane_mix_ranks(lanes)
    return sorted(lanes, key=ranks.__getitem__)
