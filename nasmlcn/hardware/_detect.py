"""The devices present on this machine (what training can run on)."""

from __future__ import annotations

import os
import platform
from dataclasses import dataclass
from typing import Any

from nasmlcn.hardware._catalog import Catalog, load_catalog


@dataclass(frozen=True)
class LocalDevice:
    """A device on this machine.

    Attributes:
        name: The torch device name (``cpu``, ``cuda:0``).
        description: Model name as the system reports it.
        memory_bytes: Total memory (host RAM for ``cpu``).
        catalog_kind: The catalog kind it matches (``H100``), or None.
        cores: CPU cores usable by this process (``cpu`` only).
    """

    name: str
    description: str
    memory_bytes: int
    catalog_kind: str | None
    cores: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "memory_bytes": self.memory_bytes,
            "catalog_kind": self.catalog_kind,
            "cores": self.cores,
        }


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _host_memory() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 0


def usable_cores() -> int:
    """CPU cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def match_kind(description: str, catalog: Catalog) -> str | None:
    """The catalog kind whose name appears in a device's model name, longest first."""
    words = description.upper().replace("-", " ").split()
    for name in sorted(catalog, key=len, reverse=True):
        if name.upper() in words or any(w.startswith(name.upper()) for w in words):
            return name
    return None


def detect_devices(catalog: Catalog | None = None) -> list[LocalDevice]:
    """The CPU and every CUDA device torch can see (no torch: the CPU only)."""
    catalog = catalog if catalog is not None else load_catalog()
    devices = [LocalDevice("cpu", _cpu_model(), _host_memory(), "cpu", usable_cores())]
    try:
        import torch
    except ImportError:  # pragma: no cover - torch is a dependency
        return devices
    if torch.cuda.is_available():
        for i in range(torch.cuda.device_count()):
            props = torch.cuda.get_device_properties(i)
            devices.append(
                LocalDevice(
                    f"cuda:{i}",
                    props.name,
                    int(props.total_memory),
                    match_kind(props.name, catalog),
                )
            )
    return devices
