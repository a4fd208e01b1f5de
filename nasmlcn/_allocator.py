"""Keeping freed memory in the process, so training steps do not page-fault.

glibc serves every allocation above its mmap threshold (128 KiB to 32 MiB) with a
fresh ``mmap`` and gives it back on ``free``, so a tensor of tens of megabytes
(a fused lane group's feature maps: ``100 x 512 x 20 x 20`` floats is 80 MB) is
new memory at every step, and the kernel zeroes it page by page on first touch:
allocating it costs more than computing on it (``torch.ones`` of 80 MB: 39 ms
against 3.8 ms once freed memory is kept, one thread on this machine). Training
allocates the same sizes at every step, so :func:`keep_freed_memory` asks glibc to
serve large blocks from its heap and never to trim it: after the first step they
come back from the free lists. The cost is that the process keeps its peak
memory until it exits, which a training process does anyway.

Measuring a block's peak memory (:class:`nasmlcn.measure.PeakMemory`) first hands
the kept memory back (:func:`release_freed_memory`), or the block would reuse it
without the resident set growing and measure nothing.

A no-op where the C library is not glibc (macOS, musl, Windows).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools

_M_TRIM_THRESHOLD = -1
_M_MMAP_MAX = -4


@functools.cache
def _libc() -> ctypes.CDLL | None:
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    except OSError:
        return None


def release_freed_memory() -> bool:
    """Gives the freed memory the process keeps back to the system (glibc's
    ``malloc_trim(0)``); True when it could."""
    trim = getattr(_libc(), "malloc_trim", None)
    if trim is None:
        return False
    trim.argtypes = (ctypes.c_size_t,)
    trim.restype = ctypes.c_int
    trim(0)
    return True


@functools.cache
def keep_freed_memory() -> bool:
    """Makes glibc keep freed memory for reuse (once per process); True when it could."""
    mallopt = getattr(_libc(), "mallopt", None)
    if mallopt is None:
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    # no mmap for large blocks (they come from the heap), and never trim the heap
    return bool(mallopt(_M_MMAP_MAX, 0)) and bool(mallopt(_M_TRIM_THRESHOLD, 2**31 - 1))
