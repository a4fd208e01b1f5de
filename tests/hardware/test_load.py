"""Whether other processes hold the cores (``look_at_load``): the CPU time of every
process on the machine less this process group's. Timings taken beside other
trainings were wrong by up to 100x with tight spreads, and nothing said so."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from nasmlcn.hardware import MachineLoad, busy_record, crowded_record, look_at_load
from nasmlcn.hardware._load import between, sample
from tests._busy import spinning_elsewhere

SPIN = [sys.executable, "-c", "while True: pass"]


@pytest.fixture(autouse=True)
def _looking(monkeypatch: pytest.MonkeyPatch) -> None:
    """The look the test run turns off (tests/conftest.py), on."""
    monkeypatch.delenv("NASMLCN_IGNORE_LOAD", raising=False)


@pytest.fixture
def other_process() -> Iterator[int]:
    """A process of another session (as another user's training is) that spins."""
    with spinning_elsewhere(0.3) as pid:
        yield pid


def _fresh_look() -> MachineLoad:
    time.sleep(0.25)  # past the last look's window: the load since then
    return look_at_load()


def test_a_process_of_another_session_holds_a_core(other_process: object) -> None:
    look_at_load()
    load = _fresh_look()
    assert load.others is not None
    assert load.others >= 0.7
    assert load.crowded
    assert load.free == max(1, round(load.cores - load.others))
    assert crowded_record(busy_record(load)) == pytest.approx(load.others, abs=0.01)


def test_this_process_group_s_own_children_are_not_others() -> None:
    # the search's worker processes share the cores by design
    look_at_load()
    baseline = _fresh_look().others or 0.0
    child = subprocess.Popen(SPIN)  # same process group
    try:
        time.sleep(0.3)
        look_at_load()
        with_child = _fresh_look().others or 0.0
    finally:
        child.kill()
        child.wait()
    assert with_child - baseline < 0.5


def _proc(root: Path, busy: int, own: int, other: int) -> Path:
    """A fake ``/proc``: the machine's busy ticks, one process of this group and one
    of another group (its name with a space and a parenthesis, as names may have)."""
    root.mkdir(exist_ok=True)
    (root / "stat").write_text(f"cpu  {busy} 0 0 1000 5 0 0 0 0 0\ncpu0 1\n")
    group = os.getpgrp()
    for pid, pgrp, ticks in ((11, group, own), (12, group + 1, other)):
        (root / str(pid)).mkdir(exist_ok=True)
        rest = f"S 1 {pgrp} 1 0 -1 0 0 0 0 0 {ticks} 0 0 0 20 0 1 0"
        (root / str(pid) / "stat").write_text(f"{pid} (a (b) c) {rest}\n")
    return root


def test_the_others_are_the_machine_s_ticks_less_this_group_s(tmp_path: Path) -> None:
    start = sample(_proc(tmp_path, busy=1000, own=100, other=500))
    end = sample(_proc(tmp_path, busy=1000 + 250, own=150, other=700))
    assert start is not None
    assert end is not None
    start = type(start)(0.0, start.busy, start.own)
    end = type(end)(1.0, end.busy, end.own)
    # 250 busy ticks in a second, 50 of them this group's: 2 cores at 100 Hz
    load = between(start, end)
    assert load.others == pytest.approx(200 / os.sysconf("SC_CLK_TCK"))


def test_without_proc_the_load_is_unknown_and_nothing_is_crowded(tmp_path: Path) -> None:
    assert sample(tmp_path / "none") is None
    assert not MachineLoad(2, None, 0.0).crowded
    assert MachineLoad(2, None, 0.0).free == 2
    assert crowded_record(None) is None
    assert crowded_record({"cores": 2, "others_busy_cores": 0.2}) is None


def test_nasmlcn_bounds_openmp_s_spinning_unless_the_user_chose() -> None:
    # a spinning OpenMP thread holds a core other processes need
    code = "import os, nasmlcn; print(os.environ.get('GOMP_SPINCOUNT'))"
    chosen = ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")
    env = {k: v for k, v in os.environ.items() if k not in chosen}

    def spins(**given: str) -> str:
        run = [sys.executable, "-c", code]
        return subprocess.run(run, env={**env, **given}, capture_output=True, text=True).stdout

    assert spins().strip() == "10000"
    assert spins(GOMP_SPINCOUNT="5").strip() == "5"
    assert spins(OMP_WAIT_POLICY="ACTIVE").strip() == "None"


def test_nasmlcn_ignore_load_turns_the_look_off(
    other_process: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NASMLCN_IGNORE_LOAD", "1")
    assert look_at_load().others is None
