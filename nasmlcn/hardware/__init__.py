"""Target hardware (pure Python): the device catalog, ``--devices`` specs, memory
sizes, and the devices present on this machine."""

from __future__ import annotations

from nasmlcn.hardware._catalog import (
    BUILTIN_CATALOG,
    Catalog,
    DeviceKind,
    load_catalog,
    read_catalog_file,
)
from nasmlcn.hardware._detect import (
    LocalDevice,
    available_memory,
    busy_cores,
    cpu_model,
    detect_devices,
    usable_cores,
)
from nasmlcn.hardware._load import (
    CROWDED,
    MachineLoad,
    bounded_wait,
    busy_record,
    crowded_record,
    look_at_load,
)
from nasmlcn.hardware._spec import DEVICE_SYNTAX, DeviceSpec, format_devices, parse_devices
from nasmlcn.hardware._units import format_bytes, format_flops, parse_size

__all__ = [
    "BUILTIN_CATALOG",
    "CROWDED",
    "DEVICE_SYNTAX",
    "Catalog",
    "DeviceKind",
    "DeviceSpec",
    "LocalDevice",
    "MachineLoad",
    "available_memory",
    "bounded_wait",
    "busy_cores",
    "busy_record",
    "cpu_model",
    "crowded_record",
    "detect_devices",
    "format_bytes",
    "format_devices",
    "format_flops",
    "load_catalog",
    "look_at_load",
    "parse_devices",
    "parse_size",
    "read_catalog_file",
    "usable_cores",
]
