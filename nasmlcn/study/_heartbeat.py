"""A running trial's heartbeat: a thread that tells the storage "still alive".

Every trial beats from the moment its worker takes it until it is told, proxy
trials included; the first beat is recorded before the trial is handed over (see
the runner), so a worker that dies at any moment leaves a trial that the others
see go stale (:mod:`nasmlcn.study._recovery`).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from nasmlcn._optuna_compat import record_heartbeat

logger = logging.getLogger(__name__)


@contextmanager
def heartbeat(storage: Any, trial_id: int) -> Iterator[None]:
    """Beats every heartbeat interval of ``storage`` while the block runs."""
    interval = storage.get_heartbeat_interval() if hasattr(storage, "record_heartbeat") else None
    if interval is None:
        yield
        return
    stop = threading.Event()

    def beat() -> None:
        while not stop.wait(interval):
            try:
                record_heartbeat(storage, trial_id)
            except Exception:  # a missed beat is not worth failing the trial
                logger.debug("heartbeat failed", exc_info=True)

    thread = threading.Thread(target=beat, name=f"heartbeat-{trial_id}", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
