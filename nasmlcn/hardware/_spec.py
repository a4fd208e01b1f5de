"""DeviceSpec: one target device, and the ``--devices`` syntax (``8xK80``, mixes)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from nasmlcn.errors import DeviceError
from nasmlcn.hardware._catalog import Catalog, DeviceKind, load_catalog
from nasmlcn.hardware._units import format_bytes, parse_size

_PART = re.compile(r"^\s*(?:(?P<count>[+-]?[0-9]+)\s*[xX*]\s*)?(?P<name>[A-Za-z][\w.-]*)\s*$")
_MAX_DEVICES = 4096
DEVICE_SYNTAX = "COUNTxNAME, comma-separated, e.g. 8xK80, K80, 1xK80,1xV100 or 4xcpu"


@dataclass(frozen=True)
class DeviceSpec:
    """One target device: what the model is designed for.

    Attributes:
        index: Position in the pool (0-based); lanes are placed by index.
        kind: Catalog name (``K80``).
        memory_bytes: Memory available to the model on this device.
        peak_flops: Peak FP32 FLOP/s.
        bandwidth_bytes_per_s: Memory bandwidth.
        speed: Relative throughput, K80 = 1.0.
    """

    index: int
    kind: str
    memory_bytes: int
    peak_flops: float
    bandwidth_bytes_per_s: float
    speed: float

    @property
    def name(self) -> str:
        """``K80:3``: kind and index, unique in a pool."""
        return f"{self.kind}:{self.index}"

    @classmethod
    def of(cls, kind: DeviceKind, index: int, memory_bytes: int | None = None) -> DeviceSpec:
        return cls(
            index=index,
            kind=kind.name,
            memory_bytes=kind.memory_bytes if memory_bytes is None else memory_bytes,
            peak_flops=kind.peak_flops,
            bandwidth_bytes_per_s=kind.bandwidth_bytes_per_s,
            speed=kind.speed,
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "name": self.name,
            "kind": self.kind,
            "memory_bytes": self.memory_bytes,
            "peak_flops": self.peak_flops,
            "bandwidth_bytes_per_s": self.bandwidth_bytes_per_s,
            "speed": self.speed,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> DeviceSpec:
        return cls(
            index=int(data["index"]),
            kind=str(data["kind"]),
            memory_bytes=int(data["memory_bytes"]),
            peak_flops=float(data["peak_flops"]),
            bandwidth_bytes_per_s=float(data["bandwidth_bytes_per_s"]),
            speed=float(data["speed"]),
        )

    def __str__(self) -> str:
        return f"{self.name} ({format_bytes(self.memory_bytes)}, speed {self.speed:g})"


def parse_devices(
    text: str,
    *,
    mem: str | int | None = None,
    catalog: Catalog | None = None,
) -> tuple[DeviceSpec, ...]:
    """The devices of ``--devices`` text, in order.

    Args:
        text: ``8xK80``, ``K80``, ``1xK80,1xM40,1xP100,1xV100``, ``4xcpu``.
        mem: Overrides every device's memory, with a unit (``12GB``, ``512MiB``,
            ``4096B``): a bare number is refused, not read as bytes.
        catalog: Device kinds (default: the built-in catalog).

    Raises:
        DeviceError: Malformed part, unknown device (with "did you mean"), a count
            below 1, or a bad memory size (or one without a unit).
    """
    catalog = catalog if catalog is not None else load_catalog()
    memory = parse_size(mem, what="--mem", unit_required=True) if mem is not None else None
    if not isinstance(text, str) or not text.strip():
        raise DeviceError(f"no devices given ({text!r}); expected {DEVICE_SYNTAX}")
    devices: list[DeviceSpec] = []
    for part in text.split(","):
        match = _PART.match(part)
        if match is None:
            raise DeviceError(f"invalid device {part.strip()!r}; expected {DEVICE_SYNTAX}")
        count = int(match["count"]) if match["count"] is not None else 1
        if count < 1:
            raise DeviceError(
                f"invalid device {part.strip()!r}: the count must be >= 1, got {count}"
            )
        if len(devices) + count > _MAX_DEVICES:  # before a typo's billion are built
            raise DeviceError(f"too many devices in {text!r}: at most {_MAX_DEVICES}")
        kind = catalog[match["name"]]
        for _ in range(count):
            devices.append(DeviceSpec.of(kind, len(devices), memory))
    return tuple(devices)


def format_devices(devices: Sequence[DeviceSpec]) -> str:
    """The compact syntax of a pool: runs of one kind as ``NxKIND``."""
    parts: list[str] = []
    i = 0
    while i < len(devices):
        j = i
        while j < len(devices) and devices[j].kind == devices[i].kind:
            j += 1
        parts.append(f"{j - i}x{devices[i].kind}")
        i = j
    return ",".join(parts)
