"""Ctrl-C and SIGTERM in a pool of workers (:mod:`~nasmlcn.search._workers.pool`):
the parent passes each on to every worker and notes it for those still starting
(:class:`StopRelay`); a worker takes them once it can stop cleanly
(:func:`take_stop_signals`); a worker whose parent is gone stops as on SIGTERM
(:func:`stop_with_parent`)."""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import threading
from collections.abc import Iterator
from typing import Any

from nasmlcn._signals import Terminated, raising, stopped_by_sigterm, took_parent_gone

_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class StopRelay:
    """Ctrl-C and SIGTERM for a pool's parent, in the main thread (elsewhere only
    :attr:`stop` is made: a shared integer, the number of the first signal that
    came, 0 before).

    Each signal is noted, set in :attr:`stop` and passed on to every worker started
    (:attr:`processes`), never raised, so the parent always waits for its workers to
    write their trials down. A worker starts with the signals ignored (the parent
    ignores them for the instant of each start, :meth:`starting`, and the worker
    inherits that): one half started would die of a Ctrl-C with a traceback. It
    takes them once it can stop cleanly (:func:`take_stop_signals`), after looking
    at :attr:`stop` for one that came before. A terminal's Ctrl-C reaches the workers
    twice (from the terminal and from here); a worker takes it once
    (:data:`~nasmlcn._signals.SIGNAL_ECHO_S`). A SIGINT sent to the parent alone
    (``kill -INT``) stops the workers too. (Blocking the signals instead would not
    hold them: a native thread of a library (likely OpenBLAS) takes a signal the main
    thread blocks, and ``multiprocessing`` unblocks them when it starts its
    resource tracker.)"""

    def __init__(self) -> None:
        self.stop = multiprocessing.get_context("spawn").RawValue("i", 0)
        self.processes: list[Any] = []
        self.interrupted = False  # a Ctrl-C (SIGINT) came
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> StopRelay:
        if threading.current_thread() is threading.main_thread():
            self._previous = {s: signal.signal(s, self._relay) for s in _STOP_SIGNALS}
        return self

    @contextlib.contextmanager
    def starting(self, process: Any) -> Iterator[None]:
        """Starts ``process`` (in the block) with the signals ignored, then passes
        them on to it too."""
        if self._previous:
            for sig in _STOP_SIGNALS:
                signal.signal(sig, signal.SIG_IGN)
        try:
            yield
        finally:
            if self._previous:
                for sig in _STOP_SIGNALS:
                    signal.signal(sig, self._relay)
        self.processes.append(process)

    def _relay(self, signum: int, frame: Any) -> None:
        self.interrupted = self.interrupted or signum == signal.SIGINT
        if not self.stop.value:  # before the signal: a worker not yet taking it looks here
            self.stop.value = signum
        for process in self.processes:
            if process.is_alive() and process.pid is not None:
                with contextlib.suppress(OSError):
                    os.kill(process.pid, signum)

    def __exit__(self, *exc: object) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)


def take_stop_signals(stop: Any) -> None:
    """A worker's Ctrl-C and SIGTERM, taken once it can stop cleanly: each raises
    (a SIGTERM as :class:`~nasmlcn._signals.Terminated`), but not its
    echo (:func:`~nasmlcn._signals.raising`). One that came while the
    worker started (``stop``, set by its parent's :class:`StopRelay`) raises here."""
    signal.signal(signal.SIGINT, raising(KeyboardInterrupt))
    signal.signal(signal.SIGTERM, raising(stopped_by_sigterm))
    if hasattr(signal, "pthread_sigmask"):  # a worker may inherit its parent's block
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOP_SIGNALS)
    if stop.value == signal.SIGTERM:
        raise Terminated()
    if stop.value:
        raise KeyboardInterrupt


def stop_with_parent() -> None:
    """Sends this worker a SIGTERM once its parent process has ended (``kill -9``, an
    out-of-memory kill, a test driver's timeout): it stops as a scheduler's stop
    stops it, its running trial failed and queued again, where it used to run the
    study to its ``--trials`` with no one to show its trials. A daemon thread waits
    on the parent's sentinel (``multiprocessing.parent_process``), which needs no
    polling; nothing is started in a process that is not a ``multiprocessing``
    child."""
    parent = multiprocessing.parent_process()
    if parent is None:
        return

    def watch() -> None:
        parent.join()  # returns once the parent is gone
        took_parent_gone()
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, name="nasmlcn-parent-watch", daemon=True).start()


def parent_alive() -> bool:
    """Whether this process's ``multiprocessing`` parent still runs (True where it
    has none)."""
    parent = multiprocessing.parent_process()
    return parent is None or parent.is_alive()
