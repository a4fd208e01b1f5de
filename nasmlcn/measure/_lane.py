"""Step time and peak training memory of single lanes, measured with torch.

A lane is measured alone, as the cost models predict it: one
:class:`~nasmlcn.models._lane.Lane` with a margin loss on its ``(B, K)`` output,
trained with Adam on one fixed random batch (the data do not change the
arithmetic).

* **Step time**: forward + backward + Adam step, after warm-up steps: the
  fastest timed step over interleaved rounds. Other processes on a shared
  machine only ever add time, and on a busy machine they add a lot (a median
  came out 2-6x the idle figure on a 2-core machine at load 5); nothing makes a
  step faster than its own cost. CUDA is synchronised before the clock is read.
* **Peak memory on a CPU** is measured in a fresh Python process per lane, so
  nothing that an earlier lane left in the allocator can hide or inflate it: the
  child imports torch, trains a tiny lane of the same type twice (loading the
  convolution kernels' code and caches), returns freed heap to the system, and
  takes its resident set size as the baseline; the peak is the high-water mark
  of the resident set during a few training steps of the lane, minus that
  baseline. Linux's ``VmHWM`` is the same figure as ``ru_maxrss`` but can be
  reset (``/proc/self/clear_refs``), so the import's own transient peak does not
  count; and ``ru_maxrss`` of a child started with ``vfork`` starts at the
  *parent's* peak, which ``VmHWM`` does not. Without ``/proc`` the child falls
  back to ``ru_maxrss``.

  By default the child runs with glibc's mmap threshold fixed at its initial
  128 KiB (``MALLOC_MMAP_THRESHOLD_``). glibc otherwise raises the threshold
  after freeing a large block, so later blocks come from the heap, which keeps
  freed memory; how much it keeps varies from run to run (the same lane
  measured 36-55 MiB in five runs, against 29 MiB every time with the fixed
  threshold). Fixed, the figure is reproducible and close to what the tensors
  need — the CPU counterpart of ``max_memory_allocated`` on CUDA.
  ``malloc="default"`` measures with glibc's own settings instead.
* **Peak memory on CUDA** is the caching allocator's ``max_memory_allocated``
  minus what was allocated before the lane was built (the CUDA context and
  cuDNN's handles are not counted: they are a fixed cost per process).
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import json
import logging
import os
import resource
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from nasmlcn.costs._context import CostContext
from nasmlcn.costs._samples import LaneSample
from nasmlcn.errors import CalibrationError
from nasmlcn.measure._speed import synchronize
from nasmlcn.models._lane import Lane
from nasmlcn.models._loss import margin_loss
from nasmlcn.specs import LaneSpec, parse_lane

log = logging.getLogger(__name__)

FIXED_MMAP_THRESHOLD = 128 * 1024
"""glibc's initial mmap threshold; set explicitly, it stops glibc from raising it."""

MALLOC_MODES = ("fixed", "default")

Progress = Callable[[str, int, int], None]
"""``progress(phase, done, total)``: called after each lane of a phase."""


class LaneStepper:
    """One lane, its Adam optimizer and a fixed batch on one device."""

    def __init__(
        self, lane: LaneSpec, ctx: CostContext, device: torch.device, seed: int = 0
    ) -> None:
        torch.manual_seed(seed)
        self.device = device
        self.module = Lane(
            lane, ctx.input_shape, ctx.num_classes, ctx.routing, ctx.routing_iterations
        ).to(device)
        self.opt = torch.optim.Adam(self.module.parameters(), lr=1e-3)
        self.x = torch.rand(ctx.batch_size, *ctx.input_shape, device=device)  # (B, C, H, W)
        self.y = torch.randint(0, ctx.num_classes, (ctx.batch_size,), device=device)  # (B,)

    def step(self) -> None:
        self.opt.zero_grad(set_to_none=True)
        out = self.module(self.x)  # (B, K): this lane's entry of every class capsule
        # |entry| stands in for the class capsule's length: the margin loss then
        # back-propagates through the whole lane as it does in an MLCN.
        loss = margin_loss(out.abs(), self.y)
        loss.backward()
        self.opt.step()


@dataclass(frozen=True)
class LaneTiming:
    """Measured training step time of one lane.

    Attributes:
        lane: The lane.
        device: Torch device name.
        seconds: Step time: the fastest timed step.
        steps: Timed steps, all rounds together.
        threads: Torch intra-op threads.
        clock: ``wall`` or ``cpu`` (see :func:`time_lane_step`).
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


def time_lane_step(
    lane: LaneSpec,
    ctx: CostContext,
    device: str = "cpu",
    *,
    warmup: int = 2,
    repeats: int = 5,
    min_seconds: float = 0.3,
    rounds: int = 1,
    threads: int | None = None,
    clock: str = "wall",
    seed: int = 0,
) -> LaneTiming:
    """The training step time of ``lane`` on ``device``.

    Args:
        lane: The lane.
        ctx: Input shape, classes, routing and batch size.
        device: Torch device name.
        warmup: Untimed steps first (kernel selection, allocator, Adam state).
        repeats: At least this many timed steps per round...
        min_seconds: ...and at least this long per round, so fast lanes get
            many chances of an undisturbed step.
        rounds: Rounds of timed steps; the result is the fastest step of all
            (other processes only ever add time, so the least disturbed step is
            the best estimate of the lane's own cost).
        threads: Torch intra-op threads (None: leave as is).
        clock: ``wall`` (elapsed time) or ``cpu`` (this process's CPU time; CPU
            device and 1 thread only). On a machine shared with other
            processes, the CPU time of a single thread is the lane's own cost
            whatever else runs; wall time with several threads is not (one
            descheduled thread stalls the others at every barrier: a 10 ms
            step took 270 ms at load 5 on 2 cores).
        seed: Seed of the weights and the batch.
    """
    return time_lanes(
        [lane],
        ctx,
        device,
        warmup=warmup,
        repeats=repeats,
        min_seconds=min_seconds,
        rounds=rounds,
        threads=threads,
        clock=clock,
        seed=seed,
    )[0]


def time_lanes(
    lanes: Sequence[LaneSpec],
    ctx: CostContext,
    device: str = "cpu",
    *,
    warmup: int = 2,
    repeats: int = 5,
    min_seconds: float = 0.3,
    rounds: int = 2,
    threads: int | None = None,
    clock: str = "wall",
    seed: int = 0,
    progress: Progress | None = None,
) -> list[LaneTiming]:
    """Step times of ``lanes``, measured in interleaved rounds.

    Every round times every lane once (see :func:`time_lane_step` for the
    arguments); a burst of load from another process thus hits one round of a
    lane, not all of them, and the fastest step is kept. The lanes'
    weights and batches stay alive between rounds (they are small; activations
    are freed after each step).
    """
    if rounds < 1 or repeats < 1:
        raise ValueError(f"rounds and repeats must be >= 1, got {rounds} and {repeats}")
    if threads is not None:
        torch.set_num_threads(threads)
    dev = torch.device(device)
    check_clock(clock, dev)
    now = time.process_time if clock == "cpu" else time.perf_counter
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


CLOCKS = ("wall", "cpu")


def check_clock(clock: str, device: torch.device) -> None:
    """Raises ValueError unless ``clock`` can time steps on ``device``."""
    if clock not in CLOCKS:
        raise ValueError(f"clock must be one of {CLOCKS}, got {clock!r}")
    if clock == "cpu" and (device.type != "cpu" or torch.get_num_threads() != 1):
        raise ValueError(
            "the cpu clock times the CPU device with 1 thread only "
            f"(got {device}, {torch.get_num_threads()} threads)"
        )


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

    Raises:
        CalibrationError: The measuring process failed.
    """
    dev = torch.device(device)
    if dev.type == "cuda":
        return _cuda_peak(lane, ctx, dev, steps, seed)
    if dev.type != "cpu":
        raise CalibrationError(f"peak memory can be measured on cpu or cuda, not {device!r}")
    if malloc not in MALLOC_MODES:
        raise ValueError(f"malloc must be one of {MALLOC_MODES}, got {malloc!r}")
    return _cpu_peak_in_child(
        lane, ctx, steps, threads or torch.get_num_threads(), seed, timeout, malloc
    )


def lane_peak_memories(
    lanes: Sequence[LaneSpec],
    ctx: CostContext,
    device: str = "cpu",
    *,
    steps: int = 3,
    threads: int | None = None,
    jobs: int = 1,
    seed: int = 0,
    malloc: str = "fixed",
    progress: Progress | None = None,
) -> list[int]:
    """:func:`lane_peak_memory` of every lane, in order.

    On a CPU, ``jobs`` child processes run at once: each measures only its own
    resident set, so they do not disturb each other's figures (unlike timings).
    """
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


def measure_lanes(
    lanes: Sequence[LaneSpec],
    ctx: CostContext,
    device: str = "cpu",
    *,
    threads: int | None = None,
    warmup: int = 2,
    repeats: int = 5,
    min_seconds: float = 0.3,
    rounds: int = 2,
    clock: str = "wall",
    memory_steps: int = 3,
    memory_jobs: int = 1,
    malloc: str = "fixed",
    seed: int = 0,
    progress: Progress | None = None,
) -> list[LaneSample]:
    """Step time and peak memory of every lane: all timings first, then memory.

    Timings run in this process one lane after another (nothing else of ours
    competes for the cores); memory runs afterwards, in child processes on a CPU.
    """
    timings = time_lanes(
        lanes,
        ctx,
        device,
        warmup=warmup,
        repeats=repeats,
        min_seconds=min_seconds,
        rounds=rounds,
        threads=threads,
        clock=clock,
        seed=seed,
        progress=progress,
    )
    peaks = lane_peak_memories(
        lanes,
        ctx,
        device,
        steps=memory_steps,
        threads=threads,
        jobs=memory_jobs,
        seed=seed,
        malloc=malloc,
        progress=progress,
    )
    return [LaneSample(t.lane, t.seconds, p) for t, p in zip(timings, peaks, strict=True)]


def _cuda_peak(lane: LaneSpec, ctx: CostContext, dev: torch.device, steps: int, seed: int) -> int:
    gc.collect()
    torch.cuda.synchronize(dev)
    torch.cuda.empty_cache()
    before = torch.cuda.memory_allocated(dev)
    torch.cuda.reset_peak_memory_stats(dev)
    stepper = LaneStepper(lane, ctx, dev, seed)
    for _ in range(steps):
        stepper.step()
    torch.cuda.synchronize(dev)
    peak = torch.cuda.max_memory_allocated(dev) - before
    del stepper
    gc.collect()
    torch.cuda.empty_cache()
    return int(peak)


# ---- CPU: one fresh child process per lane ---------------------------------------

_CHILD = "from nasmlcn.measure._lane import _memory_child; _memory_child()"


def _cpu_peak_in_child(
    lane: LaneSpec,
    ctx: CostContext,
    steps: int,
    threads: int,
    seed: int,
    timeout: float,
    malloc: str,
) -> int:
    request = {
        "lane": str(lane),
        "ctx": ctx.to_dict(),
        "steps": steps,
        "threads": threads,
        "seed": seed,
    }
    # The child must import this very nasmlcn, installed or not.
    root = str(Path(__file__).resolve().parents[2])
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
    if malloc == "fixed":
        env["MALLOC_MMAP_THRESHOLD_"] = str(FIXED_MMAP_THRESHOLD)
    else:
        env.pop("MALLOC_MMAP_THRESHOLD_", None)
    try:
        done = subprocess.run(
            [sys.executable, "-c", _CHILD, json.dumps(request)],
            capture_output=True,
            text=True,
            env=env,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        raise CalibrationError(
            f"measuring the memory of lane {lane} took over {timeout:.0f} s"
        ) from None
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise CalibrationError(f"measuring the memory of lane {lane} failed: {tail}")
    try:
        reply = json.loads(done.stdout.strip().splitlines()[-1])
        peak = int(reply["peak_bytes"])
    except (ValueError, KeyError, IndexError):
        raise CalibrationError(
            f"measuring the memory of lane {lane}: unexpected output {done.stdout!r}"
        ) from None
    if reply.get("method") != "VmHWM":
        log.warning("peak memory of %s from %s (less exact)", lane, reply.get("method"))
    return peak


def _status_kib(field: str) -> int | None:
    """A ``kB`` field of ``/proc/self/status`` (Linux), or None."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def _reset_peak_rss() -> bool:
    """Resets the resident-set high-water mark to the current size (Linux >= 4.0)."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as f:
            f.write("5")
        return True
    except OSError:
        return False


def _trim_heap() -> None:
    """Returns freed heap pages to the system (glibc), so the baseline is tight."""
    with contextlib.suppress(OSError, AttributeError):  # not glibc: nothing to trim
        ctypes.CDLL("libc.so.6").malloc_trim(0)


def _memory_child() -> None:
    """Entry point of the measuring child: one JSON request in argv, one JSON line out."""
    request = json.loads(sys.argv[1])
    lane = parse_lane(request["lane"])
    data = dict(request["ctx"])
    data["input_shape"] = tuple(data["input_shape"])
    ctx = CostContext(**data)
    torch.set_num_threads(int(request["threads"]))
    dev = torch.device("cpu")
    seed = int(request["seed"])

    # Warm-up: the same layer types at the smallest size, so that code pages and
    # kernel caches loaded on first use are part of the baseline, not the lane.
    warm_lane = LaneSpec(lane.type, 1, min(lane.depth, 2))
    warm = LaneStepper(warm_lane, CostContext(**{**data, "batch_size": 2}), dev, seed)
    warm.step()
    warm.step()
    del warm
    gc.collect()
    _trim_heap()

    exact = _reset_peak_rss()
    baseline = _status_kib("VmRSS")
    if exact and baseline is not None:
        method = "VmHWM"
    else:
        method = "ru_maxrss"
        # ru_maxrss is KiB on Linux, bytes on macOS.
        scale = 1 if sys.platform == "darwin" else 1024
        baseline = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale // 1024

    stepper = LaneStepper(lane, ctx, dev, seed)
    for _ in range(int(request["steps"])):
        stepper.step()
    if method == "VmHWM":
        peak = _status_kib("VmHWM") or 0
    else:
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale // 1024
    print(
        json.dumps(
            {
                "peak_bytes": max(peak - baseline, 0) * 1024,
                "baseline_bytes": baseline * 1024,
                "method": method,
            }
        )
    )
