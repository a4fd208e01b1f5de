"""``busy_cores``: the cores in use now, from ``/proc/stat`` (a timing benchmark's
idle check; the 1-minute load average still counts a job that just ended)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import ClassVar

import pytest

from nasmlcn.hardware import busy_cores

LINUX = Path("/proc/stat").is_file()


@pytest.mark.skipif(not LINUX, reason="/proc/stat is Linux's")
def test_a_spinning_process_counts_as_a_busy_core() -> None:
    spin = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        busy = busy_cores(0.5)
    finally:
        spin.kill()
        spin.wait()
    assert busy is not None
    assert 0.7 <= busy <= (os.cpu_count() or 1) + 0.05


class _Readings(type(Path())):  # type: ignore[misc]
    """A stat file whose successive reads give the next reading."""

    readings: ClassVar[list[str]] = []

    def read_text(self, *args: object, **kwargs: object) -> str:
        return self.readings.pop(0)


def test_the_jiffies_of_two_readings_give_the_busy_share(monkeypatch: pytest.MonkeyPatch) -> None:
    # between the readings 100 of 200 jiffies were busy (user + system; iowait is
    # idle): half of 4 CPUs
    monkeypatch.setattr(os, "cpu_count", lambda: 4)
    _Readings.readings = [
        "cpu  100 0 100 700 100 0 0 0 0 0\ncpu0 1 2 3\n",
        "cpu  150 0 150 780 120 0 0 0 0 0\ncpu0 1 2 3\n",
    ]
    assert busy_cores(0.0, stat=_Readings("/proc/stat")) == pytest.approx(2.0)


def test_no_stat_file_is_no_figure(tmp_path: Path) -> None:
    assert busy_cores(0.0, stat=tmp_path / "absent") is None
    (tmp_path / "odd").write_text("intr 1 2 3\n")
    assert busy_cores(0.0, stat=tmp_path / "odd") is None
