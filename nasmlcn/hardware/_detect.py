"""The devices present on this machine (what training can run on)."""

from __future__ import annotations

import os
import platform
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nasmlcn.hardware._catalog import Catalog, load_catalog


@dataclass(frozen=True)
class LocalDevice:
    """A device on this machine.

    Attributes:
        name: The torch device name (``cpu``, ``cuda:0``).
        description: Model name as the system reports it.
        memory_bytes: Total memory (host RAM for ``cpu``).
        catalog_kind: The catalog kind it matches (``H100``), or None.
        cores: CPU cores usable by this process (``cpu`` only).
    """

    name: str
    description: str
    memory_bytes: int
    catalog_kind: str | None
    cores: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "memory_bytes": self.memory_bytes,
            "catalog_kind": self.catalog_kind,
            "cores": self.cores,
        }


def cpu_model() -> str:
    """This machine's CPU model name (``/proc/cpuinfo``; else what ``platform`` says)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _host_memory() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 0


def _meminfo_available() -> int | None:
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_AVPHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def _cgroup_headroom() -> int | None:
    """Bytes this process's cgroup may still use, if it has a memory limit: the limit
    minus the usage, plus the inactive file cache the kernel reclaims first."""
    for folder, limit_name, usage_name, cache_key in (
        ("/sys/fs/cgroup", "memory.max", "memory.current", "inactive_file"),  # v2
        (
            "/sys/fs/cgroup/memory",
            "memory.limit_in_bytes",
            "memory.usage_in_bytes",
            "total_inactive_file",
        ),  # v1
    ):
        try:
            with open(f"{folder}/{limit_name}", encoding="ascii") as f:
                limit = f.read().strip()
            with open(f"{folder}/{usage_name}", encoding="ascii") as f:
                usage = int(f.read().strip())
        except (OSError, ValueError):
            continue
        # "max" (v2) or a page-rounded 2**63 (v1) mean no limit.
        if not limit.isdigit() or int(limit) >= 2**62:
            return None
        cache = 0
        try:
            with open(f"{folder}/memory.stat", encoding="ascii") as f:
                for line in f:
                    key, _, value = line.partition(" ")
                    if key == cache_key:
                        cache = int(value)
        except (OSError, ValueError):
            pass
        return max(int(limit) - usage + cache, 0)
    return None


def available_memory(device: str) -> int | None:
    """Bytes free for a new training job on a local torch device, or None if unknown.

    ``cpu``: the kernel's ``MemAvailable`` (what can be allocated without swapping),
    capped by the cgroup's headroom in a container. ``cuda:N``: the free memory
    the driver reports (``torch.cuda.mem_get_info``).
    """
    if device.startswith("cuda"):
        import torch

        if not torch.cuda.is_available():
            return None
        free, _total = torch.cuda.mem_get_info(torch.device(device))
        return int(free)
    if device != "cpu":
        return None  # mps, xpu, ...: not measured here
    from nasmlcn._allocator import release_freed_memory

    release_freed_memory()  # what an earlier job freed but this process kept is free
    known = [v for v in (_meminfo_available(), _cgroup_headroom()) if v is not None]
    return min(known) if known else None


def usable_cores() -> int:
    """CPU cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def _cpu_times(path: Path) -> tuple[int, int] | None:
    """(busy, total) jiffies of all CPUs from ``/proc/stat``'s first line."""
    try:
        fields = path.read_text().split("\n", 1)[0].split()
    except OSError:
        return None
    if not fields or fields[0] != "cpu":
        return None
    values = [int(v) for v in fields[1:]]
    idle = sum(values[3:5])  # idle and iowait
    return sum(values) - idle, sum(values)


def busy_cores(window: float = 1.0, *, stat: Path = Path("/proc/stat")) -> float | None:
    """Cores busy over the next ``window`` seconds, this process included (Linux's
    ``/proc/stat``; None elsewhere). Unlike the 1-minute load average, it does not
    count a job that ended a moment ago: a timing benchmark started right after
    another one is not taken for a busy machine."""
    before = _cpu_times(stat)
    if before is None:
        return None
    time.sleep(window)
    after = _cpu_times(stat)
    if after is None or after[1] <= before[1]:
        return None
    share = (after[0] - before[0]) / (after[1] - before[1])
    return share * (os.cpu_count() or 1)


def match_kind(description: str, catalog: Catalog) -> str | None:
    """The catalog kind whose name appears in a device's model name, longest first."""
    words = description.upper().replace("-", " ").split()
    for name in sorted(catalog, key=len, reverse=True):
        if name.upper() in words or any(w.startswith(name.upper()) for w in words):
            return name
    return None


def _gpu_may_be_present() -> bool:
    """False only where no GPU torch could use can be present: Linux without NVIDIA's or
    AMD's device nodes, or ``CUDA_VISIBLE_DEVICES`` set to hide them all. Anywhere else
    (another system, a torch already imported) torch is asked."""
    import sys

    if "torch" in sys.modules or not sys.platform.startswith("linux"):
        return True
    if os.environ.get("CUDA_VISIBLE_DEVICES", "unset").strip() in ("", "-1"):
        return False
    nodes = ("/dev/nvidiactl", "/dev/nvidia0", "/proc/driver/nvidia", "/dev/kfd", "/dev/dxg")
    return any(os.path.exists(node) for node in nodes)


def detect_devices(catalog: Catalog | None = None) -> list[LocalDevice]:
    """The CPU and every CUDA device torch can see (no torch: the CPU only)."""
    catalog = catalog if catalog is not None else load_catalog()
    devices = [LocalDevice("cpu", cpu_model(), _host_memory(), "cpu", usable_cores())]
    if not _gpu_may_be_present():
        return devices  # importing torch to be told so took 4 of `nasmlcn devices`' 5 s
    try:
        import torch
    except ImportError:  # pragma: no cover - torch is a dependency
        return devices
    if torch.cuda.is_available():
        for i in range(torch.cuda.device_count()):
            props = torch.cuda.get_device_properties(i)
            devices.append(
                LocalDevice(
                    f"cuda:{i}",
                    props.name,
                    int(props.total_memory),
                    match_kind(props.name, catalog),
                )
            )
    return devices
