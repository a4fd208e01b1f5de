"""Per-image inference latency of a trained MLCN, measured with torch.

What the ``inference`` objective predicts, measured the same way: classifying
``batch_size`` images (default ``INFERENCE_BATCH_SIZE`` = 1) in evaluation mode
under ``torch.no_grad()``: every lane's forward pass, then the class capsules'
lengths. The decoder is not run: it reconstructs images for the training loss
and plays no part in classifying them.

A few warm-up passes first (the first pass allocates and picks kernels), then
``passes`` timed passes, each on the next batch of the given images (already on
the input device, so the copy from the host is not timed); CUDA is synchronised
before the clock is read. The figure is the *median* pass time over the batch
size: latency as a deployed model sees it on this machine, at torch's thread
count, without discarding the cost of an ordinary busy moment (the fastest pass,
as :mod:`nasmlcn.measure._lane_timing` uses for training steps, would flatter it).

Its spread is the interquartile range of the same passes (the 25th and 75th
percentiles, per image): half of the passes took between the two. Quartiles and
not the minimum and maximum because one pass that a page fault or another
process delayed would stretch a min-max range without saying anything about the
model; reports show ``2.54 ms (IQR 2.41-2.70)``.

On a shared CPU, threaded batch-1 passes suffer most from other processes: on
the 2-core development machine with another process busy (load ~2),
``2*mlcn1:4x1`` took 80 ms per image with torch's 2 threads and 1.8 ms with 1
thread. So the machine is looked at first (:func:`nasmlcn.training.share_cores`:
fewer threads, and a warning, where other processes hold cores), and the thread
count, the load average and the cores others held are recorded with every figure.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any, Protocol, cast

import torch

from nasmlcn.costs import INFERENCE_BATCH_SIZE
from nasmlcn.hardware import busy_record, look_at_load
from nasmlcn.measure._clock import synchronize
from nasmlcn.training import share_cores

INFERENCE_WARMUP = 3
"""Untimed passes before the timed ones."""

INFERENCE_PASSES = 20
"""Timed passes (the median is reported, the quartiles give its spread)."""


class LaneModel(Protocol):
    """What :func:`classify` needs: an MLCN or a lane-parallel ``PlacedMLCN``."""

    def lane_outputs(self, x: torch.Tensor) -> list[torch.Tensor]: ...


@dataclass(frozen=True)
class InferenceTiming:
    """A measured inference latency.

    Attributes:
        seconds_per_image: Median pass time over ``batch_size`` (the figure).
        batch_size: Images per pass.
        passes: Timed passes.
        warmup: Untimed passes before them.
        device: Where the model ran (``cpu``; ``cuda:0,cuda:1`` for a placed model).
        threads: Torch intra-op threads.
        load_average: The higher 1-minute load average before and after (other
            processes inflate CPU timings, threaded ones at batch 1 most); None
            where unknown.
        p25_seconds_per_image: The passes' 25th percentile over ``batch_size``
            (the spread's lower end; see the module docstring); None in records
            written before it was kept.
        p75_seconds_per_image: Their 75th percentile over ``batch_size``.
        machine_load: The most cores other processes held before or during the
            passes (:func:`nasmlcn.hardware.busy_record`; a figure taken where they
            held half a core or more is unreliable); None in older records.
    """

    seconds_per_image: float
    batch_size: int
    passes: int
    warmup: int
    device: str
    threads: int
    load_average: float | None = None
    p25_seconds_per_image: float | None = None
    p75_seconds_per_image: float | None = None
    machine_load: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def classify(model: LaneModel, x: torch.Tensor) -> torch.Tensor:
    """Class probabilities ``(B, K)`` of images ``x``: the lanes and the class
    capsules' lengths, as :class:`~nasmlcn.models.CapsuleHead` computes them,
    without the decoder."""
    class_capsules = torch.stack(model.lane_outputs(x), dim=-1)  # (B, K, L)
    return torch.linalg.vector_norm(class_capsules, dim=-1)  # (B, K)


def time_inference(
    model: torch.nn.Module,
    images: torch.Tensor,
    *,
    input_device: torch.device | str,
    devices: Sequence[torch.device | str] = (),
    device_name: str | None = None,
    batch_size: int = INFERENCE_BATCH_SIZE,
    warmup: int = INFERENCE_WARMUP,
    passes: int = INFERENCE_PASSES,
) -> InferenceTiming:
    """Times classifying ``images`` with ``model`` (see the module docstring).

    Args:
        model: An MLCN or a ``PlacedMLCN`` (anything with ``lane_outputs``), its
            parameters already where they run.
        images: Float images ``(N, C, H, W)`` in [0, 1]; cycled when fewer than
            the passes need.
        input_device: Where inputs go (the model's device, or a placed model's
            ``input_device``).
        devices: Every device the model runs on, synchronised around each pass
            (default: ``input_device``).
        device_name: What to record as the device (default: ``input_device``).
        batch_size: Images per pass.
        warmup: Untimed passes first.
        passes: Timed passes.

    Raises:
        ValueError: No images, or a batch size or pass count below 1.
    """
    if len(images) < 1 or batch_size < 1 or passes < 1 or warmup < 0:
        raise ValueError(
            f"need images, batch_size >= 1, passes >= 1 and warmup >= 0; got {len(images)} "
            f"images, batch_size {batch_size}, passes {passes}, warmup {warmup}"
        )
    dev = torch.device(input_device)
    sync = [torch.device(d) for d in (devices or (dev,))]
    n = warmup + passes
    index = torch.arange(n * batch_size) % len(images)
    batches = images[index].to(dev).view(n, batch_size, *images.shape[1:])  # (n, B, C, H, W)
    lanes = cast(LaneModel, model)
    looked = share_cores("timing inference", dev)
    load = _load_average()
    was_training = model.training
    model.eval()
    seconds: list[float] = []
    try:
        with torch.no_grad():
            for i in range(n):
                for d in sync:
                    synchronize(d)
                start = time.perf_counter()
                classify(lanes, batches[i])
                for d in sync:
                    synchronize(d)
                if i >= warmup:
                    seconds.append(time.perf_counter() - start)
    finally:
        model.train(was_training)
    low, high = quartiles(seconds)
    return InferenceTiming(
        seconds_per_image=statistics.median(seconds) / batch_size,
        batch_size=batch_size,
        passes=passes,
        warmup=warmup,
        device=device_name or str(dev),
        threads=torch.get_num_threads(),
        load_average=max((v for v in (load, _load_average()) if v is not None), default=None),
        p25_seconds_per_image=low / batch_size,
        p75_seconds_per_image=high / batch_size,
        machine_load=busy_record(looked, look_at_load()),
    )


def quartiles(values: Sequence[float]) -> tuple[float, float]:
    """The 25th and 75th percentiles of ``values`` (inclusive method: inside the
    values' range, so a single pass gives that pass twice)."""
    if len(values) < 2:
        return values[0], values[0]
    low, _, high = statistics.quantiles(values, n=4, method="inclusive")
    return low, high


def _load_average() -> float | None:
    try:
        return os.getloadavg()[0]
    except OSError:  # pragma: no cover - not on every platform
        return None
