"""Peak memory of a stretch of work, above where it stood on entry.

* **Host** (:class:`HostPeak`): the high-water mark of this process's resident
  set. Linux's ``VmHWM`` is the same figure as ``ru_maxrss`` but can be reset
  (``/proc/self/clear_refs``), so whatever the process did before (importing
  torch, earlier work) does not count; and ``ru_maxrss`` of a child started with
  ``vfork`` starts at the *parent's* peak, which ``VmHWM`` does not. The kernel
  keeps the mark, so no peak between two samples is missed. Without ``/proc``
  the figure falls back to ``ru_maxrss`` (less exact: the baseline is then the
  process's earlier peak, not its size on entry). The mark is per process: two
  blocks measured at once in one process disturb each other.
* **CUDA** (:class:`CudaPeak`): the caching allocator's ``max_memory_allocated``
  minus what was allocated on entry (the CUDA context and cuDNN's handles are
  not counted: they are a fixed cost per process).

:class:`PeakMemory` measures several devices at once, host and CUDA alike.
"""

from __future__ import annotations

import gc
import resource
import sys
from collections.abc import Sequence

import torch

from nasmlcn._allocator import release_freed_memory

HOST_METHODS = ("VmHWM", "ru_maxrss")


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


def _maxrss_kib() -> int:
    # ru_maxrss is KiB on Linux, bytes on macOS.
    scale = 1 if sys.platform == "darwin" else 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale // 1024


class HostPeak:
    """Context manager: this process's peak resident memory inside the block.

    Attributes (set on exit; ``method`` and ``baseline_bytes`` on entry):
        peak_bytes: The high-water mark minus ``baseline_bytes`` (>= 0).
        baseline_bytes: Resident size on entry (``VmHWM``), or the process's
            earlier peak (``ru_maxrss``).
        method: ``VmHWM`` or ``ru_maxrss``.
    """

    def __init__(self) -> None:
        self.peak_bytes = 0
        self.baseline_bytes = 0
        self.method = HOST_METHODS[0]

    def __enter__(self) -> HostPeak:
        # memory freed earlier but kept by the allocator (training keeps it) would be
        # reused inside the block without the resident set growing: hand it back first
        gc.collect()
        release_freed_memory()
        exact = _reset_peak_rss()
        baseline = _status_kib("VmRSS")
        if not exact or baseline is None:
            self.method = "ru_maxrss"
            baseline = _maxrss_kib()
        self.baseline_bytes = baseline * 1024
        return self

    def __exit__(self, *exc: object) -> None:
        peak = (_status_kib("VmHWM") or 0) if self.method == "VmHWM" else _maxrss_kib()
        self.peak_bytes = max(peak * 1024 - self.baseline_bytes, 0)


class CudaPeak:
    """Context manager: the CUDA caching allocator's peak on ``device`` inside the
    block, above what was allocated on entry (``peak_bytes``, set on exit)."""

    def __init__(self, device: str) -> None:
        self.name = device
        self.device = torch.device(device)
        self.peak_bytes = 0
        self._before = 0

    def __enter__(self) -> CudaPeak:
        gc.collect()
        torch.cuda.synchronize(self.device)
        torch.cuda.empty_cache()
        self._before = torch.cuda.memory_allocated(self.device)
        torch.cuda.reset_peak_memory_stats(self.device)
        return self

    def __exit__(self, *exc: object) -> None:
        torch.cuda.synchronize(self.device)
        self.peak_bytes = int(torch.cuda.max_memory_allocated(self.device) - self._before)


class PeakMemory:
    """Context manager: peak memory of every device in ``devices`` inside the block.

    ``cuda*`` devices by :class:`CudaPeak`, any other (``cpu``) by one
    :class:`HostPeak` of this process, reported under ``cpu``.

    Attributes:
        per_device: Peak bytes by device name (set on exit).
    """

    def __init__(self, devices: Sequence[str]) -> None:
        if not devices:
            raise ValueError("PeakMemory needs at least one device")
        self._cuda = [CudaPeak(d) for d in dict.fromkeys(devices) if d.startswith("cuda")]
        self._host = HostPeak() if len(self._cuda) < len(set(devices)) else None
        self.per_device: dict[str, int] = {}

    def __enter__(self) -> PeakMemory:
        for c in self._cuda:
            c.__enter__()
        if self._host is not None:
            self._host.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._host is not None:
            self._host.__exit__(*exc)
            self.per_device["cpu"] = self._host.peak_bytes
        for c in self._cuda:
            c.__exit__(*exc)
            self.per_device[c.name] = c.peak_bytes

    @property
    def peak_bytes(self) -> int:
        """The largest device's peak."""
        return max(self.per_device.values(), default=0)
