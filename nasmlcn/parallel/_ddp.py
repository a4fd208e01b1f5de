"""The data-parallel baseline (the thesis's ``mlcn-data``): DDP of the whole model.

Every rank holds a full replica and trains on its share of each global batch;
DDP averages the gradients of *all* parameters with bucketed all-reduces that
overlap the backward pass. Per step that moves every parameter (2.5 M floats,
about 10 MB, for 8 lanes of width 4 with the full decoder) against the lane-
parallel path's 32 KB of lane outputs, and each rank works on half a batch, which
uses a core less efficiently than a full one.

With equal shards the averaged gradient equals the full batch's; lane-dropout
masks are drawn per shard, so the random stream differs from one-process training.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
from torch.nn.parallel import DistributedDataParallel

from nasmlcn.data import Split
from nasmlcn.errors import DistributedError


@dataclass
class AllReduceStats:
    """What the gradient all-reduces of one rank took (host wall time).

    Bucket all-reduces run in the background while backward continues, so their
    durations overlap compute. ``busy_seconds`` is the time at least one was in
    flight; ``exposed_seconds`` the part after the last bucket was launched, when
    backward had nothing left to compute and only waited.

    Attributes:
        busy_seconds: Union of the all-reduce intervals.
        exposed_seconds: Time from the last bucket's launch to the last finish,
            summed over steps.
        calls: Bucket all-reduces.
        bytes: Bytes all-reduced.
    """

    busy_seconds: float = 0.0
    exposed_seconds: float = 0.0
    calls: int = 0
    bytes: int = 0

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._intervals: list[list[float]] = []

    def reset(self) -> None:
        self.busy_seconds = self.exposed_seconds = 0.0
        self.calls = self.bytes = 0
        self._intervals = []

    def start(self, nbytes: int) -> int:
        with self._lock:
            self._intervals.append([time.perf_counter(), float("nan")])
            self.calls += 1
            self.bytes += nbytes
            return len(self._intervals) - 1

    def finish(self, index: int) -> None:
        with self._lock:
            self._intervals[index][1] = time.perf_counter()

    def end_step(self) -> None:
        """Folds the step's intervals into the totals (call after ``backward``)."""
        with self._lock:
            spans = sorted((a, b) for a, b in self._intervals if b == b)  # drop NaN
            self._intervals = []
        if not spans:
            return
        busy, (lo, hi) = 0.0, spans[0]
        for a, b in spans[1:]:
            if a > hi:
                busy += hi - lo
                lo, hi = a, b
            else:
                hi = max(hi, b)
        self.busy_seconds += busy + (hi - lo)
        last_launch = max(a for a, _ in spans)
        self.exposed_seconds += max(b for _, b in spans) - last_launch


def _timed_allreduce(
    stats: AllReduceStats, bucket: dist.GradBucket
) -> torch.futures.Future[torch.Tensor]:
    buffer = bucket.buffer()
    index = stats.start(buffer.numel() * buffer.element_size())
    fut = default_hooks.allreduce_hook(None, bucket)  # type: ignore[arg-type]

    def done(f: torch.futures.Future[torch.Tensor]) -> torch.Tensor:
        stats.finish(index)
        return f.value()

    return fut.then(done)


# DDP checks a hook's annotations against the real types, and postponed
# annotations (``from __future__ import annotations``) are strings.
_timed_allreduce.__annotations__.update(bucket=dist.GradBucket, stats=AllReduceStats)
_timed_allreduce.__annotations__["return"] = torch.futures.Future[torch.Tensor]


def data_parallel(
    model: nn.Module, device: torch.device | str, *, stats: AllReduceStats | None = None
) -> DistributedDataParallel:
    """Wraps ``model`` (moved to ``device``) in DDP on the default process group.

    Args:
        model: The whole model, the same on every rank (DDP broadcasts rank 0's).
        device: This rank's device (``cpu`` with gloo, ``cuda:LOCAL_RANK`` with NCCL).
        stats: Record every bucket all-reduce here (a communication hook that wraps
            DDP's default all-reduce; the gradients are unchanged).

    Raises:
        DistributedError: No process group, or the initial broadcast failed.
    """
    if not dist.is_initialized():
        raise DistributedError("data_parallel needs an initialised torch.distributed group")
    device = torch.device(device)
    model.to(device)
    try:
        ddp = DistributedDataParallel(model, device_ids=[device] if device.type == "cuda" else None)
    except RuntimeError as err:
        raise DistributedError(f"DDP could not start: {str(err).splitlines()[0]}") from err
    if stats is not None:
        ddp.register_comm_hook(stats, _timed_allreduce)
    return ddp


@dataclass(frozen=True)
class ShardedSplit(Split):
    """A split whose batches are this rank's share of each global batch.

    Every rank draws the same shuffled global batches (same generator seed) and
    keeps the ``rank``-th of ``world_size`` nearly equal slices. A final global
    batch with fewer images than ranks is skipped on every rank, since an empty
    shard has no mean loss. ``len`` is the whole split's.
    """

    rank: int = 0
    world_size: int = 1

    @classmethod
    def of(cls, split: Split, rank: int, world_size: int) -> ShardedSplit:
        split = split.dense()
        return cls(split.images, split.labels, rank, world_size, normalization=split.normalization)

    def batches(
        self, batch_size: int, *, generator: torch.Generator | None = None
    ) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        for x, y in super().batches(batch_size, generator=generator):
            if len(y) < self.world_size:
                continue
            yield (
                x.tensor_split(self.world_size)[self.rank],
                y.tensor_split(self.world_size)[self.rank],
            )
