"""What a calibration records about the machine it measured: host name and CPU
model, each device's relative speed (see "Device speeds" in
:mod:`nasmlcn.costs._calibrated`) and how peak memory was measured."""

from __future__ import annotations

import socket
from collections.abc import Mapping

MEMORY_METHODS = {
    "cpu": "resident-set growth of a fresh process (VmHWM), glibc mmap threshold fixed",
    "cuda": "torch.cuda.max_memory_allocated above what was allocated before",
}


def host_facts() -> dict[str, str]:
    """Host name and CPU model, recorded in a calibration."""
    from nasmlcn.hardware import cpu_model

    return {"hostname": socket.gethostname(), "cpu_model": cpu_model()}


def relative_speeds(
    fc_flops: Mapping[str, float], anchor: str, anchor_speed: float
) -> dict[str, float]:
    """Each device's speed (K80 = 1.0) from its FC FLOP/s, relative to ``anchor``.

    Args:
        fc_flops: Measured FC training FLOP/s by device name.
        anchor: The device whose speed is known.
        anchor_speed: Its speed (its catalog kind's).
    """
    if anchor not in fc_flops:
        raise ValueError(f"anchor {anchor!r} was not measured ({', '.join(fc_flops)})")
    if anchor_speed <= 0 or any(v <= 0 for v in fc_flops.values()):
        raise ValueError("speeds and FLOP/s must be > 0")
    return {name: anchor_speed * flops / fc_flops[anchor] for name, flops in fc_flops.items()}
