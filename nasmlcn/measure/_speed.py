"""Device speed, measured the thesis's way: a tiny 512x512 fully connected network.

The thesis (sec. 5.1) ran "a 512x512 fully connected network with a small set of
data" on every GPU and normalised the times by the K80's. Here the network is
``layers`` linear layers of ``width x width`` with ReLUs between them, trained
with Adam on one fixed batch; the result is its training FLOP/s (the FLOPs of
the matrix products, counted as ``torch.utils.flop_counter`` counts them,
divided by the step time of the fastest of several repeats). Ratios of these
figures between devices are the devices' relative speeds.

A run this small is bound as much by per-operation overhead as by arithmetic —
that is the point: MLCN lanes are small too, and the thesis's speeds (V100 only
6x a K80) show the same overhead.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from nasmlcn.costs import relative_speeds
from nasmlcn.errors import CalibrationError
from nasmlcn.hardware import Catalog, LocalDevice
from nasmlcn.measure._clock import clock_function, synchronize

log = logging.getLogger(__name__)

FC_WIDTH = 512
FC_LAYERS = 3
FC_BATCH = 64


@dataclass(frozen=True)
class SpeedResult:
    """One device's FC training throughput.

    Attributes:
        device: Torch device name (``cpu``, ``cuda:0``).
        flops_per_second: Training FLOPs per step / step time.
        step_seconds: Step time of the fastest repeat.
        flops_per_step: Matrix-product FLOPs of one training step.
        batch_size: Rows of the fixed batch.
        width: Features of every layer.
        layers: Linear layers.
        threads: Torch intra-op threads during the run.
    """

    device: str
    flops_per_second: float
    step_seconds: float
    flops_per_step: int
    batch_size: int
    width: int
    layers: int
    threads: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "device": self.device,
            "flops_per_second": self.flops_per_second,
            "step_seconds": self.step_seconds,
            "flops_per_step": self.flops_per_step,
            "batch_size": self.batch_size,
            "width": self.width,
            "layers": self.layers,
            "threads": self.threads,
        }


def fc_flops_per_step(batch_size: int, width: int = FC_WIDTH, layers: int = FC_LAYERS) -> int:
    """Matrix-product FLOPs of one training step of the FC network.

    Forward ``2*B*W*W`` per layer; backward the weight gradient (same again) and
    the input gradient (same again) except for the first layer, whose input (the
    data) needs none.
    """
    per = 2 * batch_size * width * width
    return layers * 2 * per + (layers - 1) * per


@dataclass(frozen=True)
class FCNetwork:
    """The FC network whose training step :func:`measure_fc_speed` times.

    Attributes:
        batch_size: Rows of the fixed batch.
        width: Features of every layer.
        layers: Linear layers (>= 1).
    """

    batch_size: int = FC_BATCH
    width: int = FC_WIDTH
    layers: int = FC_LAYERS


THESIS_NETWORK = FCNetwork()
"""The thesis's 512x512 network (three layers, batches of 64)."""


def measure_fc_speed(
    device: str = "cpu",
    *,
    network: FCNetwork = THESIS_NETWORK,
    warmup: int = 5,
    repeats: int = 30,
    steps_per_repeat: int = 5,
    threads: int | None = None,
    clock: str = "wall",
    seed: int = 0,
) -> SpeedResult:
    """Times the FC network's training step on ``device``.

    Args:
        device: Torch device name.
        network: Its batch size, width and layers.
        warmup: Untimed steps first (allocator, kernel caches, Adam state).
        repeats: Timed repeats; the fastest counts.
        steps_per_repeat: Steps per timed repeat (one step is too short to time
            alone on a fast device).
        threads: Torch intra-op threads (None: leave as is).
        clock: ``wall`` or ``cpu`` (process CPU time; CPU with 1 thread only,
            see :class:`nasmlcn.measure.StepTiming`).
        seed: Seed of the weights and the batch.
    """
    batch_size, width, layers = network.batch_size, network.width, network.layers
    if layers < 1 or width < 1 or batch_size < 1:
        raise ValueError(
            f"need layers, width, batch_size >= 1, got {layers}, {width}, {batch_size}"
        )
    if threads is not None:
        torch.set_num_threads(threads)
    dev = torch.device(device)
    now = clock_function(clock, dev)
    torch.manual_seed(seed)
    mods: list[nn.Module] = []
    for i in range(layers):
        if i:
            mods.append(nn.ReLU())
        mods.append(nn.Linear(width, width))
    net = nn.Sequential(*mods).to(dev)
    opt = torch.optim.Adam(net.parameters(), lr=1e-4)
    x = torch.randn(batch_size, width, device=dev)
    target = torch.randn(batch_size, width, device=dev)

    def step() -> None:
        opt.zero_grad(set_to_none=True)
        loss = (net(x) - target).pow(2).mean()
        loss.backward()
        opt.step()

    for _ in range(warmup):
        step()
    synchronize(dev)
    times: list[float] = []
    for _ in range(repeats):
        start = now()
        for _ in range(steps_per_repeat):
            step()
        synchronize(dev)
        times.append((now() - start) / steps_per_repeat)
    # The fastest repeat: other processes only ever add time, and a repeat is
    # short enough (milliseconds) that some repeat runs undisturbed.
    seconds = min(times)
    flops = fc_flops_per_step(batch_size, width, layers)
    result = SpeedResult(
        device=device,
        flops_per_second=flops / seconds,
        step_seconds=seconds,
        flops_per_step=flops,
        batch_size=batch_size,
        width=width,
        layers=layers,
        threads=torch.get_num_threads(),
    )
    log.info("FC speed on %s: %.3g FLOP/s (%.3g ms/step)", device, flops / seconds, seconds * 1e3)
    return result


@dataclass(frozen=True)
class DeviceSpeeds:
    """Measured FC throughput and relative speed (K80 = 1.0) of local devices.

    Attributes:
        results: The FC measurement of each device, lane device first.
        speeds: Relative speed by device name.
        anchor: Which catalog figure the speeds hang on, in words.
    """

    results: tuple[SpeedResult, ...]
    speeds: dict[str, float]
    anchor: str

    @property
    def fc_flops_per_second(self) -> dict[str, float]:
        return {r.device: r.flops_per_second for r in self.results}


def measure_speeds(
    devices: Sequence[LocalDevice],
    catalog: Catalog,
    *,
    threads: int | None = None,
    clock: str = "wall",
    quick: bool = False,
) -> DeviceSpeeds:
    """Runs the FC network on every device and relates them to the K80 scale.

    The first device with a catalog kind is the anchor: its speed is the
    catalog's (for ``cpu`` a derived figure, see ``devices.toml``); every other
    device's speed is the anchor's times its FC FLOP/s over the anchor's, as the
    thesis normalised by its K80.

    Raises:
        CalibrationError: No device has a catalog kind to anchor the scale.
    """
    anchor = next((d for d in devices if d.catalog_kind is not None), None)
    if anchor is None or anchor.catalog_kind is None:
        raise CalibrationError(
            "none of " + ", ".join(d.name for d in devices) + " is in the device catalog, so "
            "there is no known speed to anchor the K80 scale; add the cpu or a catalog device"
        )
    repeats: dict[str, Any] = {"warmup": 2, "repeats": 5} if quick else {}
    results = tuple(
        measure_fc_speed(
            d.name, threads=threads, clock=clock if d.name == "cpu" else "wall", **repeats
        )
        for d in devices
    )
    fc = {r.device: r.flops_per_second for r in results}
    kind = catalog[anchor.catalog_kind]
    speeds = relative_speeds(fc, anchor.name, kind.speed)
    text = f"{anchor.name} = catalog {kind.name} speed {kind.speed:g}"
    if kind.name == "cpu":
        text += " (derived from peak FLOPS and bandwidth, not measured against a K80)"
    return DeviceSpeeds(results, speeds, text)
