"""Whether other processes hold this machine's cores, and how many this one may use.

Timings taken while other processes run are wrong by up to 100x on a small machine
(measured here, 2 cores: ``2*mlcn2:4x1`` trained 3,858 images/s idle and 108 beside
other trainings), and the spread of the timed passes stays tight, so nothing in the
figure itself shows it. So nasmlcn looks before it trains or times: the CPU time of
every process on the machine, less that of this process's group (its workers and
children, which share the cores by design), over a short window. Where others hold
cores, the work takes fewer threads (one busy process beside training at two
threads cost 1,140 images/s against 1,608 at one) and the figures are marked.

Linux only (``/proc``); elsewhere the load is unknown and nothing is changed. With
``NASMLCN_IGNORE_LOAD=1`` in the environment nasmlcn does not look (the load is
unknown): for a machine whose other processes are known and accepted, and for the
test suite, whose processes run beside each other by design.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

from nasmlcn.hardware._detect import _cpu_times, usable_cores

CROWDED = 0.5
"""Cores held by other processes, on average over the look, from which a machine is
crowded: half a core is a process busy half the time, enough to stall a step's threads."""

WINDOW = 0.2
"""Seconds of a first look (20 ticks of the kernel's 100 Hz clock a core)."""

STALE = 60.0
"""Seconds after which the last look says too little of now: a fresh look is taken."""

IGNORE = "NASMLCN_IGNORE_LOAD"
"""The environment variable that, set to ``1``, makes nasmlcn not look (see above)."""

_PROC = Path("/proc")


@dataclass(frozen=True)
class LoadSample:
    """The machine's and this process group's CPU time at one moment, in clock ticks."""

    at: float
    busy: int
    own: int


@dataclass(frozen=True)
class MachineLoad:
    """The cores other processes held over a look.

    Attributes:
        cores: The cores this process may run on.
        others: Cores held by processes outside this process's group, on average
            over the look (None: unknown, not Linux).
        seconds: How long the look was.
    """

    cores: int
    others: float | None
    seconds: float

    @property
    def crowded(self) -> bool:
        """Whether other processes held at least :data:`CROWDED` cores."""
        return self.others is not None and self.others >= CROWDED

    @property
    def free(self) -> int:
        """The cores left to this process (at least one)."""
        if self.others is None:
            return self.cores
        return max(1, min(self.cores, round(self.cores - self.others)))

    def to_dict(self) -> dict[str, float | int | None]:
        """What a study, a run folder or ``--json`` stores of it."""
        others = None if self.others is None else round(self.others, 2)
        return {"cores": self.cores, "others_busy_cores": others}

    def held(self) -> str:
        """``other processes held 1.8 of 2 cores``."""
        return f"other processes held {self.others or 0.0:.1f} of {self.cores} cores"


_last: list[tuple[LoadSample, MachineLoad]] = []
"""This process's last look and its sample (empty: none yet)."""


def sample(proc: Path = _PROC) -> LoadSample | None:
    """The machine's busy CPU time and this process group's, now (None: no ``/proc``)."""
    times = _cpu_times(proc / "stat")  # (busy, total): all but idle and iowait
    if times is None:
        return None
    return LoadSample(time.monotonic(), times[0], _group_ticks(proc, os.getpgrp()))


def _group_ticks(proc: Path, group: int) -> int:
    """CPU time of the processes of ``group``, their reaped children's included."""
    total = 0
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            text = (entry / "stat").read_text()
        except OSError:  # it ended meanwhile
            continue
        # after the command's name, which may hold spaces and parentheses
        fields = text[text.rfind(")") + 2 :].split()
        if int(fields[2]) == group:  # pgrp
            total += sum(int(v) for v in fields[11:15])  # utime stime cutime cstime
    return total


def between(start: LoadSample, end: LoadSample) -> MachineLoad:
    """The cores other processes held from ``start`` to ``end``."""
    seconds = max(end.at - start.at, 1e-9)
    ticks = os.sysconf("SC_CLK_TCK") * seconds
    others = max(0, (end.busy - start.busy) - (end.own - start.own)) / ticks
    # the machine's ticks count every core, this process's affinity aside
    return MachineLoad(usable_cores(), min(others, float(os.cpu_count() or 1)), seconds)


def look_at_load(proc: Path = _PROC) -> MachineLoad:
    """The cores other processes hold now. A look costs nothing where this process
    looked :data:`WINDOW` to :data:`STALE` seconds ago: it is the load since then
    (over the training between a trial's looks, say); the first look, or one after a
    long pause, waits :data:`WINDOW` seconds to count ticks."""
    now = None if os.environ.get(IGNORE) == "1" else sample(proc)
    if now is None:
        return MachineLoad(usable_cores(), None, 0.0)
    if _last:
        before, load = _last[0]
        if now.at - before.at < WINDOW:
            return load  # just looked
        if now.at - before.at <= STALE:
            return _remember(now, between(before, now))
    time.sleep(WINDOW)
    end = sample(proc)
    return _remember(end, between(now, end)) if end else MachineLoad(usable_cores(), None, 0.0)


def _remember(at: LoadSample, load: MachineLoad) -> MachineLoad:
    _last[:] = [(at, load)]
    return load


def busy_record(*loads: MachineLoad) -> dict[str, float | int | None]:
    """What a figure's record keeps of the looks around its measurement: the most
    cores other processes held in any of them (``others_busy_cores``; None: unknown)."""
    known = [x for x in loads if x.others is not None]
    if not known:
        return loads[0].to_dict() if loads else {"cores": usable_cores(), "others_busy_cores": None}
    return max(known, key=lambda x: x.others or 0.0).to_dict()


def crowded_record(record: object) -> float | None:
    """The cores other processes held while a stored figure was measured, where they
    made the machine crowded (:data:`CROWDED`); None: not crowded, or not recorded."""
    if not isinstance(record, dict):
        return None
    others = record.get("others_busy_cores")
    if isinstance(others, int | float) and others >= CROWDED:
        return float(others)
    return None


SPIN_COUNT = "10000"
"""How long (in spins, a few microseconds) an idle OpenMP thread of torch's waits for
work before it sleeps (GNU OpenMP's ``GOMP_SPINCOUNT``; its default is 300,000, and an
active wait spins without end). A passive wait (0) cost a fifth of an idle machine's
speed on small MLCNs; 10,000 spins cost nothing measurable there and keep most of the
gain beside other work, where nasmlcn also takes fewer threads
(:func:`nasmlcn.training.share_cores`); ``docs/results.md`` has the figures
(``benchmarks/busy_machine.py``)."""


def bounded_wait() -> None:
    """Torch's OpenMP threads wait :data:`SPIN_COUNT` spins for work, then sleep,
    unless the user chose a wait (``OMP_WAIT_POLICY`` or ``GOMP_SPINCOUNT`` set):
    a spinning thread holds a core other processes need. Set before torch starts
    its thread pool, which reads it once."""
    if "OMP_WAIT_POLICY" not in os.environ:
        os.environ.setdefault("GOMP_SPINCOUNT", SPIN_COUNT)
