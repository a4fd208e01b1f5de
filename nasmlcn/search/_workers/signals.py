"""Ctrl-C and SIGTERM in a pool of workers (:mod:`~nasmlcn.search._workers.pool`):
the parent holds them while its workers start, then passes each on to every worker
(:class:`StopRelay`); a worker takes them once it can stop cleanly
(:func:`take_stop_signals`)."""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
from typing import Any

from nasmlcn._signals import Terminated, raising

_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class StopRelay:
    """Ctrl-C and SIGTERM for a pool's parent, in the main thread (elsewhere only
    :attr:`stop` is made).

    While the workers start, the signals are held (blocked, so none is lost) and
    ignored by the workers, which inherit that: a worker half started would die of
    one with a traceback. Then each signal is noted, set in :attr:`stop` and passed
    on to every live worker, never raised, so the parent always waits for its
    workers to write their trials down. A worker takes the signals once it can
    stop cleanly (:func:`take_stop_signals`), then first looks at :attr:`stop` for
    one that came before. A terminal's Ctrl-C reaches the workers twice (from the
    terminal and from here); a worker takes it once
    (:data:`~nasmlcn._signals.SIGNAL_ECHO_S`). A SIGINT sent to the
    parent alone (``kill -INT``) stops the workers too."""

    def __init__(self) -> None:
        self.stop = multiprocessing.get_context("spawn").Event()
        self.processes: list[Any] = []
        self.interrupted = False  # a Ctrl-C (SIGINT) came
        self._previous: dict[int, Any] = {}
        self._held = False

    def __enter__(self) -> StopRelay:
        import threading

        if threading.current_thread() is not threading.main_thread():
            return self
        if hasattr(signal, "pthread_sigmask"):
            signal.pthread_sigmask(signal.SIG_BLOCK, _STOP_SIGNALS)
            self._held = True
        # workers start with the signals ignored; here they wait (Linux keeps a
        # blocked signal pending whatever its action)
        self._previous = {s: signal.signal(s, signal.SIG_IGN) for s in _STOP_SIGNALS}
        return self

    def forward_to(self, processes: list[Any]) -> None:
        """Passes every later signal on to ``processes``, and those that came while
        they started."""
        self.processes = processes
        if self._previous:
            for sig in _STOP_SIGNALS:
                signal.signal(sig, self._relay)
        self._release()

    def _relay(self, signum: int, frame: Any) -> None:
        self.interrupted = self.interrupted or signum == signal.SIGINT
        self.stop.set()  # before the signal: a worker not yet taking it looks here
        for process in self.processes:
            if process.is_alive() and process.pid is not None:
                with contextlib.suppress(OSError):
                    os.kill(process.pid, signum)

    def _release(self) -> None:
        if self._held:
            self._held = False
            signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOP_SIGNALS)

    def __exit__(self, *exc: object) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        self._release()  # where starting failed: a signal that came meanwhile acts now


def take_stop_signals(stop: Any) -> None:
    """A worker's Ctrl-C and SIGTERM, taken once it can stop cleanly: each raises
    (a SIGTERM as :class:`~nasmlcn._signals.Terminated`), but not its
    echo (:func:`~nasmlcn._signals.raising`). One that came while the
    worker started (``stop``, set by its parent's :class:`StopRelay`) raises here."""
    signal.signal(signal.SIGINT, raising(KeyboardInterrupt))
    signal.signal(signal.SIGTERM, raising(Terminated))
    if hasattr(signal, "pthread_sigmask"):  # a worker may inherit its parent's block
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOP_SIGNALS)
    if stop.is_set():
        raise KeyboardInterrupt
