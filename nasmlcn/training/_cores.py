"""The threads that training and timing take on a machine other processes share.

Before it trains or times, nasmlcn looks at the machine
(:func:`nasmlcn.hardware.look_at_load`). Where other processes hold cores, torch
takes only the cores left (``torch.set_num_threads``: one busy process beside a
two-thread training cost 1,140 images/s against 1,608 at one thread), and one
warning says so and that timings taken now are unreliable; the caller stores the
look beside its figures, so that reports can mark them.
"""

from __future__ import annotations

import logging
import os

import torch

from nasmlcn.hardware import MachineLoad, look_at_load

logger = logging.getLogger(__name__)

_said: set[int] = set()
"""The thread counts this process has warned of: a search says it once, not for
every trial and timing."""

_lowered_from: list[int] = []
"""The threads torch had before :func:`share_cores` lowered them (empty: not lowered),
given back once the machine is free again."""


def share_cores(what: str, device: str | torch.device = "cpu") -> MachineLoad:
    """Looks at the machine before ``what`` (``training``, ``timing inference``)
    runs on ``device``; where other processes hold cores and it runs on the CPU,
    takes fewer threads (never more than it had, and not where the user set
    ``OMP_NUM_THREADS``) and warns once. Returns the look."""
    load = look_at_load()
    if not load.crowded:
        if _lowered_from:  # the others are gone: the threads it had
            torch.set_num_threads(_lowered_from.pop())
        return load
    threads = torch.get_num_threads()
    on_cpu = torch.device(device).type == "cpu"
    if on_cpu and "OMP_NUM_THREADS" not in os.environ and load.free < threads:
        if not _lowered_from:
            _lowered_from.append(threads)
        threads = load.free
        torch.set_num_threads(threads)
    if threads not in _said:
        _said.add(threads)
        logger.warning(
            "%s (seen before %s): nasmlcn trains and times with %d thread%s, and its "
            "timings taken meanwhile are unreliable and marked so",
            load.held(),
            what,
            threads,
            "" if threads == 1 else "s",
        )
    return load
