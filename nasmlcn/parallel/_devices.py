"""Which local device runs each target device's lanes (pure Python).

``--devices`` names the hardware a model is designed for; ``--run-on`` (search)
or ``--device`` (train) says where training runs here:

- ``auto``: the target devices are *present* when every target GPU kind is
  matched by a distinct local CUDA device of that catalog kind (``2xH100`` on a
  two-H100 machine -> ``cuda:0``, ``cuda:1``) and every ``cpu`` target by the CPU;
  otherwise they are absent (None) and the caller trains on one device.
- ``cpu``: every target device is the CPU.
- ``cuda:0,cuda:1,...``: target device ``j`` runs on entry ``j mod n``.

Importing this module does not import torch; :func:`map_targets` with ``auto``
asks :func:`nasmlcn.hardware.detect_devices`, which does.
"""

from __future__ import annotations

from collections.abc import Sequence

from nasmlcn.errors import DeviceError
from nasmlcn.hardware import DeviceSpec, LocalDevice

CPU_KIND = "cpu"


def parse_run_on(text: str) -> tuple[str, ...]:
    """``auto``, ``cpu`` or a comma-separated list of torch device names.

    Raises:
        DeviceError: Empty, or ``auto`` mixed with device names.
    """
    names = tuple(part.strip() for part in str(text).split(",") if part.strip())
    if not names:
        raise DeviceError(f"{text!r}: expected auto, cpu, cuda or cuda:0,cuda:1,...")
    if "auto" in names and len(names) > 1:
        raise DeviceError(f"{text!r}: 'auto' cannot be combined with device names")
    # Names are checked by torch where they are used (mps, xpu and others exist too).
    return names


def map_targets(
    targets: Sequence[DeviceSpec],
    run_on: str,
    local: Sequence[LocalDevice] | None = None,
) -> tuple[str, ...] | None:
    """The local torch device of every target device, or None when absent.

    Args:
        targets: The target pool (``parse_devices``).
        run_on: ``auto``, ``cpu``, ``cuda`` or ``cuda:0,cuda:1,...``.
        local: This machine's devices (default: detected; only ``auto`` reads it).

    Raises:
        DeviceError: Malformed ``run_on``.
    """
    names = parse_run_on(run_on)
    if names != ("auto",):
        return tuple(names[j % len(names)] for j in range(len(targets)))
    if local is None:
        from nasmlcn.hardware import detect_devices

        local = detect_devices()
    free: dict[str, list[str]] = {}
    for device in local:
        if device.name.startswith("cuda") and device.catalog_kind:
            free.setdefault(device.catalog_kind.upper(), []).append(device.name)
    mapped: list[str] = []
    for target in targets:
        if target.kind.lower() == CPU_KIND:
            mapped.append("cpu")
            continue
        candidates = free.get(target.kind.upper())
        if not candidates:
            return None
        mapped.append(candidates.pop(0))
    return tuple(mapped)


def lane_devices(assignment: Sequence[int], device_map: Sequence[str]) -> tuple[str, ...]:
    """Each lane's local device: the local device of its target device."""
    return tuple(device_map[j] for j in assignment)


def is_spread(devices: Sequence[str]) -> bool:
    """True when the lanes use more than one distinct local device."""
    return len(set(devices)) > 1
