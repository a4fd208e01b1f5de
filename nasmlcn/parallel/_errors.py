"""The error of multi-process training (a rank failed, died or stopped answering)."""

from __future__ import annotations

from nasmlcn.errors import TrainingError


class DistributedError(TrainingError):
    """A rank of a multi-process job failed, exited early or stopped answering.

    Raised on the surviving ranks when a collective fails (a peer closed its
    connection, or the process group's timeout passed) and by the launcher when a
    worker process exits without a result. Being a :class:`TrainingError`, the CLI
    prints it as one line.
    """
