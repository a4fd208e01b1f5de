"""The ``--flops`` limit: a multiple of the thesis's baseline model, or an absolute figure.

The thesis (sec. 6.4) sizes the FLOPS buckets relative to a baseline model of four
lanes of width 2 and depth 4 ("1x"), and sweeps 1x, 2x, 4x and 8x. Under the
thesis's own memory equation that baseline fills one 12 GB K80 exactly (4 x 2856
MiB), so "1x" is read as one baseline model's load *per device*.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from nasmlcn.errors import DeviceError, option

BASELINE_LANES = "4*mlcn1:2x4"
"""The thesis's baseline model: 4 lanes, width 2, depth 4 (the type is not given;
mlcn1, CapsNet's own recipe, is assumed)."""

_MULTIPLE = re.compile(r"^\s*(?P<value>\d+(\.\d*)?|\.\d+)\s*[xX]\s*$")
_ABSOLUTE = re.compile(
    r"^\s*(?P<value>\d+(\.\d*)?|\.\d+)(?P<exp>[eE][+-]?\d+)?\s*(?P<unit>[kKMGTP]?)\s*(FLOPS?)?\s*$"
)
_PREFIX = {"": 1.0, "K": 1e3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}


@dataclass(frozen=True)
class FlopsLimit:
    """A per-device load limit, as given on the command line.

    Attributes:
        multiple: Multiple of the baseline model's load (``4x`` -> 4.0), or None.
        flops: Training FLOPs per image per device, or None.
        text: What the user wrote.
    """

    multiple: float | None = None
    flops: float | None = None
    text: str = ""

    def __post_init__(self) -> None:
        if (self.multiple is None) == (self.flops is None):
            raise ValueError("a FlopsLimit has either a multiple or an absolute FLOPs figure")

    def __str__(self) -> str:
        return self.text or (
            f"{self.multiple:g}x" if self.multiple is not None else f"{self.flops:g}"
        )


def parse_flops(text: str | float) -> FlopsLimit:
    """``4x`` (four baseline models per device), or ``2.4G`` / ``2.4e9`` (training
    FLOPs per image per device).

    Raises:
        DeviceError: Neither form, or not > 0.
    """
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        text = f"{text}x"
    raw = str(text)
    match = _MULTIPLE.match(raw)
    if match:
        value = float(match["value"])
        if value <= 0:
            raise DeviceError(f"invalid {option('flops')} {raw!r}: the multiple must be > 0")
        return FlopsLimit(multiple=value, text=raw.strip())
    match = _ABSOLUTE.match(raw)
    if match:
        value = float(match["value"] + (match["exp"] or "")) * _PREFIX[match["unit"]]
        if not math.isfinite(value) or value <= 0:
            raise DeviceError(f"invalid {option('flops')} {raw!r}: it must be > 0")
        return FlopsLimit(flops=value, text=raw.strip())
    raise DeviceError(
        f"invalid {option('flops')} {raw!r}; expected a multiple of the thesis baseline ({BASELINE_LANES}) "
        "such as 1x, 2x, 4x, 8x, or training FLOPs per image per device such as 2.4G or 2.4e9"
    )
