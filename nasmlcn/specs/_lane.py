"""LaneSpec: one lane of a Multi-Lane Capsule Network."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from nasmlcn._validate import check_int, check_keys
from nasmlcn.errors import SpecError
from nasmlcn.specs._lane_types import LANE_TYPES
from nasmlcn.specs._layers import LaneLayout


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
        check_int("lane", "width", self.width, 1)
        check_int("lane", "depth", self.depth, 1)

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
            from nasmlcn.specs._syntax import parse_lane

            return parse_lane(data)
        if not isinstance(data, dict):
            raise SpecError(f"a lane must be an object or a lane string, got {data!r}")
        check_keys("a lane", data, ("type", "width", "depth"))
        if "type" not in data or "width" not in data:
            raise SpecError(f"a lane needs 'type' and 'width', got {data!r}")
        return cls(data["type"], data["width"], data.get("depth", 1))
