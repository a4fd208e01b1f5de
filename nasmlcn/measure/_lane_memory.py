"""Peak training memory of single lanes (see :mod:`nasmlcn.measure._stepper`).

* **On a CPU** each lane is measured in a fresh child process
  (:mod:`nasmlcn.measure._child`, where the method and its malloc settings are
  described): the high-water mark of its resident set during a few training
  steps, above a warmed-up baseline.
* **On CUDA** it is the caching allocator's ``max_memory_allocated`` during the
  steps, minus what was allocated before the lane was built
  (:class:`~nasmlcn.measure._peak.CudaPeak`).
"""

from __future__ import annotations

import gc
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import torch

from nasmlcn.costs import CostContext
from nasmlcn.errors import CalibrationError
from nasmlcn.measure._peak import CudaPeak
from nasmlcn.measure._stepper import LaneStepper, Progress
from nasmlcn.specs import LaneSpec


def lane_peak_memory(
    lane: LaneSpec,
    ctx: CostContext,
    device: str = "cpu",
    *,
    steps: int = 3,
    threads: int | None = None,
    seed: int = 0,
    timeout: float = 600.0,
    malloc: str = "fixed",
) -> int:
    """Peak training memory of ``lane`` in bytes (see the module docstring).

    Args:
        malloc: On a CPU, ``fixed`` or ``default`` glibc mmap threshold (see
            :mod:`nasmlcn.measure._child`).

    Raises:
        CalibrationError: The measuring process failed.
    """
    dev = torch.device(device)
    if dev.type == "cuda":
        return _cuda_peak(lane, ctx, device, steps, seed)
    if dev.type != "cpu":
        raise CalibrationError(f"peak memory can be measured on cpu or cuda, not {device!r}")
    # Imported here: the package must not import the child's module (see there).
    from nasmlcn.measure._child import MemoryRequest, peak_in_child

    request = MemoryRequest(lane, ctx, steps, threads or torch.get_num_threads(), seed)
    return peak_in_child(request, timeout=timeout, malloc=malloc)


@dataclass(frozen=True)
class PeakSettings:
    """How :func:`lane_peak_memories` measures every lane.

    Attributes:
        steps: Training steps of each lane.
        jobs: On a CPU, child processes at once: each measures only its own
            resident set, so they do not disturb each other's figures (unlike
            timings). One at a time on CUDA.
        malloc: On a CPU, ``fixed`` or ``default`` glibc mmap threshold (see
            :mod:`nasmlcn.measure._child`).
    """

    steps: int = 3
    jobs: int = 1
    malloc: str = "fixed"


DEFAULT_PEAKS = PeakSettings()


def lane_peak_memories(
    lanes: Sequence[LaneSpec],
    ctx: CostContext,
    device: str = "cpu",
    *,
    memory: PeakSettings = DEFAULT_PEAKS,
    threads: int | None = None,
    seed: int = 0,
    progress: Progress | None = None,
) -> list[int]:
    """:func:`lane_peak_memory` of every lane, in order (``memory``: the steps, the
    child processes at once and the malloc setting)."""
    steps, jobs, malloc = memory.steps, memory.jobs, memory.malloc
    out: list[int] = [0] * len(lanes)
    done = 0

    def one(i: int) -> None:
        nonlocal done
        out[i] = lane_peak_memory(
            lanes[i], ctx, device, steps=steps, threads=threads, seed=seed, malloc=malloc
        )
        done += 1
        if progress is not None:
            progress("memory", done, len(lanes))

    if device.startswith("cuda") or jobs <= 1:
        for i in range(len(lanes)):
            one(i)
        return out
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        list(pool.map(one, range(len(lanes))))
    return out


def _cuda_peak(lane: LaneSpec, ctx: CostContext, device: str, steps: int, seed: int) -> int:
    with CudaPeak(device) as cuda:
        stepper = LaneStepper(lane, ctx, cuda.device, seed)
        for _ in range(steps):
            stepper.step()
    del stepper
    gc.collect()
    torch.cuda.empty_cache()
    return cuda.peak_bytes
