"""A process that spins on a core as another user's training would: in a session of
its own and not a child of the test's process (a shell starts it in the background
and exits), so that its CPU time never comes back to the test's process as a reaped
child's (``cutime``), which nasmlcn counts as this process group's own."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator


@contextlib.contextmanager
def spinning_elsewhere(settle: float = 0.5) -> Iterator[int]:
    """Starts the spinner, waits ``settle`` seconds, yields its pid, kills it."""
    spin = f"exec {sys.executable} -c 'while True: pass'"
    started = subprocess.run(
        ["sh", "-c", f"{spin} >/dev/null 2>&1 & echo $!"],
        capture_output=True,
        text=True,
        check=True,
        start_new_session=True,
    )
    pid = int(started.stdout.strip())
    time.sleep(settle)
    try:
        yield pid
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
