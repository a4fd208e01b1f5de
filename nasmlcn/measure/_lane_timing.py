"""Training step time of single lanes (see :mod:`nasmlcn.measure._stepper`).

The step is forward + backward + Adam step, after warm-up steps; the figure is
the fastest timed step over interleaved rounds. Other processes on a shared
machine only ever add time, and on a busy machine they add a lot (a median came
out 2-6x the idle figure on a 2-core machine at load 5); nothing makes a step
faster than its own cost. CUDA is synchronised before the clock is read.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from nasmlcn.costs import CostContext
from nasmlcn.measure._clock import clock_function, synchronize
from nasmlcn.measure._stepper import LaneStepper, Progress
from nasmlcn.specs import LaneSpec

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class LaneTiming:
    """Measured training step time of one lane.

    Attributes:
        lane: The lane.
        device: Torch device name.
        seconds: Step time: the fastest timed step.
        steps: Timed steps, all rounds together.
        threads: Torch intra-op threads.
        clock: ``wall`` or ``cpu`` (see :class:`StepTiming`).
    """

    lane: LaneSpec
    device: str
    seconds: float
    steps: int
    threads: int
    clock: str = "wall"

    def to_dict(self) -> dict[str, Any]:
        return {
            "lane": str(self.lane),
            "device": self.device,
            "seconds": self.seconds,
            "steps": self.steps,
            "threads": self.threads,
            "clock": self.clock,
        }


@dataclass(frozen=True)
class StepTiming:
    """How step times are taken.

    Attributes:
        warmup: Untimed steps first (kernel selection, allocator, Adam state).
        repeats: At least this many timed steps per round...
        min_seconds: ...and at least this long per round, so fast lanes get
            many chances of an undisturbed step.
        rounds: Rounds of timed steps; the result is the fastest step of all
            (other processes only ever add time, so the least disturbed step is
            the best estimate of the lane's own cost).
        clock: ``wall`` (elapsed time) or ``cpu`` (this process's CPU time; CPU
            device and 1 thread only). On a machine shared with other
            processes, the CPU time of a single thread is the lane's own cost
            whatever else runs; wall time with several threads is not (one
            descheduled thread stalls the others at every barrier: a 10 ms
            step took 270 ms at load 5 on 2 cores).

    Raises:
        ValueError: ``rounds`` or ``repeats`` below 1.
    """

    warmup: int = 2
    repeats: int = 5
    min_seconds: float = 0.3
    rounds: int = 2
    clock: str = "wall"

    def __post_init__(self) -> None:
        if self.rounds < 1 or self.repeats < 1:
            raise ValueError(
                f"rounds and repeats must be >= 1, got {self.rounds} and {self.repeats}"
            )


DEFAULT_TIMING = StepTiming()
ONE_ROUND = StepTiming(rounds=1)
"""What :func:`time_lane_step` times by default: one round of the default steps."""


def time_lane_step(
    lane: LaneSpec,
    ctx: CostContext,
    device: str = "cpu",
    *,
    timing: StepTiming = ONE_ROUND,
    threads: int | None = None,
    seed: int = 0,
) -> LaneTiming:
    """The training step time of ``lane`` on ``device``.

    Args:
        lane: The lane.
        ctx: Input shape, classes, routing and batch size.
        device: Torch device name.
        timing: Warm-up, repeats, rounds and clock (see :class:`StepTiming`).
        threads: Torch intra-op threads (None: leave as is).
        seed: Seed of the weights and the batch.
    """
    return time_lanes([lane], ctx, device, timing=timing, threads=threads, seed=seed)[0]


def time_lanes(
    lanes: Sequence[LaneSpec],
    ctx: CostContext,
    device: str = "cpu",
    *,
    timing: StepTiming = DEFAULT_TIMING,
    threads: int | None = None,
    seed: int = 0,
    progress: Progress | None = None,
) -> list[LaneTiming]:
    """Step times of ``lanes``, measured in interleaved rounds.

    Every round times every lane once (``timing``: see :class:`StepTiming`
    for each setting); a burst of load from another process thus hits one round of a
    lane, not all of them, and the fastest step is kept. The lanes'
    weights and batches stay alive between rounds (they are small; activations
    are freed after each step).
    """
    warmup, repeats, min_seconds, rounds, clock = (
        timing.warmup,
        timing.repeats,
        timing.min_seconds,
        timing.rounds,
        timing.clock,
    )
    if threads is not None:
        torch.set_num_threads(threads)
    dev = torch.device(device)
    now = clock_function(clock, dev)
    steppers: list[LaneStepper | None] = [None] * len(lanes)
    best = [float("inf")] * len(lanes)
    steps = [0] * len(lanes)
    total = rounds * len(lanes)
    for r in range(rounds):
        for i, lane in enumerate(lanes):
            stepper = steppers[i]
            if stepper is None:
                stepper = steppers[i] = LaneStepper(lane, ctx, dev, seed)
            # Later rounds re-warm once: other lanes have run since on this device.
            for _ in range(warmup if r == 0 else min(warmup, 1)):
                stepper.step()
            synchronize(dev)
            times: list[float] = []
            started = time.perf_counter()
            while len(times) < repeats or time.perf_counter() - started < min_seconds:
                t0 = now()
                stepper.step()
                synchronize(dev)
                times.append(now() - t0)
            best[i] = min(best[i], *times)
            steps[i] += len(times)
            if progress is not None:
                progress("time", r * len(lanes) + i + 1, total)
    threads_used = torch.get_num_threads()
    for lane, seconds in zip(lanes, best, strict=True):
        log.info("%s: %.4f s/step on %s", lane, seconds, device)
    return [
        LaneTiming(lane, device, best[i], steps[i], threads_used, clock)
        for i, lane in enumerate(lanes)
    ]
