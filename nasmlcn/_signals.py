"""Ctrl-C and SIGTERM as a long job takes them (a search, a training): SIGTERM (a
scheduler's stop) raised as :class:`Terminated`, a kind of ``KeyboardInterrupt``, so
that it stops the job as Ctrl-C does; a signal's echo ignored; and blocks in which
a stop waits (``stops_held``) or is ignored (``no_interrupts``). Main thread only:
elsewhere each does nothing."""

from __future__ import annotations

import math
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

EXIT_INTERRUPTED = 128 + signal.SIGINT
EXIT_TERMINATED = 128 + signal.SIGTERM
"""A command's exit status after Ctrl-C (130) or SIGTERM (143): 128 + the signal's
number, as a shell reports a process the signal ended."""


@contextmanager
def no_interrupts() -> Iterator[None]:
    """Ignores Ctrl-C and SIGTERM for the block (a stopped trial written down)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {s: signal.signal(s, signal.SIG_IGN) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


@contextmanager
def stops_held() -> Iterator[None]:
    """Ctrl-C and SIGTERM wait for the end of the block (main thread only), then
    act as they would have: claiming a trial (ask, sample, heartbeat) is never cut
    in half, which left a RUNNING trial that nothing stopped."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    came: list[int] = []
    previous: dict[int, Any] = {
        s: signal.signal(s, lambda signum, frame: came.append(signum))
        for s in (signal.SIGINT, signal.SIGTERM)
    }
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        for sig in dict.fromkeys(came):  # once each: a relayed Ctrl-C comes twice
            handler = previous[sig]
            if callable(handler):
                handler(sig, None)
            elif handler == signal.SIG_DFL:
                signal.raise_signal(sig)


class Terminated(KeyboardInterrupt):
    """SIGTERM (a batch scheduler ending the job, ``kill``): handled as Ctrl-C."""

    def __str__(self) -> str:
        return "stopped by SIGTERM"


class ParentGone(Terminated):
    """The SIGTERM a pool's worker sends itself once the search's process that
    started it has ended (``kill -9``, an out-of-memory kill): stopped as by SIGTERM,
    with the reason its trial records."""

    def __str__(self) -> str:
        return "stopped: the search's process that started this worker ended"


_PARENT_GONE = threading.Event()


def took_parent_gone() -> None:
    """Notes that this worker's parent ended: the SIGTERM it sends itself next raises
    :class:`ParentGone`."""
    _PARENT_GONE.set()


_SIGTERM_RAISED = threading.Event()
"""A SIGTERM raised :class:`Terminated` since :func:`sigterm_raised` began."""


def stopped_by_sigterm() -> Terminated:
    """What a SIGTERM raises: :class:`Terminated`, or :class:`ParentGone` in a worker
    whose parent ended (:func:`took_parent_gone`); noted for :func:`sigterm_raised`."""
    _SIGTERM_RAISED.set()
    return ParentGone() if _PARENT_GONE.is_set() else Terminated()


@contextmanager
def sigterm_raised() -> Iterator[Callable[[], bool]]:
    """For a whole command: SIGTERM raises :class:`Terminated` at any moment (main
    thread only), not only inside a job's :func:`stops_raised`; one that came before
    (a search's setup or forecast) killed the process without a word. Yields whether
    a SIGTERM raised since the block began, through any handler: a caller to which
    the stop came back as an exit status only (Typer turns every
    ``KeyboardInterrupt`` into a bare 130) tells a SIGTERM from a Ctrl-C by it."""
    _SIGTERM_RAISED.clear()
    if threading.current_thread() is not threading.main_thread():
        yield _SIGTERM_RAISED.is_set
        return
    previous = signal.signal(signal.SIGTERM, raising(stopped_by_sigterm))
    try:
        yield _SIGTERM_RAISED.is_set
    finally:
        signal.signal(signal.SIGTERM, previous)


def stop_kind(stop: KeyboardInterrupt) -> str:
    """How a run says it was stopped: ``terminated`` (SIGTERM) or ``interrupted``."""
    return "terminated" if isinstance(stop, Terminated) else "interrupted"


SIGNAL_ECHO_S = 1.0
"""A stop signal within this many seconds of the last one is its echo, and ignored:
a terminal's Ctrl-C reaches a pool's worker twice (from the terminal and from its
parent, :class:`~nasmlcn.search._run.pool.StopRelay`), as a scheduler's SIGTERM
to the whole job may; the second would cut short the writing down of the trial the
first stopped. A later one (a second Ctrl-C) raises again."""


_raised: list[Callable[[], BaseException]] = []
"""The stops :func:`raising`'s handlers raised since :func:`lost_stops` began."""


def raising(error: Callable[[], BaseException]) -> Callable[[int, Any], None]:
    """A signal handler that raises ``error()``, except for an echo
    (:data:`SIGNAL_ECHO_S`), and notes it for :func:`lost_stops`."""
    last = -math.inf

    def handler(signum: int, frame: Any) -> None:
        nonlocal last
        now = time.monotonic()
        if now - last < SIGNAL_ECHO_S:
            return
        last = now
        _raised.append(error)
        raise error()

    return handler


def stop_pending() -> bool:
    """Whether a handler of :func:`raising` raised a stop that :func:`lost_stops`'s
    check has not raised again yet: an error caught meanwhile may be that stop, turned
    into a library's own error."""
    return bool(_raised)


@contextmanager
def lost_stops() -> Iterator[Callable[[], None]]:
    """For a loop that ends at its first stop: yields a check that raises again a stop
    that :func:`raising` raised and Python swallowed. A handler runs wherever the main
    thread is; in a finalizer or a weakref callback (SQLAlchemy's, when the garbage
    collector runs) its exception is lost, and the job ran on. Call the check where
    the loop can stop cleanly: a stop raised since the block began, while the loop
    still runs, was lost. Inside, Python's report of such a stop ("Exception ignored
    in ...", a traceback) is not printed: the check raises it again, and the run
    reports it in one line. A handler's exception can also come out as a library's own
    error (SIGTERM inside a commit: Optuna's ``StorageInternalError``); where an error
    is caught, the check says whether it was a stop."""
    _raised.clear()

    def check() -> None:
        if _raised:
            error = _raised[-1]
            _raised.clear()
            raise error()

    previous = sys.unraisablehook

    def quiet(unraisable: Any) -> None:
        if not (_raised and isinstance(unraisable.exc_value, KeyboardInterrupt)):
            previous(unraisable)

    sys.unraisablehook = quiet
    try:
        yield check
    finally:
        sys.unraisablehook = previous
        _raised.clear()


@contextmanager
def stops_raised() -> Iterator[None]:
    """For the block (main thread only): SIGTERM raises :class:`Terminated`, so a
    scheduler's stop fails and queues the running trial as Ctrl-C does, and Ctrl-C
    raises ``KeyboardInterrupt`` as ever; both through :func:`raising`, so that
    :func:`lost_stops` can raise again one that Python swallowed. (Python's own
    Ctrl-C handler notes nothing: a Ctrl-C raised inside SQLAlchemy's weakref callback
    was lost and the search ran on.) A Ctrl-C handler other than Python's own (a
    pool's relay, a caller's) is left in place."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {signal.SIGTERM: signal.signal(signal.SIGTERM, raising(stopped_by_sigterm))}
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        previous[signal.SIGINT] = signal.signal(signal.SIGINT, raising(KeyboardInterrupt))
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
