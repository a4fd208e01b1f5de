"""The child process that measures one lane's peak training memory on a CPU.

Each lane is measured in a fresh Python process, so nothing that an earlier lane
left in the allocator can hide or inflate its figure. The parent runs
``python -m nasmlcn.measure._child <request>`` (:func:`peak_in_child`); the
request is one JSON object in ``argv`` (``lane``, ``ctx``, ``steps``,
``threads``, ``seed``) and the child prints one JSON line (``peak_bytes``,
``baseline_bytes``, ``method``). Both sides of that protocol are in this module.

The child imports torch, trains a tiny lane of the same type twice (loading the
convolution kernels' code and caches), returns freed heap to the system, and
measures the peak resident set of a few training steps of the lane above that
baseline (:class:`~nasmlcn.measure._peak.HostPeak`).

By default the child runs with glibc's mmap threshold fixed at its initial
128 KiB (``MALLOC_MMAP_THRESHOLD_``). glibc otherwise raises the threshold
after freeing a large block, so later blocks come from the heap, which keeps
freed memory; how much it keeps varies from run to run (the same lane measured
36-55 MiB in five runs, against 29 MiB every time with the fixed threshold).
Fixed, the figure is reproducible and close to what the tensors need — the CPU
counterpart of ``max_memory_allocated`` on CUDA. ``malloc="default"`` measures
with glibc's own settings instead.

The package does not import this module (:mod:`~nasmlcn.measure._lane_memory`
imports it when it first measures): run with ``-m``, it would otherwise be in
``sys.modules`` before it runs as ``__main__``, which runpy warns about.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import json
import logging
import os
import subprocess
import sys
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import torch

from nasmlcn._exit import before_exit
from nasmlcn.costs import CostContext
from nasmlcn.errors import CalibrationError
from nasmlcn.measure._peak import HOST_METHODS, HostPeak
from nasmlcn.measure._stepper import LaneStepper
from nasmlcn.specs import LaneSpec, parse_lane

log = logging.getLogger(__name__)

FIXED_MMAP_THRESHOLD = 128 * 1024
"""glibc's initial mmap threshold; set explicitly, it stops glibc from raising it."""

MALLOC_MODES = ("fixed", "default")

CHILD_MODULE = "nasmlcn.measure._child"


@dataclass(frozen=True)
class MemoryRequest:
    """What the child measures: ``steps`` training steps of ``lane``."""

    lane: LaneSpec
    ctx: CostContext
    steps: int
    threads: int
    seed: int

    def to_json(self) -> str:
        return json.dumps(
            {
                "lane": str(self.lane),
                "ctx": self.ctx.to_dict(),
                "steps": self.steps,
                "threads": self.threads,
                "seed": self.seed,
            }
        )

    @classmethod
    def from_json(cls, text: str) -> MemoryRequest:
        data: dict[str, Any] = json.loads(text)
        return cls(
            parse_lane(data["lane"]),
            CostContext(**data["ctx"]),
            int(data["steps"]),
            int(data["threads"]),
            int(data["seed"]),
        )


@dataclass(frozen=True)
class MemoryReply:
    """The child's answer, in bytes; ``method`` as :class:`HostPeak`'s."""

    peak_bytes: int
    baseline_bytes: int
    method: str

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> MemoryReply:
        data = json.loads(text)
        return cls(int(data["peak_bytes"]), int(data["baseline_bytes"]), str(data["method"]))


def peak_in_child(request: MemoryRequest, *, timeout: float, malloc: str) -> int:
    """Peak memory of ``request``'s lane in bytes, measured in a fresh child process.

    Raises:
        ValueError: ``malloc`` is not one of :data:`MALLOC_MODES`.
        CalibrationError: The child failed, timed out or answered nonsense.
    """
    if malloc not in MALLOC_MODES:
        raise ValueError(f"malloc must be one of {MALLOC_MODES}, got {malloc!r}")
    lane = request.lane
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
            [sys.executable, "-m", CHILD_MODULE, request.to_json()],
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
        reply = MemoryReply.from_json(done.stdout.strip().splitlines()[-1])
    except (ValueError, KeyError, IndexError, TypeError):
        raise CalibrationError(
            f"measuring the memory of lane {lane}: unexpected output {done.stdout!r}"
        ) from None
    if reply.method != HOST_METHODS[0]:
        log.warning("peak memory of %s from %s (less exact)", lane, reply.method)
    return reply.peak_bytes


def _trim_heap() -> None:
    """Returns freed heap pages to the system (glibc), so the baseline is tight."""
    with contextlib.suppress(OSError, AttributeError):  # not glibc: nothing to trim
        ctypes.CDLL("libc.so.6").malloc_trim(0)


def measure(request: MemoryRequest) -> MemoryReply:
    """The child's side: warms up, then measures the lane in this process."""
    torch.set_num_threads(request.threads)
    dev = torch.device("cpu")
    lane = request.lane

    # Warm-up: the same layer types at the smallest size, so that code pages and
    # kernel caches loaded on first use are part of the baseline, not the lane.
    warm_lane = LaneSpec(lane.type, 1, min(lane.depth, 2))
    warm_ctx = replace(request.ctx, batch_size=2)
    warm = LaneStepper(warm_lane, warm_ctx, dev, request.seed)
    warm.step()
    warm.step()
    del warm
    gc.collect()
    _trim_heap()

    with HostPeak() as host:
        stepper = LaneStepper(lane, request.ctx, dev, request.seed)
        for _ in range(request.steps):
            stepper.step()
    return MemoryReply(host.peak_bytes, host.baseline_bytes, host.method)


def main(argv: list[str] | None = None) -> None:
    """Entry point of the child: one JSON request in argv, one JSON line out."""
    args = sys.argv[1:] if argv is None else argv
    print(measure(MemoryRequest.from_json(args[0])).to_json())


if __name__ == "__main__":
    main()
    before_exit()
