"""Step time and peak training memory of single lanes, measured with torch.

:func:`measure_lanes` is the calibration's measurement of its lanes: their step
times (:mod:`nasmlcn.measure._lane_timing`) first, then their peak memory
(:mod:`nasmlcn.measure._lane_memory`). What one measured step is:
:mod:`nasmlcn.measure._stepper`.
"""

from __future__ import annotations

from collections.abc import Sequence

from nasmlcn.costs import CostContext, LaneSample
from nasmlcn.measure._lane_memory import DEFAULT_PEAKS, PeakSettings, lane_peak_memories
from nasmlcn.measure._lane_timing import DEFAULT_TIMING, StepTiming, time_lanes
from nasmlcn.measure._stepper import Progress
from nasmlcn.specs import LaneSpec


def measure_lanes(
    lanes: Sequence[LaneSpec],
    ctx: CostContext,
    device: str = "cpu",
    *,
    timing: StepTiming = DEFAULT_TIMING,
    memory: PeakSettings = DEFAULT_PEAKS,
    threads: int | None = None,
    seed: int = 0,
    progress: Progress | None = None,
) -> list[LaneSample]:
    """Step time and peak memory of every lane: all timings first, then memory
    (``timing``: see :class:`StepTiming`; ``memory``: see :class:`PeakSettings`).

    Timings run in this process one lane after another (nothing else of ours
    competes for the cores); memory runs afterwards, in child processes on a CPU.
    """
    timings = time_lanes(
        lanes, ctx, device, timing=timing, threads=threads, seed=seed, progress=progress
    )
    peaks = lane_peak_memories(
        lanes, ctx, device, memory=memory, threads=threads, seed=seed, progress=progress
    )
    return [LaneSample(t.lane, t.seconds, p) for t, p in zip(timings, peaks, strict=True)]
