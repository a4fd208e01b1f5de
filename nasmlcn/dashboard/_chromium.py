"""One Kaleido browser per process, kept open between image exports.

Kaleido (plotly's static image export) renders in headless Chromium. Its
``write_fig_from_object_sync`` starts a Chromium for each call and closes it
after: about 2 s here for a browser that then renders a figure in 0.2 s. A
process that exports more than once (``nasmlcn reproduce --all`` writes a PNG per
report; a notebook or script that exports study after study; the test suite)
paid those 2 s each time.

:func:`render` starts one Chromium on the first export and keeps it, on an event
loop in a daemon thread of its own, for the exports that follow; it is closed
when the process exits. A render that fails closes it (a browser that crashed is
not reused), and the next export starts a fresh one. A child made by ``fork``
forgets its parent's (``os.register_at_fork``) and starts its own.

Kaleido's own process-wide server (``kaleido.start_sync_server``) is not used:
when Chromium is missing its thread dies on start and every later call waits
for it forever, where this one raises ``ChromeNotFoundError`` to the caller.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


@dataclass
class _Browser:
    """The open browser: its Kaleido, and the event loop and thread it runs on."""

    kaleido: Any
    loop: asyncio.AbstractEventLoop
    thread: threading.Thread


_lock = threading.Lock()
_current: _Browser | None = None


def render(specs: Sequence[dict[str, Any]]) -> None:
    """Writes each ``{"fig", "path", "opts"}`` of ``specs`` (Kaleido's
    ``write_fig_from_object``) with this process's browser, opened if needed.

    Raises:
        choreographer.errors.ChromeNotFoundError: No Chromium to open.
        Exception: Whatever the render raised; the browser is closed first.
    """
    with _lock:
        browser = _browser()
        done = asyncio.run_coroutine_threadsafe(
            browser.kaleido.write_fig_from_object(list(specs)), browser.loop
        )
        try:
            done.result()
        except BaseException:
            _close()
            raise


def is_open() -> bool:
    """Whether this process holds an open browser (for tests and diagnostics)."""
    return _current is not None


def close() -> None:
    """Closes this process's browser, if open (it is closed at exit anyway)."""
    with _lock:
        _close()


def _browser() -> _Browser:
    global _current
    if _current is not None:
        return _current
    from kaleido import Kaleido

    async def start() -> Any:
        # mathjax False: Kaleido would otherwise load MathJax from a CDN, which
        # fails (slowly) offline; no figure uses LaTeX.
        kaleido = Kaleido(mathjax=False)
        await kaleido.open()
        return kaleido

    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="nasmlcn-chromium", daemon=True)
    thread.start()
    try:
        kaleido = asyncio.run_coroutine_threadsafe(start(), loop).result()
    except BaseException:
        _stop(loop, thread)
        raise
    _current = _Browser(kaleido, loop, thread)
    return _current


def _close() -> None:
    global _current
    browser, _current = _current, None
    if browser is None:
        return
    with contextlib.suppress(Exception):  # one that will not close is left to the exit
        asyncio.run_coroutine_threadsafe(browser.kaleido.close(), browser.loop).result(timeout=30)
    _stop(browser.loop, browser.thread)


def _stop(loop: asyncio.AbstractEventLoop, thread: threading.Thread) -> None:
    loop.call_soon_threadsafe(loop.stop)
    thread.join(timeout=10)
    if not thread.is_alive():
        loop.close()


def _forget_in_child() -> None:
    """After ``fork``: the parent's browser and its thread are not this process's
    (and the lock may have been held by a thread the child does not have)."""
    global _lock, _current
    _lock = threading.Lock()
    _current = None


os.register_at_fork(after_in_child=_forget_in_child)
atexit.register(close)
