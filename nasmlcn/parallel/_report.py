"""What a parallel training job returns: the usual training report and how the job
was parallelised (the ``parallel`` section of ``result.json``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from nasmlcn.training import TrainReport


@dataclass(frozen=True)
class ParallelReport:
    """A :class:`~nasmlcn.training.TrainReport` and how the job was parallelised.

    Attributes:
        report: The usual report (its ``device`` names every device used).
        mode: ``lane-parallel`` or ``data-parallel``.
        launcher: ``in-process``, ``spawn`` or ``torchrun``.
        processes: Number of processes (ranks).
        devices: The device of every lane (in-process) or of rank 0 (multi-process).
        assignment: Lane -> device index (in-process) or rank (lane-parallel ranks).
        extra: Backend, threads, communication figures.
    """

    report: TrainReport
    mode: str
    launcher: str
    processes: int
    devices: tuple[str, ...]
    assignment: tuple[int, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)

    def parallel_dict(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "launcher": self.launcher,
            "processes": self.processes,
            "devices": list(self.devices),
            "assignment": list(self.assignment),
            **self.extra,
        }

    def to_dict(self) -> dict[str, Any]:
        """``TrainReport.to_dict()`` plus a ``parallel`` section."""
        return {**self.report.to_dict(), "parallel": self.parallel_dict()}
