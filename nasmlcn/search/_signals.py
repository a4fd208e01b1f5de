"""Ctrl-C and SIGTERM during a search: a scheduler's stop (SIGTERM) is handled as
Ctrl-C, and neither may cut the writing-down of the interrupted trial."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


@contextmanager
def no_interrupts() -> Iterator[None]:
    """Ignores Ctrl-C and SIGTERM while the interrupted trial is written down."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {s: signal.signal(s, signal.SIG_IGN) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


class Terminated(KeyboardInterrupt):
    """SIGTERM (a batch scheduler ending the job, ``kill``): handled as Ctrl-C."""

    def __str__(self) -> str:
        return "stopped by SIGTERM"


@contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """Turns SIGTERM into :class:`Terminated` for the block (main thread only), so a
    scheduler's stop fails and queues the running trial, as Ctrl-C does."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, frame: Any) -> None:
        raise Terminated()

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
