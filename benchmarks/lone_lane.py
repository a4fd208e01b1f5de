"""A lone lane on a CPU: its patch product against its own convolution of the image.

A model's lanes of one kind run as one stack. A kind with a single lane is a stack
of one, and there is nothing to batch: it can run its first layer as the patch
product the fused path uses (before), or as a convolution of the image, as a lane
alone computes it (what ``LaneSet`` now does on a CPU). For each lane kind, one
training pass of the lane (forward, a margin loss on its class capsules, backward)
at batch ``--batch`` on random images, one thread, the two paths alternating
``--repeats`` times after a warm-up; the figure is each path's median and the
ratio convolution / patch product (below 1: the convolution is faster).

    python benchmarks/lone_lane.py [--lanes mlcn2:2x2,mlcn1:1x4] [--batch 100]
        [--repeats 20] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Sequence
from typing import Any, cast

import torch

from nasmlcn.models import LaneStack, build_model, margin_loss
from nasmlcn.models._fused import Patches, finish
from nasmlcn.reproduce.engines.common import exit_with, say
from nasmlcn.specs import MLCNSpec

LANES = ("mlcn2:1x1", "mlcn2:2x2", "mlcn2:4x1", "mlcn2:1x4", "mlcn1:1x4", "mlcn1:3x4")
"""Kinds of the default space's lanes, narrow to wide."""

PATHS = {"patch product": True, "convolution": False}
"""Each path by whether the stack runs fused (its patch product)."""


def _pass(stack: LaneStack, x: torch.Tensor, y: torch.Tensor, fused: bool) -> float:
    """Seconds of one forward and backward pass of the lone lane ``stack``."""
    began = time.perf_counter()
    out = finish("vector", stack(Patches(x), fused))[0]  # (B, K)
    margin_loss(out, y).backward()
    return time.perf_counter() - began


def measure(lane: str, batch: int, repeats: int) -> dict[str, Any]:
    """Median seconds of each path for a model of ``lane`` alone."""
    torch.manual_seed(0)
    model = build_model(MLCNSpec.from_lanes(lane))
    (only,) = model.lanes.stacks
    stack = cast(LaneStack, only)
    x = torch.rand(batch, *model.spec.input_shape).contiguous(memory_format=torch.channels_last)
    y = torch.randint(0, 10, (batch,))
    times: dict[str, list[float]] = {name: [] for name in PATHS}
    for i in range(repeats + 2):
        order = list(PATHS) if i % 2 == 0 else list(reversed(PATHS))
        for name in order:
            seconds = _pass(stack, x, y, PATHS[name])
            if i >= 2:  # the first two rounds warm up
                times[name].append(seconds)
    patch, conv = (statistics.median(times[n]) * 1000 for n in PATHS)
    return {"lane": lane, "patch_ms": patch, "conv_ms": conv, "ratio": conv / patch}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lanes", default=",".join(LANES))
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    rows = []
    for lane in args.lanes.split(","):
        say(f"{lane} ...")
        rows.append(measure(lane, args.batch, args.repeats))
    if args.json:
        print(json.dumps({"batch": args.batch, "repeats": args.repeats, "rows": rows}))
        return 0
    print(
        f"one lane alone, forward + backward, batch {args.batch}, 1 CPU thread, median of "
        f"{args.repeats} alternating passes per path"
    )
    print(f"{'lane':12s} {'patch product':>14s} {'convolution':>12s} {'conv/patch':>11s}")
    for r in rows:
        print(
            f"{r['lane']:12s} {r['patch_ms']:11.1f} ms {r['conv_ms']:9.1f} ms {r['ratio']:10.2f}x"
        )
    return 0


if __name__ == "__main__":
    exit_with(main())
