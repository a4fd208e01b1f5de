"""A training or evaluation step, eager or replayed from a CUDA graph.

On a GPU a step of a capsule network is hundreds of small kernels, and the host's
launches, not the arithmetic, set its pace (an H100 was busy 53-67 % of each step at
batch 100). A CUDA graph records a step's kernels once and replays them with one
launch. Shapes must be static, so each batch size gets its own graph (a split's last,
smaller batch its own), captured after :data:`WARMUP_STEPS` eager steps of that size
(lazy initialisations must not happen during capture); those steps run on a side
stream, as torch's documentation prescribes, and train as any step does.

What is graphed is the forward pass, the loss and the backward pass; the optimizer
step stays eager (fused Adam is a launch or two per device, and it reads the learning
rate each step, which schedules change). Each graph owns its gradient tensors;
they are handed to the parameters after each replay. A capture that fails logs one
line and the run goes on eagerly; so does everything off a GPU.

A step's returned tensors are the graph's own and are overwritten by its next
replay: use them (on the GPU, in stream order) before the next step, or clone them.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
from torch import nn

from nasmlcn.models import capsule_loss

logger = logging.getLogger(__name__)

WARMUP_STEPS = 2
"""Eager steps of a batch size before its graph is captured."""

Inputs = Callable[[torch.Tensor], torch.Tensor]
"""What the model is given for a batch of images in [0, 1] (a colour set's
normalisation; the reconstruction target stays the [0, 1] images)."""


@dataclass
class _Graph:
    graph: torch.cuda.CUDAGraph
    x: torch.Tensor  # (B, C, H, W), static input
    y: torch.Tensor  # (B,), static labels
    loss: torch.Tensor  # (), static output
    lengths: torch.Tensor  # (B, K), static output
    grads: list[torch.Tensor | None] = field(default_factory=list)


class _Graphs:
    """Per batch size: eager warm-up steps, then a captured graph; capture failures
    turn graphing off for good (one log line)."""

    def __init__(self, enabled: bool, what: str) -> None:
        self.enabled = enabled
        self.what = what
        self.seen: dict[int, int] = {}
        self.graphs: dict[int, _Graph] = {}
        self.capture_seconds = 0.0
        self.side: torch.cuda.Stream | None = None  # warm-up's stream, made when first needed

    def ready(self, batch: int) -> bool:
        """Counts a step of ``batch`` images; True once it is time to capture."""
        self.seen[batch] = self.seen.get(batch, 0) + 1
        return self.enabled and self.seen[batch] > WARMUP_STEPS

    def capture(
        self, batch: int, record: Callable[[torch.cuda.CUDAGraph], _Graph]
    ) -> _Graph | None:
        """``record(graph)`` captured (None, and graphs off, when it fails)."""
        start = time.perf_counter()
        try:
            captured = record(torch.cuda.CUDAGraph())
        except Exception as err:
            if torch.cuda.is_available():
                torch.cuda.synchronize()
            self.enabled = False
            reason = (str(err).strip().splitlines() or [type(err).__name__])[0]
            logger.warning(
                "CUDA graph capture of the %s step failed (%s); running eagerly", self.what, reason
            )
            return None
        self.graphs[batch] = captured
        seconds = time.perf_counter() - start
        self.capture_seconds += seconds
        logger.info(
            "captured the %s step at batch %d as a CUDA graph in %.2f s", self.what, batch, seconds
        )
        return captured

    def warm(
        self, step: Callable[[], tuple[torch.Tensor, torch.Tensor]]
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """An eager step on the side stream while graphing is on (else as it is)."""
        if not self.enabled or not torch.cuda.is_available():
            return step()
        if self.side is None:
            self.side = torch.cuda.Stream()
        current = torch.cuda.current_stream()
        self.side.wait_stream(current)
        with torch.cuda.stream(self.side):
            out = step()
        current.wait_stream(self.side)
        return out


def graphs_apply(model: nn.Module, device: torch.device, wanted: bool) -> bool:
    """Whether a model's steps are graphed: asked for, on a CUDA device, and one of
    nasmlcn's own models wholly on that device (not lanes placed over several
    devices, a rank's share of a multi-process job, or a DDP replica: their streams
    and collectives are not captured)."""
    from nasmlcn.models import MLCN, CapsNet

    if not wanted or device.type != "cuda" or type(model) not in (MLCN, CapsNet):
        return False
    index = torch.cuda.current_device() if device.index is None else device.index
    return {p.device for p in model.parameters()} == {torch.device("cuda", index)}


class TrainStep:
    """Forward, capsule loss, backward and optimizer step of one training batch.

    Args:
        model: The model, in training mode.
        optimizer: Its optimizer.
        inputs: The model's input for a batch of images in [0, 1].
        reconstruction_weight: Weight of the reconstruction loss.
        graphs: Replay CUDA graphs (:func:`graphs_apply` decides; the module
            docstring says how).
    """

    def __init__(
        self,
        model: nn.Module,
        optimizer: torch.optim.Optimizer,
        inputs: Inputs,
        reconstruction_weight: float,
        graphs: bool = False,
    ) -> None:
        self.model = model
        self.optimizer = optimizer
        self.inputs = inputs
        self.weight = reconstruction_weight
        self.params = [p for group in optimizer.param_groups for p in group["params"]]
        self._graphs = _Graphs(graphs, "training")

    @property
    def capture_seconds(self) -> float:
        """Seconds spent capturing graphs so far (part of the steps' time)."""
        return self._graphs.capture_seconds

    def loss(self, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The loss ``()`` and class-capsule lengths ``(B, K)`` of a forward pass."""
        out = self.model(self.inputs(x), y)
        loss = capsule_loss(out.lengths, out.reconstruction, x, y, self.weight).total
        return loss, out.lengths

    def __call__(self, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Trains on the batch ``x`` (B, C, H, W) in [0, 1], ``y`` (B,); returns the
        detached loss and lengths (see the module docstring on their lifetime)."""
        batch = x.shape[0]
        graph = self._graphs.graphs.get(batch)
        if graph is None and self._graphs.ready(batch):
            graph = self._graphs.capture(batch, lambda g: self._record(g, x, y))
        if graph is None:
            loss, lengths = self._graphs.warm(lambda: self._eager(x, y))
            self.optimizer.step()
            return loss, lengths
        graph.x.copy_(x)
        graph.y.copy_(y)
        graph.graph.replay()
        for p, grad in zip(self.params, graph.grads, strict=True):
            p.grad = grad
        self.optimizer.step()
        return graph.loss, graph.lengths

    def _eager(self, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        loss, lengths = self.loss(x, y)
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        return loss.detach(), lengths.detach()

    def _record(self, graph: torch.cuda.CUDAGraph, x: torch.Tensor, y: torch.Tensor) -> _Graph:
        static_x, static_y = x.clone(), y.clone()
        self.optimizer.zero_grad(set_to_none=True)  # the graph allocates its own gradients
        with torch.cuda.graph(graph):
            loss, lengths = self._eager(static_x, static_y)
        grads = [p.grad for p in self.params]
        return _Graph(graph, static_x, static_y, loss, lengths, grads)


class EvalStep:
    """The loss and lengths of an evaluation batch (eval mode, no gradients),
    graphed on a GPU as :class:`TrainStep` is."""

    def __init__(
        self, model: nn.Module, inputs: Inputs, reconstruction_weight: float, graphs: bool = False
    ) -> None:
        self.model = model
        self.inputs = inputs
        self.weight = reconstruction_weight
        self._graphs = _Graphs(graphs, "evaluation")

    @property
    def capture_seconds(self) -> float:
        return self._graphs.capture_seconds

    @torch.no_grad()
    def __call__(self, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        batch = x.shape[0]
        graph = self._graphs.graphs.get(batch)
        if graph is None and self._graphs.ready(batch):
            graph = self._graphs.capture(batch, lambda g: self._record(g, x, y))
        if graph is None:
            return self._graphs.warm(lambda: self._loss(x, y))
        graph.x.copy_(x)
        graph.y.copy_(y)
        graph.graph.replay()
        return graph.loss, graph.lengths

    def _loss(self, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        out = self.model(self.inputs(x))  # the decoder reconstructs the predicted class
        return capsule_loss(out.lengths, out.reconstruction, x, y, self.weight).total, out.lengths

    def _record(self, graph: torch.cuda.CUDAGraph, x: torch.Tensor, y: torch.Tensor) -> _Graph:
        static_x, static_y = x.clone(), y.clone()
        with torch.cuda.graph(graph):
            loss, lengths = self._loss(static_x, static_y)
        return _Graph(graph, static_x, static_y, loss, lengths)
