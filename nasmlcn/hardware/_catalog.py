"""The device catalog: memory, peak FLOPS, bandwidth and relative speed per kind.

The built-in catalog is ``devices.toml`` beside this module (package data, read
through ``importlib.resources``); a user file (``--device-file``) replaces or adds
kinds. Names are matched case-insensitively (``k80`` is ``K80``).
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from importlib import resources
from typing import Any

from nasmlcn._toml import check_keys, read_toml
from nasmlcn.errors import DeviceError, nested, option
from nasmlcn.hardware._units import parse_size
from nasmlcn.registry import did_you_mean

#: The built-in device file, a resource of this package (an ``importlib.resources``
#: Traversable; ``resources.as_file`` gives a path on disk).
BUILTIN_CATALOG = resources.files("nasmlcn.hardware").joinpath("devices.toml")
_FIELDS = ("memory", "peak_flops", "bandwidth", "speed", "source", "cost_model")
"""The keys of a device file's ``[KIND]`` table (:func:`parse_catalog` reads them);
the first four are required."""


@dataclass(frozen=True)
class DeviceKind:
    """One kind of device in the catalog.

    Attributes:
        name: Catalog name (``K80``).
        memory_bytes: Memory of one device.
        peak_flops: Peak FP32 FLOP/s.
        bandwidth_bytes_per_s: Memory bandwidth.
        speed: Relative training throughput, K80 = 1.0.
        source: Where the figures come from.
        cost_model: The cost model that predicts lane costs on this kind (its
            registered name, e.g. ``capsacc``), or ``""``: the search's
            ``--cost-model`` (default ``analytic``).
    """

    name: str
    memory_bytes: int
    peak_flops: float
    bandwidth_bytes_per_s: float
    speed: float
    source: str = ""
    cost_model: str = ""

    def __post_init__(self) -> None:
        for field in ("peak_flops", "bandwidth_bytes_per_s", "speed"):
            value = getattr(self, field)
            if (
                isinstance(value, bool)
                or not isinstance(value, (int, float))
                or not math.isfinite(value)
                or value <= 0
            ):
                raise DeviceError(
                    f"device {self.name!r}: {field} must be a number > 0, got {value!r}"
                )
        if not MIN_SPEED <= self.speed <= 1 / MIN_SPEED:  # 1e-320 made step times infinite
            raise DeviceError(
                f"device {self.name!r}: speed (relative to a K80) must be {MIN_SPEED:g}..."
                f"{1 / MIN_SPEED:g}, got {self.speed!r}"
            )
        if (
            isinstance(self.memory_bytes, bool)
            or not isinstance(self.memory_bytes, int)
            or self.memory_bytes <= 0
        ):
            raise DeviceError(
                f"device {self.name!r}: memory must be > 0 bytes, got {self.memory_bytes!r}"
            )

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "memory_bytes": self.memory_bytes,
            "peak_flops": self.peak_flops,
            "bandwidth_bytes_per_s": self.bandwidth_bytes_per_s,
            "speed": self.speed,
            "source": self.source,
            "cost_model": self.cost_model,
        }


class Catalog(Mapping[str, DeviceKind]):
    """Device kinds by name (case-insensitive lookup, "did you mean" errors)."""

    def __init__(self, kinds: Mapping[str, DeviceKind] | None = None) -> None:
        self._kinds: dict[str, DeviceKind] = dict(kinds or {})
        self._folded = {name.lower(): name for name in self._kinds}

    def __getitem__(self, name: str) -> DeviceKind:
        key = self._folded.get(name.lower())
        if key is None:
            raise DeviceError(self.unknown_message(name))
        return self._kinds[key]

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name.lower() in self._folded

    def __iter__(self) -> Iterator[str]:
        return iter(self._kinds)

    def __len__(self) -> int:
        return len(self._kinds)

    def unknown_message(self, name: str) -> str:
        hint = did_you_mean(
            name,
            self._kinds,
            otherwise="known devices: " + ", ".join(self._kinds),
            cutoff=0.4,
            fold=str.lower,
        )
        return f"unknown device {name!r}; {hint} (add it with --device-file)"

    def merged(self, other: Catalog) -> Catalog:
        """This catalog with ``other``'s kinds added, replacing same-named ones."""
        kinds = {k: v for k, v in self._kinds.items() if k.lower() not in other._folded}
        kinds.update(other._kinds)
        return Catalog(kinds)


MIN_SPEED = 1e-6
"""The slowest device relative to a K80 (and 1 / it the fastest): beyond, predicted
times overflow to infinity."""

_NAME = re.compile(r"^[A-Za-z][\w.-]*$")
"""A kind's name as ``--devices`` reads it (``COUNTxNAME``)."""


def parse_catalog(data: Mapping[str, Any], origin: str) -> Catalog:
    """A catalog from the parsed TOML of a device file.

    Raises:
        DeviceError: A kind misses a field, has an unknown one ("did you mean")
            or a bad value; the message names the file, the kind and the field.
    """
    kinds: dict[str, DeviceKind] = {}
    for name, entry in data.items():
        if not _NAME.match(name):  # --devices could never name it
            raise DeviceError(
                f"{origin}: [{name}] is not a device name {option('devices')} can use: start "
                "with a letter, then letters, digits, '_', '.' or '-' (e.g. [MYGPU] or [A100-40GB])"
            )
        if not isinstance(entry, Mapping):
            raise DeviceError(f"{origin}: [{name}] must be a table of {', '.join(_FIELDS)}")
        check_keys(entry, _FIELDS, origin, DeviceError, inside=f"[{name}]")
        missing = [f for f in _FIELDS[:4] if f not in entry]
        if missing:
            raise DeviceError(f"{origin}: [{name}] misses {', '.join(missing)}")
        try:
            kinds[name] = DeviceKind(
                name=name,
                memory_bytes=parse_size(
                    entry["memory"], what=f"memory of [{name}]", unit_required=True
                ),
                peak_flops=entry["peak_flops"],
                bandwidth_bytes_per_s=entry["bandwidth"],
                speed=entry["speed"],
                source=str(entry.get("source", "")),
                cost_model=str(entry.get("cost_model", "")),
            )
        except DeviceError as err:
            raise DeviceError(f"{origin}: {nested(err)}") from None
    return Catalog(kinds)


def read_catalog_file(path: str | os.PathLike[str]) -> Catalog:
    """Reads a device file (TOML, one table per kind).

    Raises:
        DeviceError: Missing, unreadable or invalid file; the message names it.
    """
    data = read_toml(path, "device file", DeviceError)
    return parse_catalog(data, f"device file {str(path)!r}")


_builtin: Catalog | None = None


def load_catalog(device_file: str | os.PathLike[str] | None = None) -> Catalog:
    """The built-in catalog, extended by ``device_file`` when given."""
    global _builtin
    if _builtin is None:
        with resources.as_file(BUILTIN_CATALOG) as path:
            _builtin = read_catalog_file(path)
    if device_file is None:
        return _builtin
    return _builtin.merged(read_catalog_file(device_file))
