"""SQLAlchemy's own report of a cleanup that Ctrl-C or SIGTERM cut short, kept off
the terminal.

A stop raises wherever the main thread is (:mod:`nasmlcn._signals`), and that can
be inside SQLAlchemy: while it reads rows or hands a connection back to its pool
(the rollback that resets it). SQLAlchemy then cleans up itself (it drops the
connection) and logs what happened through its pool's logger, at ERROR, with a
traceback: "Exception during reset or similar" (the stop itself), or "Error closing
cursor" (closing the cursor of a connection the stop had dropped). With no logging
set up, Python prints that on stderr, under the run's one-line report of the stop.
:func:`quiet_stop_cleanup` drops those records, and only those: a record whose
exception is a stop, or came while one was being handled.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine


class _StopCleanup(logging.Filter):
    """Drops a record whose exception is, or was raised while handling, a stop."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        seen = 0
        while error is not None and seen < 20:  # a chain of contexts, never a loop
            if isinstance(error, KeyboardInterrupt):  # Ctrl-C, SIGTERM (Terminated)
                return False
            error, seen = error.__context__, seen + 1
        return True


_FILTER = _StopCleanup()


def quiet_stop_cleanup(engine: Engine) -> None:
    """Keeps the reports of cleanups a stop cut short out of ``engine``'s pool log
    (the logger of its pool's class, once)."""
    logger = engine.pool.logger
    logger = getattr(logger, "logger", logger)  # an echoing pool wraps its logger
    if isinstance(logger, logging.Logger) and _FILTER not in logger.filters:
        logger.addFilter(_FILTER)
