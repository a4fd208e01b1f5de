"""Reading a profile of training steps (``benchmarks/gpu_speed.py``): kernels and
launches per step, GPU-busy time against wall time, the optimizer's share and the
top kernels, from ``torch.profiler`` over a few steps.

The optimizer's share is the time inside its ``Optimizer.step#...`` range (host
time, which a GPU step waits on when launches set the pace) and the kernels launched
from inside that range (matched through the op that launched them, on the same
thread). "Kernels" are the CUDA device events but copies and fills (``Memcpy``,
``Memset``); GPU-busy time is the sum of every device event's duration, copies
included. Without CUDA events (a CPU run) the GPU figures are None.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import torch
from torch.autograd import DeviceType

TOP_KERNELS = 5
NAME_WIDTH = 100
"""Kernel names (C++ templates) are cut to this many characters."""


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _cut(name: str) -> str:
    return name if len(name) <= NAME_WIDTH else name[: NAME_WIDTH - 3] + "..."


def _is_copy(name: str) -> bool:
    return name.startswith(("Memcpy", "Memset"))


def _is_launch(name: str) -> bool:
    return name.startswith(("cuda", "cu")) and "Launch" in name


def profile_steps(
    step: Callable[[], object], steps: int, device: torch.device
) -> tuple[dict[str, Any], str]:
    """``steps`` calls of ``step`` under the profiler: their figures per step and a
    table of the top ops (host and device) as text."""
    activities = [torch.profiler.ProfilerActivity.CPU]
    if device.type == "cuda":
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    _sync(device)
    with torch.profiler.profile(activities=activities) as prof:
        start = time.perf_counter()
        for _ in range(steps):
            step()
        _sync(device)
        wall = time.perf_counter() - start
    summary = summarise(list(prof.events()), steps, wall, cuda=device.type == "cuda")
    sort = "self_device_time_total" if device.type == "cuda" else "self_cpu_time_total"
    table = prof.key_averages().table(sort_by=sort, row_limit=12, max_name_column_width=60)
    return summary, table


def summarise(events: list[Any], steps: int, wall: float, cuda: bool) -> dict[str, Any]:
    """Per-step figures of a profile's ``events`` (``FunctionEvent``) over ``steps``
    steps that took ``wall`` seconds."""
    host = [e for e in events if e.device_type == DeviceType.CPU]
    device = [e for e in events if e.device_type == DeviceType.CUDA]
    ranges = [e for e in host if e.name.startswith("Optimizer.step#")]
    opt_host_us = sum(r.time_range.elapsed_us() for r in ranges)

    def in_optimizer(e: Any) -> bool:
        return any(
            e.thread == r.thread and r.time_range.start <= e.time_range.start <= r.time_range.end
            for r in ranges
        )

    out: dict[str, Any] = {
        "steps": steps,
        "wall_ms_per_step": 1e3 * wall / steps,
        "optimizer_host_ms_per_step": opt_host_us / 1e3 / steps,
        "optimizer_host_share": opt_host_us / 1e6 / wall if wall > 0 else None,
        "launches_per_step": None,
        "kernels_per_step": None,
        "gpu_busy_ms_per_step": None,
        "gpu_busy_share": None,
        "optimizer_kernels_per_step": None,
        "optimizer_gpu_ms_per_step": None,
        "optimizer_gpu_share": None,
        "top_kernels": None,
    }
    if not cuda or not device:
        return out
    busy_us = sum(e.time_range.elapsed_us() for e in device)
    kernels = [e for e in device if not _is_copy(e.name)]
    # kernels launched from inside the optimizer's range: torch attaches each device
    # event to the host op that launched it (FunctionEvent.kernels)
    opt_kernels = [k for e in host if e.kernels and in_optimizer(e) for k in e.kernels]
    opt_us = sum(k.duration for k in opt_kernels)
    totals: Counter[str] = Counter()
    counts: Counter[str] = Counter()
    for e in kernels:
        totals[e.name] += e.time_range.elapsed_us()
        counts[e.name] += 1
    out.update(
        launches_per_step=sum(_is_launch(e.name) for e in host) / steps,
        kernels_per_step=len(kernels) / steps,
        gpu_busy_ms_per_step=busy_us / 1e3 / steps,
        gpu_busy_share=busy_us / 1e6 / wall if wall > 0 else None,
        optimizer_kernels_per_step=sum(not _is_copy(k.name) for k in opt_kernels) / steps,
        optimizer_gpu_ms_per_step=opt_us / 1e3 / steps,
        optimizer_gpu_share=opt_us / busy_us if busy_us > 0 else None,
        top_kernels=[
            {
                "name": _cut(name),
                "ms_per_step": us / 1e3 / steps,
                "count_per_step": counts[name] / steps,
                "share_of_busy": us / busy_us,
            }
            for name, us in totals.most_common(TOP_KERNELS)
        ],
    )
    return out


def _num(value: float | None, spec: str) -> str:
    return "n/a" if value is None else format(value, spec)


def describe(path: str, figures: dict[str, Any]) -> list[str]:
    """A profile's figures as a few lines of text."""
    f = figures
    lines = [
        f"{path}: {f['steps']} steps, {f['wall_ms_per_step']:.2f} ms wall per step (profiled)",
        f"  launches {_num(f['launches_per_step'], '.0f')}, kernels "
        f"{_num(f['kernels_per_step'], '.0f')} per step; GPU busy "
        f"{_num(f['gpu_busy_ms_per_step'], '.2f')} ms per step "
        f"({_num(f['gpu_busy_share'] and 100 * f['gpu_busy_share'], '.0f')} % of wall)",
        f"  optimizer: {f['optimizer_host_ms_per_step']:.2f} ms host per step "
        f"({_num(f['optimizer_host_share'] and 100 * f['optimizer_host_share'], '.0f')} % of "
        f"wall), {_num(f['optimizer_kernels_per_step'], '.0f')} kernels, "
        f"{_num(f['optimizer_gpu_ms_per_step'], '.3f')} ms GPU "
        f"({_num(f['optimizer_gpu_share'] and 100 * f['optimizer_gpu_share'], '.1f')} % of busy)",
    ]
    if "unprofiled_ms_per_step" in f:
        share = f["gpu_busy_share_unprofiled"]
        busy = "" if share is None else f": GPU busy {100 * share:.0f} % of it"
        lines.append(f"  unprofiled step {f['unprofiled_ms_per_step']:.2f} ms (timed){busy}")
    for k in f["top_kernels"] or ():
        lines.append(
            f"  {k['ms_per_step']:8.3f} ms {k['count_per_step']:6.1f}x "
            f"{100 * k['share_of_busy']:4.0f} %  {k['name']}"
        )
    return lines
