"""How a worker waits: for the last running trials once the target is claimed,
or for another worker's trial that trains the same model."""

from __future__ import annotations

from collections.abc import Iterator

FIRST_WAIT = 0.25
"""Seconds a worker that has to wait (for the last running trials, for a twin)
waits before it first looks again."""


def waits(longest: float) -> Iterator[float]:
    """The pauses of a waiting worker: :data:`FIRST_WAIT`, doubling up to ``longest``
    (``poll_seconds``), so that a run ends soon after the trial it waited for, and a
    long wait costs few queries."""
    wait = min(FIRST_WAIT, longest)
    while True:
        yield wait
        wait = min(2 * wait, longest)
