"""Peak-memory primitives: a known allocation is seen, and marks reset between blocks."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from nasmlcn.measure._peak import CudaPeak, HostPeak, PeakMemory

MIB = 1024 * 1024
_linux = pytest.mark.skipif(
    not Path("/proc/self/clear_refs").exists(), reason="needs Linux's resettable VmHWM"
)


def resettable(test):  # type: ignore[no-untyped-def]
    # slow: in a long pytest process, freed pages from earlier tests stay resident and
    # are reused, so VmHWM may not rise; run alone (pytest -m slow tests/measure).
    return pytest.mark.slow(_linux(test))


@resettable
def test_host_peak_sees_a_block_and_forgets_it_in_the_next() -> None:
    with HostPeak() as big:
        x = torch.ones(16 * MIB)  # 64 MiB, every page written
        del x
    assert big.method == "VmHWM"
    assert 63 * MIB <= big.peak_bytes < 96 * MIB
    # The 64 MiB are freed and the mark is reset: ru_maxrss would still count them.
    with HostPeak() as small:
        y = torch.ones(2 * MIB)  # 8 MiB
        del y
    assert 7 * MIB <= small.peak_bytes < 32 * MIB


@resettable
def test_peak_memory_reports_the_host_under_cpu() -> None:
    with PeakMemory(["cpu", "cpu"]) as peak:
        x = torch.ones(8 * MIB)  # 32 MiB
        del x
    assert list(peak.per_device) == ["cpu"]
    assert peak.peak_bytes == peak.per_device["cpu"] >= 31 * MIB


def test_peak_memory_needs_a_device() -> None:
    with pytest.raises(ValueError, match="at least one device"):
        PeakMemory([])


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_peak_is_the_allocation_above_what_was_there() -> None:
    keep = torch.ones(MIB, device="cuda:0")  # allocated before: not counted
    with PeakMemory(["cuda:0", "cpu"]) as peak, CudaPeak("cuda:0") as alone:
        x = torch.ones(16 * MIB, device="cuda:0")  # 64 MiB, a multiple of the block size
        del x
    assert alone.peak_bytes == 64 * MIB
    assert peak.per_device["cuda:0"] == 64 * MIB
    del keep


@_linux
def test_memory_training_kept_is_handed_back_before_a_block_is_measured() -> None:
    """Training keeps freed memory (nasmlcn._allocator.keep_freed_memory); a block
    that reuses it would not grow the resident set and would measure 0. Run in a
    fresh process: this one's earlier tests left their own freed memory."""
    import subprocess
    import sys

    code = (
        "import torch\n"
        "from nasmlcn._allocator import keep_freed_memory\n"
        "from nasmlcn.measure import PeakMemory\n"
        "assert keep_freed_memory()\n"
        "x = torch.ones(50_000_000); del x\n"  # 200 MB, freed and kept
        "with PeakMemory(['cpu']) as m:\n"
        "    y = torch.ones(25_000_000); del y\n"  # 100 MB inside the block
        "print(m.per_device['cpu'])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert int(out.stdout.split()[-1]) >= 95 * MIB
