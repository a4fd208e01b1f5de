"""Memory sizes and FLOPS figures as people write them: ``12GB``, ``512MiB``, ``4x``."""

from __future__ import annotations

import math
import re

from nasmlcn.errors import DeviceError

_UNITS = {
    "": 1,
    "B": 1,
    "KB": 10**3,
    "MB": 10**6,
    "GB": 10**9,
    "TB": 10**12,
    "KIB": 2**10,
    "MIB": 2**20,
    "GIB": 2**30,
    "TIB": 2**40,
}
_SIZE = re.compile(
    r"^\s*(?P<number>[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?)\s*(?P<unit>[A-Za-z]*)\s*$"
)
ACCEPTED_UNITS = "B, KB, MB, GB, TB (powers of 1000) or KiB, MiB, GiB, TiB (powers of 1024)"


def parse_size(
    text: str | int | float, *, what: str = "memory size", unit_required: bool = False
) -> int:
    """Bytes in a size such as ``12GB`` (10^9), ``12GiB`` (2^30), ``12000MB``, ``512MiB``.

    A bare number is bytes, unless ``unit_required`` (``--mem``: ``12`` is a typo for
    12GB far more often than 12 bytes). Units are case-insensitive.

    Raises:
        DeviceError: Not a number with a known unit, or not > 0, or a bare number where
            ``unit_required``; the message names the value and the accepted units.
    """
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        value, unit = float(text), ""
        number = str(text)
    else:
        match = _SIZE.match(str(text))
        if match is None:
            raise DeviceError(
                f"invalid {what} {text!r}; expected a number and a unit such as 12GB or 512MiB "
                f"(units: {ACCEPTED_UNITS})"
            )
        value, unit = float(match["number"]), match["unit"].upper()
        number = match["number"]
        if unit not in _UNITS:
            raise DeviceError(
                f"invalid {what} {text!r}: unknown unit {match['unit']!r}; use {ACCEPTED_UNITS}"
            )
    if unit_required and not unit:
        raise DeviceError(
            f"{what} {number}: give a unit, e.g. {number}GB or {number}GiB (units: "
            f"{ACCEPTED_UNITS})"
        )
    size = value * _UNITS[unit]
    if not math.isfinite(size):
        raise DeviceError(f"invalid {what} {text!r}: it must be a finite size")
    if size <= 0 or round(size) < 1:
        raise DeviceError(f"invalid {what} {text!r}: it must be more than 0 bytes")
    return round(size)


def format_bytes(n: float) -> str:
    """``12884901888`` -> ``12.0 GiB`` (binary units, three significant digits)."""
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            shown = f"{value:.0f}" if unit == "B" or value >= 1000 else f"{value:.3g}"
            return f"{shown} {unit}"  # 1010 GiB, not 1.01e+03 GiB
        value /= 1024
    raise AssertionError("unreachable")


def format_flops(n: float) -> str:
    """``4.37e12`` -> ``4.37 TFLOP`` (decimal units)."""
    value = float(n)
    for unit in ("", "K", "M", "G", "T", "P"):
        if abs(value) < 1000 or unit == "P":
            return f"{value:.3g} {unit}FLOP"
        value /= 1000
    raise AssertionError("unreachable")
