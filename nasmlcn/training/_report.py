"""What a parallel training job returns: the usual training report and how the job
was parallelised (the ``parallel`` section of ``result.json``)."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from nasmlcn.training._job import TrainReport


@dataclass(frozen=True)
class ParallelReport(TrainReport):
    """A :class:`~nasmlcn.training.TrainReport` and how the job was parallelised.

    Attributes:
        mode: ``lane-parallel`` or ``data-parallel``.
        launcher: ``in-process``, ``spawn`` or ``torchrun``.
        processes: Number of processes (ranks).
        devices: The device of every lane (in-process) or of rank 0 (multi-process);
            ``device`` (the report's) names every device used.
        assignment: Lane -> device index (in-process) or rank (lane-parallel ranks).
        extra: Backend, threads, communication figures.
    """

    mode: str = ""
    launcher: str = ""
    processes: int = 1
    devices: tuple[str, ...] = ()
    assignment: tuple[int, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def of(
        cls,
        report: TrainReport,
        mode: str,
        launcher: str,
        processes: int,
        devices: tuple[str, ...],
        assignment: tuple[int, ...] = (),
        extra: dict[str, Any] | None = None,
    ) -> ParallelReport:
        """``report`` with how its job was parallelised."""
        same = {f.name: getattr(report, f.name) for f in fields(TrainReport)}
        return cls(
            **same,
            mode=mode,
            launcher=launcher,
            processes=processes,
            devices=devices,
            assignment=assignment,
            extra=dict(extra or {}),
        )

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
        return {**super().to_dict(), "parallel": self.parallel_dict()}
