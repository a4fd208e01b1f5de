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
does not inherit it: the child starts its own.

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
    """The open browser: its Kaleido, its event loop and thread, its process."""

    kaleido: Any
    loop: asyncio.AbstractEventLoop
    thread: threading.Thread
    pid: int


_lock = threading.Lock()
_open: list[_Browser] = []  # at most one
_open_at_exit: list[bool] = []  # close() registered with atexit


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
    return bool(_open) and _open[0].pid == os.getpid()


def close() -> None:
    """Closes this process's browser, if open (it is closed at exit anyway)."""
    with _lock:
        _close()


def _browser() -> _Browser:
    if _open and _open[0].pid != os.getpid():  # forked: the parent's, not ours
        _open.clear()
    if _open:
        return _open[0]
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
    if not _open_at_exit:
        atexit.register(close)
        _open_at_exit.append(True)
    _open.append(_Browser(kaleido, loop, thread, os.getpid()))
    return _open[0]


def _close() -> None:
    if not _open:
        return
    browser = _open.pop()
    if browser.pid != os.getpid():
        return
    with contextlib.suppress(Exception):  # one that will not close is left to the exit
        asyncio.run_coroutine_threadsafe(browser.kaleido.close(), browser.loop).result(timeout=30)
    _stop(browser.loop, browser.thread)


def _stop(loop: asyncio.AbstractEventLoop, thread: threading.Thread) -> None:
    loop.call_soon_threadsafe(loop.stop)
    thread.join(timeout=10)
    if not thread.is_alive():
        loop.close()
