"""Reading a clock around device work: which clocks can time what, and waiting
for the device before the clock is read.

Shared by every timing here (FC speed, lane steps, inference), so that all of
them refuse the same unreliable combinations.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import torch

CLOCKS = ("wall", "cpu")


def synchronize(device: torch.device) -> None:
    """Waits for queued kernels (CUDA launches are asynchronous)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def check_clock(clock: str, device: torch.device) -> None:
    """Raises ValueError unless ``clock`` can time steps on ``device``."""
    if clock not in CLOCKS:
        raise ValueError(f"clock must be one of {CLOCKS}, got {clock!r}")
    if clock == "cpu" and (device.type != "cpu" or torch.get_num_threads() != 1):
        raise ValueError(
            "the cpu clock times the CPU device with 1 thread only "
            f"(got {device}, {torch.get_num_threads()} threads)"
        )


def clock_function(clock: str, device: torch.device) -> Callable[[], float]:
    """The function that reads ``clock`` (checked with :func:`check_clock`)."""
    check_clock(clock, device)
    return time.process_time if clock == "cpu" else time.perf_counter
