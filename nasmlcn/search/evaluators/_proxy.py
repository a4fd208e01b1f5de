"""``proxy``: an analytic stand-in for training, for dry runs, tests and benchmarks.

NOT an accuracy estimate: a smooth, deterministic function of the architecture
with a known optimum, so that a search can be exercised end to end in
milliseconds and samplers can be compared on a known objective. Every trial and
the study say ``evaluator: proxy``. It measures nothing: the measured step time,
memory and inference latency (``measured_inference_latency_s``) stay None; the
predicted ones come from the plan as with every evaluator.

The score rises with the model's training FLOPs per image (saturating) and with
the mean "quality" of its lanes, shaped after the thesis's observations: mlcn2
lanes beat mlcn1 (sec. 4.3.1), width helps up to about 4 and then overfits
(sec. 4.3.2), shallow-but-not-trivial lanes do best; a few different lane kinds
earn a bonus (heterogeneous lanes were more accurate), and a little noise is
seeded by the architecture. Bucket-filled models all spend the same load, so it
is the lane quality that a sampler can learn. The per-epoch curve rises towards the
final value, so early epochs rank trials almost like the last one does.
"""

from __future__ import annotations

import hashlib
import math
import random
import time

from nasmlcn.costs import CostContext, get_cost_model
from nasmlcn.search.evaluators._base import (
    EpochCallback,
    EpochReport,
    EvalRequest,
    Evaluation,
    register_evaluator,
)
from nasmlcn.specs import LaneSpec, MLCNSpec


def proxy_accuracy(spec: MLCNSpec, batch_size: int = 100) -> float:
    """The proxy's final accuracy of ``spec`` (deterministic)."""
    cost = get_cost_model("analytic").costs(spec.lanes, CostContext.of(spec, batch_size))
    flops_per_image = cost.train_flops / batch_size
    capacity = 1.0 - math.exp(-flops_per_image / 1.5e9)
    quality = sum(lane_quality(lane) for lane in spec.lanes) / spec.num_lanes
    diversity = min(len(set(spec.lanes)), 4) / 4
    noise = _rng(spec, 0).gauss(0.0, 0.002)
    return min(0.995, 0.70 + 0.10 * capacity + 0.12 * quality + 0.015 * diversity + noise)


def lane_quality(lane: LaneSpec) -> float:
    """In (0, 1]: 1 for an mlcn2 lane of width 4 and depth 2."""
    kind = 1.0 if lane.type == "mlcn2" else 0.8
    return (
        kind * math.exp(-(((lane.width - 4) / 2) ** 2)) * math.exp(-(((lane.depth - 2) / 2) ** 2))
    )


def _rng(spec: MLCNSpec, salt: int) -> random.Random:
    digest = hashlib.sha256(f"{spec.describe()}|{salt}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "little"))


@register_evaluator("proxy")
class ProxyEvaluator:
    """The analytic stand-in (see the module docstring)."""

    name = "proxy"
    measured = False
    checkpoints = False  # nothing trained: nothing to keep

    def __init__(self, **_: object) -> None:
        pass

    def evaluate(self, request: EvalRequest, on_epoch: EpochCallback) -> Evaluation:
        start = time.perf_counter()
        final = proxy_accuracy(request.spec, request.batch_size)
        rng = _rng(request.spec, 1 + request.training_seed)
        curve: list[float] = []
        for epoch in range(1, request.epochs + 1):
            progress = 1.0 - 0.3 * 0.55 ** (epoch - 1)
            value = final * progress + rng.gauss(0.0, 0.003) * (epoch < request.epochs)
            curve.append(round(min(max(value, 0.0), 1.0), 6))
            decision = on_epoch(EpochReport(epoch, curve[-1], time.perf_counter() - start))
            if decision is not None and not decision.goes_on:
                break  # pruned, or the search's time is up: the trial ends it
        return Evaluation(
            accuracy=curve[-1],
            val_accuracy_per_epoch=tuple(curve),
            seconds=time.perf_counter() - start,
        )
