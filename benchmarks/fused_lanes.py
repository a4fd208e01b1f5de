"""Fused lane groups against the per-lane loop: training-step time, in one process.

For each model, one training step (forward, margin + reconstruction loss, backward,
Adam) at batch ``--batch`` on random images, timed with the lanes run one after
another and with lanes of one kind fused (``MLCN.fuse_lanes``), alternating the two
``--repeats`` times after a warm-up; the figure is the median step time of each.
Printed per model: its training FLOPs per step (torch's FLOP counter), the rate of
each path in GFLOP/s and as a share of this machine's single-matrix-product rate
(``sgemm``, measured in the same run), and the speedup of fused over per-lane.
Beside it, the batch-1 inference latency of each path (eval mode, no autograd).
Then the time per FLOP of the many-narrow-lane models over that of the same kinds
as a few wide lanes, per path (the issue's target: within 1.3x when fused).

    python benchmarks/fused_lanes.py                 # 1 thread, batch 100
    python benchmarks/fused_lanes.py --quick --json
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import torch

from nasmlcn._allocator import keep_freed_memory
from nasmlcn.models import build_model, capsule_loss
from nasmlcn.specs import MLCNSpec

MODELS = (
    "48*mlcn2:2x1",
    "3*mlcn2:8x1",
    "64*mlcn2:1x1",
    "4*mlcn2:4x1",
    "36*mlcn2:2x2",
    "4*mlcn2:6x2",
    "20*mlcn1:2x1,20*mlcn2:2x4,8*mlcn1:2x2",
)
PAIRS = (("64*mlcn2:1x1", "4*mlcn2:4x1"), ("36*mlcn2:2x2", "4*mlcn2:6x2"))
"""Many narrow lanes and the same kind as a few wide lanes (the issue's examples)."""


def sgemm_rate(size: int = 1024, repeats: int = 5) -> float:
    """FLOP/s of one ``size`` x ``size`` float32 matrix product on this machine."""
    a, b = torch.randn(size, size), torch.randn(size, size)
    a @ b
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        a @ b
        times.append(time.perf_counter() - start)
    return 2 * size**3 / min(times)


def step_flops(lanes: str, batch: int) -> int:
    from torch.utils.flop_counter import FlopCounterMode

    # Counted on the per-lane path: the same arithmetic, but torch's counter takes a
    # grouped convolution's backward for a dense one (369 GFLOP for 48*mlcn2:2x1's
    # fused step against 32.6 counted per lane)
    model = build_model(MLCNSpec.from_lanes(lanes))
    model.fuse_lanes = False
    x, y = torch.rand(batch, 1, 28, 28), torch.randint(0, 10, (batch,))
    with FlopCounterMode(display=False) as counter:
        out = model(x, y)
        capsule_loss(out.lengths, out.reconstruction, x, y).total.backward()
    return int(counter.get_total_flops())


def time_steps(lanes: str, batch: int, repeats: int, warmup: int) -> dict[str, float]:
    """Median step seconds, per-lane and fused, alternating."""
    torch.manual_seed(0)
    model = build_model(MLCNSpec.from_lanes(lanes))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    x, y = torch.rand(batch, 1, 28, 28), torch.randint(0, 10, (batch,))

    def step() -> float:
        start = time.perf_counter()
        optimizer.zero_grad(set_to_none=True)
        out = model(x, y)
        capsule_loss(out.lengths, out.reconstruction, x, y).total.backward()
        optimizer.step()
        return time.perf_counter() - start

    seconds: dict[str, list[float]] = {"per_lane": [], "fused": []}
    for fused in (False, True):
        model.fuse_lanes = fused
        for _ in range(warmup):
            step()
    for i in range(2 * repeats):
        fused = (i % 2 == 1) if (i // 2) % 2 == 0 else (i % 2 == 0)  # ABBA order
        model.fuse_lanes = fused
        seconds["fused" if fused else "per_lane"].append(step())
    return {name: statistics.median(values) for name, values in seconds.items()}


def time_inference(lanes: str, repeats: int) -> dict[str, float]:
    """Median seconds of one batch-1 forward pass (eval mode, no autograd), per-lane
    and fused, alternating."""
    torch.manual_seed(0)
    model = build_model(MLCNSpec.from_lanes(lanes)).eval()
    x = torch.rand(1, 1, 28, 28)
    seconds: dict[str, list[float]] = {"per_lane": [], "fused": []}
    with torch.inference_mode():
        for fused in (False, True):
            model.fuse_lanes = fused
            model(x)
        for i in range(2 * repeats):
            fused = (i % 2 == 1) if (i // 2) % 2 == 0 else (i % 2 == 0)  # ABBA order
            model.fuse_lanes = fused
            start = time.perf_counter()
            model(x)
            seconds["fused" if fused else "per_lane"].append(time.perf_counter() - start)
    return {name: statistics.median(values) for name, values in seconds.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=5, help="steps per path")
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--model", action="append", help="lanes (repeatable)")
    parser.add_argument("--quick", action="store_true", help="batch 10, 2 steps, 2 models")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    keep_freed_memory()  # as training does (nasmlcn/_allocator.py); both paths alike
    models = args.model or list(MODELS)
    if args.quick:
        args.batch, args.repeats, args.warmup = 10, 2, 1
        models = args.model or ["8*mlcn2:1x1", "2*mlcn2:2x1"]
    sgemm = sgemm_rate()
    rows = []
    for lanes in models:
        flops = step_flops(lanes, args.batch)
        times = time_steps(lanes, args.batch, args.repeats, args.warmup)
        latency = time_inference(lanes, 5 * args.repeats)
        rows.append(
            {
                "lanes": lanes,
                "flops": flops,
                "seconds": times,
                "gflops": {k: flops / v / 1e9 for k, v in times.items()},
                "share_of_sgemm": {k: flops / v / sgemm for k, v in times.items()},
                "speedup": times["per_lane"] / times["fused"],
                "batch1_seconds": latency,
            }
        )
    by_lanes = {r["lanes"]: r for r in rows}
    pairs = [
        {
            "narrow": narrow,
            "wide": wide,
            **{
                f"per_flop_ratio_{path}": (
                    by_lanes[narrow]["seconds"][path] / by_lanes[narrow]["flops"]
                )
                / (by_lanes[wide]["seconds"][path] / by_lanes[wide]["flops"])
                for path in ("per_lane", "fused")
            },
        }
        for narrow, wide in PAIRS
        if narrow in by_lanes and wide in by_lanes
    ]
    result = {
        "threads": args.threads,
        "batch": args.batch,
        "steps_per_path": args.repeats,
        "sgemm_gflops": sgemm / 1e9,
        "models": rows,
        "pairs": pairs,
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(
        f"{args.threads} thread(s), batch {args.batch}, median of {args.repeats} training steps "
        f"per path (alternating; % = share of sgemm's rate, {sgemm / 1e9:.0f} GFLOP/s); batch-1 "
        f"inference: median of {5 * args.repeats} forward passes per path"
    )
    print(
        f"{'model':42} {'GFLOP':>7} {'per-lane':>16} {'fused':>16} {'speedup':>8} "
        f"{'batch-1 per-lane':>17} {'fused':>8}"
    )
    for r in rows:
        cells = [
            f"{r['seconds'][p] * 1e3:6.0f} ms {r['share_of_sgemm'][p]:5.0%}"
            for p in ("per_lane", "fused")
        ]
        print(
            f"{r['lanes']:42} {r['flops'] / 1e9:7.2f} {cells[0]:>16} {cells[1]:>16} "
            f"{r['speedup']:7.2f}x {r['batch1_seconds']['per_lane'] * 1e3:14.1f} ms "
            f"{r['batch1_seconds']['fused'] * 1e3:5.1f} ms"
        )
    for p in pairs:
        print(
            f"time per FLOP, {p['narrow']} / {p['wide']}: per-lane "
            f"{p['per_flop_ratio_per_lane']:.2f}x, fused {p['per_flop_ratio_fused']:.2f}x"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
