"""In-process model parallelism: every lane on its own device, the head on one.

A forward pass copies the batch once to each device, *launches* every lane before
anything waits, then gathers the ``(B, K)`` lane outputs on the head device for
the class capsules, the loss and the decoder. CUDA kernels are asynchronous, so
while the host enqueues the lanes of ``cuda:1`` the lanes of ``cuda:0`` already
run; with ``streams`` each CUDA lane also gets its own stream, so small lanes
sharing one GPU can overlap too. Autograd runs each backward op on its forward
op's stream, so the backward pass is just as concurrent, and the gradients of
the gathered outputs flow back over the same device-to-device copies.

On CPU devices everything runs one lane after another: ``cpu`` placements are
legal (``--devices 2xcpu``) but give no speedup. CPU parallelism comes from
several processes (:mod:`nasmlcn.parallel._distributed`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
from torch import nn

from nasmlcn.models import MLCN, CapsuleOutput


def normalize_device(device: torch.device | str) -> torch.device:
    """``cuda`` -> ``cuda:<current>``, so equal devices compare equal."""
    d = torch.device(device)
    if d.type == "cuda" and d.index is None:
        return torch.device("cuda", torch.cuda.current_device())
    return d


class PlacedMLCN(nn.Module):
    """An MLCN whose lanes live on the devices a placement gives them.

    Args:
        model: The MLCN; its lanes and head are moved (not copied).
        lane_devices: The device of every lane, in lane order.
        head_device: Where the head runs and where inputs and targets are
            expected (default: the first lane's device; a plan puts the head on
            target device 0).
        streams: Give every CUDA lane its own stream (default: True when any lane
            is on CUDA). False runs a device's lanes one after another.

    Parameter names equal :class:`~nasmlcn.models.MLCN`'s, so checkpoints of the
    two are interchangeable. :func:`nasmlcn.training.train` sees
    :attr:`input_device` and leaves the placement alone.

    Raises:
        ValueError: ``lane_devices`` does not have one entry per lane.
    """

    def __init__(
        self,
        model: MLCN,
        lane_devices: Sequence[torch.device | str],
        head_device: torch.device | str | None = None,
        *,
        streams: bool | None = None,
    ) -> None:
        super().__init__()
        if len(lane_devices) != len(model.lanes):
            raise ValueError(f"{len(lane_devices)} lane devices given for {len(model.lanes)} lanes")
        self.spec = model.spec
        self.lane_devices = tuple(normalize_device(d) for d in lane_devices)
        self.head_device = normalize_device(
            head_device if head_device is not None else self.lane_devices[0]
        )
        # Every stack on one device: lanes of one kind stack per device when fused
        # (each device runs its own as one computation), else each lane alone
        # (its own stream).
        self.fuse_lanes = model.fuse_lanes
        devices = self.lane_devices
        model.lanes.regroup((lambda i: devices[i]) if self.fuse_lanes else (lambda i: i))
        self.lanes = model.lanes
        self.stack_devices = tuple(devices[m[0]] for m in self.lanes.members)
        for stack, device in zip(self.lanes.stacks, self.stack_devices, strict=True):
            stack.to(device)
        self.capsule_head = model.capsule_head.to(self.head_device)
        # Distinct devices in first-use order; each gets one copy of the input.
        self.devices = tuple(dict.fromkeys(self.lane_devices))
        any_cuda = any(d.type == "cuda" for d in self.lane_devices)
        self.streams = any_cuda if streams is None else bool(streams) and any_cuda
        self._lane_streams: dict[int, torch.cuda.Stream] = {}

    @property
    def input_device(self) -> torch.device:
        """Where inputs and targets go (the head device)."""
        return self.head_device

    def _stream(self, stack: int) -> torch.cuda.Stream:
        stream = self._lane_streams.get(stack)
        if stream is None:
            stream = torch.cuda.Stream(device=self.stack_devices[stack])
            self._lane_streams[stack] = stream
        return stream

    def lane_outputs(self, x: torch.Tensor) -> list[torch.Tensor]:
        """Every lane's ``(B, K)`` output on the head device, in lane order."""
        return list(self.class_capsules(x).unbind(-1))

    def class_capsules(self, x: torch.Tensor) -> torch.Tensor:
        """The class capsules ``(B, K, L)`` on the head device."""
        inputs = {d: x.to(d, non_blocking=True) for d in self.devices}  # (B, C, H, W) each
        outs: list[torch.Tensor | None] = [None] * len(self.lanes.stacks)
        launched: list[tuple[int, torch.cuda.Stream]] = []
        # Device by device, so every device is busy before the host waits anywhere:
        # CUDA launches return at once.
        for device in self.devices:
            for s, where in enumerate(self.stack_devices):
                if where != device:
                    continue
                if self.fuse_lanes or not self.streams or device.type != "cuda":
                    # fused: one computation per device and kind, on its current stream
                    outs[s] = self.lanes.stack_outputs(inputs[device], [s])[0]  # (G, B, K)
                    continue
                stream = self._stream(s)
                # The input copy was enqueued on the device's current stream.
                stream.wait_stream(torch.cuda.current_stream(device))
                with torch.cuda.stream(stream):
                    inputs[device].record_stream(stream)
                    outs[s] = self.lanes.stack_outputs(inputs[device], [s])[0]  # on `stream`
                launched.append((s, stream))
        for s, stream in launched:
            # Later work (the copy to the head) runs on the current stream: make it
            # wait for the lane, and keep the output's memory alive until it has.
            current = torch.cuda.current_stream(self.stack_devices[s])
            current.wait_stream(stream)
            out = outs[s]
            assert out is not None
            out.record_stream(current)
        return self.lanes.class_capsules(self._to_head([o for o in outs if o is not None]))

    def _to_head(self, outs: list[torch.Tensor]) -> list[torch.Tensor]:
        # An asynchronous copy to the CPU would let the head read it too early.
        async_copy = self.head_device.type == "cuda"
        return [out.to(self.head_device, non_blocking=async_copy) for out in outs]  # (G, B, K)

    def head(
        self, lane_outputs: list[torch.Tensor], target: torch.Tensor | None = None
    ) -> CapsuleOutput:
        """Class capsules from the gathered lane outputs, then the capsule head."""
        class_capsules = torch.stack(lane_outputs, dim=-1)  # (B, K, L)
        out: CapsuleOutput = self.capsule_head(class_capsules, target)
        return out

    def forward(self, x: torch.Tensor, target: torch.Tensor | None = None) -> CapsuleOutput:
        out: CapsuleOutput = self.capsule_head(self.class_capsules(x), target)
        return out

    def placement(self) -> dict[str, list[int]]:
        """Device name -> the lanes on it (for reports)."""
        groups: dict[str, list[int]] = {}
        for i, d in enumerate(self.lane_devices):
            groups.setdefault(str(d), []).append(i)
        return groups


def placer(
    lane_devices: Sequence[torch.device | str],
    head_device: torch.device | str | None = None,
    *,
    streams: bool | None = None,
) -> Callable[[nn.Module], PlacedMLCN]:
    """What places a freshly built MLCN as :class:`PlacedMLCN` does (the ``place``
    of a training job, which builds the model itself)."""

    def place(model: nn.Module) -> PlacedMLCN:
        assert isinstance(model, MLCN), f"only an MLCN has lanes to place, not {type(model)}"
        return PlacedMLCN(model, lane_devices, head_device, streams=streams)

    return place
