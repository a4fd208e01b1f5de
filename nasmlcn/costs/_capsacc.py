"""CapsAcc: latency, energy and memory of one inference on the CapsAcc accelerator.

NASCaps (Marchisio et al., ICCAD 2020, sec. 3.2, seed ``001``) models the CapsAcc
systolic array (Marchisio et al., DATE 2019) layer by layer. Each layer is a
NASCaps *layer descriptor* (:class:`CapsAccLayer`: input size ``n_in``, channels
``ch_in``, capsules ``caps_in``, kernel, output size ``n_out``, ``ch_out``,
``caps_out``), and Table 1 gives three operation-specific figures:

* ConvCaps (a convolution: ``caps_in = caps_out = 1``):
  weights ``(ch_in*k^2 + 1)*ch_out*caps_out*caps_in``,
  sums_per_out ``(k^2 + 1)*ch_in*caps_in``,
  data_per_weight ``n_out^2*ch_in*caps_in``;
* ClassCaps (fully connected capsules):
  weights ``(ch_in*n_in^2 + 1)*ch_out*caps_out*caps_in``,
  sums_per_out ``(n_in^2 + 1)*ch_in*caps_in``, data_per_weight 1;
* one dynamic-routing operation:
  weights ``ch_in*k^2*ch_out``, sums_per_out ``caps_in``, data_per_weight 1;

from which, on a ``16 x 16`` array (eqs. 2-5)::

    w_load_cycles = 16
    w_loads       = ceil(weights / (16 * min(16, sums_per_out)))
    cycles(l)     = w_load_cycles * w_loads + data_per_weight
    latency       = sum_l cycles(l) * T                    T = 3 ns (45 nm, sec. 4.1)

and the memory footprint is the sum of the weights (8-bit: one byte each; NASCaps'
"KiB" are weights / 1024).

**Energy.** Eq. 7 as printed, ``ceil(ma*8/128)*en_mem + sum cycles*T*pwr_PEA``,
prints neither ``en_mem`` nor ``pwr_PEA``. The public NASCaps code
(github.com/ehw-fit/nascaps, ``hwacc/generic_layer.py`` and the synthesis tables
``data/pe.json.gz``, ``data/mem.json.gz``) computes, per layer,
``energy(l) = (pwr_PEA + ma(l) * pwr_acc) * cycles(l) * T`` with

* ``pwr_PEA = 256 x 0.4815 mW``: one PE (8-bit inputs, 25-bit accumulator,
  1 stage, 3 ns) is 0.4815 mW in the 45 nm PDK, the array has 16 x 16;
* ``pwr_acc = 0.2303 mW``: one 25-bit accumulator memory cell at 3 ns;
* ``ma(l) = 16`` accumulator cells when ``data_per_weight == 1``, else
  ``16 * max(sums_per_out - 15, 1)`` (eq. 6; the printed eq. 6 says 256 for the
  first case, the code 16 — we follow the code).

That is what we use: with these constants and NASCaps' own descriptor of
CapsNet (``chroms/chrom_capsnet.chr``) the model gives 88.80 mJ, 1.82 ms and
8,573 KiB, Table 3's figures to the printed digit
(``nasmlcn/reproduce/engines/capsacc_table3.py``). Energy is dominated by the primary-capsule
layer, whose 20,992 sums per output keep 335,632 accumulator cells busy.

**Our layers.** :func:`lane_layers` and :func:`capsnet_layers` read the real layer
shapes (:meth:`nasmlcn.specs.LaneSpec.layout`, :class:`nasmlcn.specs.CapsNetSpec`):
every convolution of a lane as declared (an mlcn2 1x1 layer is not folded: the
accelerator runs the layers as defined) is a ConvCaps layer with
``caps_in = caps_out = 1`` (``ch_in`` per group for grouped convolutions); the
last one, cut into capsules, is the primary-capsule layer (``ch_out`` capsule
channels of ``caps_out``-D, the same weights as the convolution); the class
capsules are a ClassCaps layer over the primary grid (``n_in^2`` = its
positions) with ``caps_in`` = the primary capsule dimension. Dynamic routing is
``2r - 1`` operations (a weighted sum every iteration, an agreement update
between iterations: NASCaps' 5 for ``r = 3``), each with the routing row of
Table 1 and the class layer's ``n_in`` as its kernel. An MLCN lane routes to one
``K``-D capsule (``vector``: the softmax over one capsule is 1, so routing is one
weighted sum) or to ``K`` 1-D capsules (``classwise``: ``2r - 1`` operations).
Stacking the lanes' outputs into class capsules is no layer, and the decoder only
serves the training loss: neither runs at inference. Table 1's ClassCaps row
reads ``n_in^2``; the public code puts the descriptor's kernel there (9x9 for
CapsNet's 14x14 grid): we follow Table 1, which is the layer's real size. From
real shapes, CapsNet on CIFAR-10 is 0.912 x Table 3's energy, 0.875 x its latency
and 0.922 x its memory: the paper's descriptor has a 28x28 input with a "same"
first convolution (a 14x14 primary grid against our 8x8) and that 9x9 window
(``nasmlcn/reproduce/engines/capsacc_table3.py`` prints the per-layer arithmetic).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from nasmlcn.costs._base import (
    COST_MODELS,
    CostModel,
    HeadCost,
    LaneCost,
    head_facts,
    layer_facts,
)
from nasmlcn.costs._context import CostContext
from nasmlcn.errors import SpecError
from nasmlcn.specs import ArchSpec, CapsNetSpec, ConvSpec, LaneSpec, MLCNSpec

CONV = "conv"
PRIMARY = "primary-caps"
CLASS = "class-caps"
ROUTING = "routing"
LAYER_KINDS = (CONV, PRIMARY, CLASS, ROUTING)


@dataclass(frozen=True)
class CapsAcc:
    """The accelerator's constants (defaults: NASCaps' CapsAcc, see the module docstring).

    Attributes:
        rows: Systolic array rows (16).
        cols: Systolic array columns (16).
        period_s: Clock period ``T`` (3 ns).
        pe_power_w: Power of one processing element (0.4815 mW).
        accumulator_power_w: Power of one accumulator memory cell (0.2303 mW).
        bytes_per_weight: Weight width (8-bit data: 1 byte).
    """

    rows: int = 16
    cols: int = 16
    period_s: float = 3e-9
    pe_power_w: float = 0.4815e-3
    accumulator_power_w: float = 0.2303e-3
    bytes_per_weight: int = 1

    @property
    def w_load_cycles(self) -> int:
        """Eq. 2: cycles to load one group of weights into the array (one per row)."""
        return self.rows

    @property
    def array_power_w(self) -> float:
        """``pwr_PEA``: every PE of the array."""
        return self.pe_power_w * self.rows * self.cols


CAPSACC = CapsAcc()


@dataclass(frozen=True)
class CapsAccLayer:
    """One NASCaps layer descriptor, and what eqs. 2-7 make of it.

    ``positions_in`` and ``positions_out`` are ``n_in^2`` and ``n_out^2`` (the
    feature-map positions, which also covers non-square maps).
    """

    name: str
    kind: str
    positions_in: int
    ch_in: int
    caps_in: int
    kernel: int
    positions_out: int
    ch_out: int
    caps_out: int

    def __post_init__(self) -> None:
        if self.kind not in LAYER_KINDS:
            raise SpecError(
                f"CapsAccLayer.kind must be one of {', '.join(LAYER_KINDS)}, got {self.kind!r}"
            )
        for name in (
            "positions_in",
            "ch_in",
            "caps_in",
            "kernel",
            "positions_out",
            "ch_out",
            "caps_out",
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise SpecError(
                    f"CapsAccLayer {self.name!r}: {name} must be an integer >= 1, got {value!r}"
                )

    @property
    def weights(self) -> int:
        """Table 1, column ``weights``."""
        if self.kind == ROUTING:
            return self.ch_in * self.kernel**2 * self.ch_out
        window = self.positions_in if self.kind == CLASS else self.kernel**2
        return (self.ch_in * window + 1) * self.ch_out * self.caps_out * self.caps_in

    @property
    def sums_per_out(self) -> int:
        """Table 1, column ``sums_per_out``."""
        if self.kind == ROUTING:
            return self.caps_in
        window = self.positions_in if self.kind == CLASS else self.kernel**2
        return (window + 1) * self.ch_in * self.caps_in

    @property
    def data_per_weight(self) -> int:
        """Table 1, column ``data_per_weight`` (> 1 only for convolutions)."""
        if self.kind in (CLASS, ROUTING):
            return 1
        return self.positions_out * self.ch_in * self.caps_in

    def cycles(self, acc: CapsAcc = CAPSACC) -> int:
        """Eqs. 2-4."""
        w_loads = math.ceil(self.weights / (acc.cols * min(acc.rows, self.sums_per_out)))
        return acc.w_load_cycles * w_loads + self.data_per_weight

    def accumulators(self, acc: CapsAcc = CAPSACC) -> int:
        """Eq. 6 (as the public code has it): accumulator cells in use."""
        if self.data_per_weight == 1:
            return acc.cols
        return acc.cols * max(self.sums_per_out - acc.rows + 1, 1)

    def power_w(self, acc: CapsAcc = CAPSACC) -> float:
        return acc.array_power_w + self.accumulators(acc) * acc.accumulator_power_w

    def estimate(self, acc: CapsAcc = CAPSACC) -> LayerEstimate:
        cycles = self.cycles(acc)
        latency = cycles * acc.period_s
        return LayerEstimate(
            layer=self,
            cycles=cycles,
            latency_s=latency,
            energy_j=self.power_w(acc) * latency,
            memory_bytes=self.weights * acc.bytes_per_weight,
        )


@dataclass(frozen=True)
class LayerEstimate:
    """One layer's cycles, latency, energy and weight memory on CapsAcc."""

    layer: CapsAccLayer
    cycles: int
    latency_s: float
    energy_j: float
    memory_bytes: int

    def to_dict(self) -> dict[str, Any]:
        layer = self.layer
        return {
            "name": layer.name,
            "kind": layer.kind,
            "weights": layer.weights,
            "sums_per_out": layer.sums_per_out,
            "data_per_weight": layer.data_per_weight,
            "cycles": self.cycles,
            "latency_s": self.latency_s,
            "energy_j": self.energy_j,
            "memory_bytes": self.memory_bytes,
        }


@dataclass(frozen=True)
class CapsAccEstimate:
    """Latency, energy and memory of one inference: the sums over the layers."""

    layers: tuple[LayerEstimate, ...]
    accelerator: CapsAcc = field(default=CAPSACC)

    @property
    def cycles(self) -> int:
        return sum(e.cycles for e in self.layers)

    @property
    def latency_s(self) -> float:
        """Eq. 5."""
        return sum(e.latency_s for e in self.layers)

    @property
    def energy_j(self) -> float:
        return sum(e.energy_j for e in self.layers)

    @property
    def memory_bytes(self) -> int:
        return sum(e.memory_bytes for e in self.layers)

    def to_dict(self) -> dict[str, Any]:
        return {
            "target": "capsacc",
            "latency_s": self.latency_s,
            "energy_j": self.energy_j,
            "memory_bytes": self.memory_bytes,
            "cycles": self.cycles,
            "period_s": self.accelerator.period_s,
            "layers": [e.to_dict() for e in self.layers],
        }


def estimate_capsacc_layers(
    layers: Sequence[CapsAccLayer], acc: CapsAcc = CAPSACC
) -> CapsAccEstimate:
    """The estimate of a sequence of layer descriptors."""
    return CapsAccEstimate(tuple(layer.estimate(acc) for layer in layers), acc)


def routing_operations(iterations: int) -> int:
    """``2r - 1``: a weighted sum per iteration, an agreement update between them."""
    return 2 * iterations - 1


def _conv_layers(
    prefix: str,
    convs: Sequence[ConvSpec],
    shapes: Sequence[tuple[int, int, int]],
    input_shape: tuple[int, int, int],
    capsule_dim: int,
) -> list[CapsAccLayer]:
    """ConvCaps descriptors of a lane's convolutions; the last makes the primary capsules."""
    out: list[CapsAccLayer] = []
    _, h, w = input_shape
    for i, (conv, shape) in enumerate(zip(convs, shapes, strict=True)):
        last = i == len(convs) - 1
        _, h_out, w_out = shape
        out.append(
            CapsAccLayer(
                name=f"{prefix}primary" if last else f"{prefix}conv{i + 1}",
                kind=PRIMARY if last else CONV,
                positions_in=h * w,
                ch_in=conv.in_channels // conv.groups,
                caps_in=1,
                kernel=conv.kernel,
                positions_out=h_out * w_out,
                ch_out=conv.out_channels // capsule_dim if last else conv.out_channels,
                caps_out=capsule_dim if last else 1,
            )
        )
        h, w = h_out, w_out
    return out


def _class_layers(
    prefix: str,
    primary_shape: tuple[int, int, int],
    capsule_dim: int,
    ch_out: int,
    caps_out: int,
    routing_ops: int,
) -> list[CapsAccLayer]:
    channels, h, w = primary_shape
    grid = h * w
    side = math.isqrt(grid) if math.isqrt(grid) ** 2 == grid else max(h, w)
    capsule_channels = channels // capsule_dim
    votes = CapsAccLayer(
        name=f"{prefix}class",
        kind=CLASS,
        positions_in=grid,
        ch_in=capsule_channels,
        caps_in=capsule_dim,
        kernel=side,
        positions_out=1,
        ch_out=ch_out,
        caps_out=caps_out,
    )
    # every routing operation runs over the class layer's shape
    routing = [
        dataclasses.replace(votes, name=f"{prefix}routing{k + 1}", kind=ROUTING)
        for k in range(routing_ops)
    ]
    return [votes, *routing]


def lane_layers(lane: LaneSpec, ctx: CostContext, prefix: str = "") -> list[CapsAccLayer]:
    """The CapsAcc layers of one MLCN lane in ``ctx`` (input shape, classes, routing)."""
    layout = lane.layout(ctx.input_shape)
    layers = _conv_layers(
        prefix, layout.convs, layout.feature_shapes, ctx.input_shape, layout.capsule_dim
    )
    k = ctx.num_classes
    if ctx.routing == "classwise":  # K 1-D capsules, routing by agreement
        ch_out, caps_out, ops = k, 1, routing_operations(ctx.routing_iterations)
    else:  # one K-D capsule: the routing softmax is 1, one weighted sum
        ch_out, caps_out, ops = 1, k, 1
    layers += _class_layers(
        prefix, layout.feature_shapes[-1], layout.capsule_dim, ch_out, caps_out, ops
    )
    return layers


def capsnet_layers(spec: CapsNetSpec) -> list[CapsAccLayer]:
    """The CapsAcc layers of the CapsNet baseline (conv, primary caps, digit caps, routing)."""
    layout = spec.layout
    layers = _conv_layers(
        "", layout.convs, layout.feature_shapes, spec.input_shape, spec.primary_dim
    )
    layers += _class_layers(
        "",
        layout.feature_shapes[-1],
        spec.primary_dim,
        spec.num_classes,
        spec.class_dim,
        routing_operations(spec.routing_iterations),
    )
    return layers


def arch_layers(spec: ArchSpec) -> list[CapsAccLayer]:
    """The CapsAcc layers of an architecture: CapsNet, or every lane of an MLCN in order."""
    if isinstance(spec, CapsNetSpec):
        return capsnet_layers(spec)
    ctx = CostContext.of(spec)
    layers: list[CapsAccLayer] = []
    for i, lane in enumerate(spec.lanes):
        layers += lane_layers(lane, ctx, prefix=f"lane{i + 1}.")
    return layers


def estimate_capsacc(spec: ArchSpec, acc: CapsAcc = CAPSACC) -> CapsAccEstimate:
    """Latency, energy and memory of one inference of ``spec`` on CapsAcc, per layer."""
    return estimate_capsacc_layers(arch_layers(spec), acc)


def lane_estimate(lane: LaneSpec, ctx: CostContext, acc: CapsAcc = CAPSACC) -> CapsAccEstimate:
    return estimate_capsacc_layers(lane_layers(lane, ctx), acc)


def mlcn_energy_j(spec: MLCNSpec, acc: CapsAcc = CAPSACC) -> float:
    """Energy of one inference of every lane of ``spec`` (the head adds none)."""
    ctx = CostContext.of(spec)
    return sum(lane_estimate(lane, ctx, acc).energy_j for lane in spec.lanes)


@COST_MODELS.register("capsacc")
class CapsAccCostModel(CostModel):
    """Lane costs on a CapsAcc device (``--devices capsacc`` picks this model).

    CapsAcc runs inference only, so a *step* here is the inference of one batch:
    ``time`` = ``batch_size x`` one image's CapsAcc latency, ``inference_time`` =
    one image's latency (NASCaps' latency), ``memory_bytes`` = the lane's weights
    at 8 bits (NASCaps' memory). Parameters and FLOPs are the layers' facts, as in
    every model. The head (stacking lane outputs; the decoder is a training aid)
    costs nothing on the accelerator.
    """

    name = "capsacc"
    time_unit = "s"

    def __init__(self, accelerator: CapsAcc = CAPSACC) -> None:
        self.accelerator = accelerator

    def lane_cost(self, lane: LaneSpec, ctx: CostContext) -> LaneCost:
        est = lane_estimate(lane, ctx, self.accelerator)
        return LaneCost(
            lane=lane,
            **layer_facts(lane, ctx),
            memory_bytes=est.memory_bytes,
            time=est.latency_s * ctx.batch_size,
            inference_time=est.latency_s,
        )

    def head_cost(self, num_lanes: int, ctx: CostContext) -> HeadCost:
        return HeadCost(**head_facts(num_lanes, ctx), memory_bytes=0, time=0.0, inference_time=0.0)

    def describe(self) -> str:
        acc = self.accelerator
        return (
            f"capsacc (NASCaps sec. 3.2: {acc.rows}x{acc.cols} PEs, T = {acc.period_s * 1e9:g} ns; "
            "a step is the inference of one batch)"
        )
