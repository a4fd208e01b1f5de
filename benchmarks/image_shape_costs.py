"""The cost models at a user's image shape: FLOPs and peak training memory of random
lanes at 1x28x28 (Fashion-MNIST) and at larger colour images (3x64x64 by default),
predicted against measured.

For each shape, the same ``--lanes`` random lanes (type, width and depth 1..``--max``,
seeded) are measured on this CPU: the peak training memory of a few steps at batch
``--batch``, each lane in a fresh process (resident-set growth above a warmed-up
baseline, glibc's mmap threshold held fixed: what ``nasmlcn calibrate`` measures).
Predicted beside it:

- ``analytic``: from the real layer shapes at that input;
- ``calibrated (cv)``: fitted to this shape's own lanes, each predicted by a fit to
  the other folds (5-fold);
- ``calibrated from 1x28x28``: fitted to all the 28x28 lanes, applied to the other
  shape (does a calibration carry over to other images?).

Printed per shape and model: predicted / measured (min, median, max), the share of
lanes under-predicted, the mean over-estimate; and the analytic FLOPs per training
step at each shape. The calibration is fitted to memory only (the step times are
not measured here; its time part is not used).

    python benchmarks/image_shape_costs.py [--shape 3x64x64] [--lanes 16] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from typing import Any

from nasmlcn.costs import CostContext, get_cost_model
from nasmlcn.costs._calibrated import CalibratedCostModel
from nasmlcn.costs._fit import cross_validated, fit_calibration
from nasmlcn.costs._samples import LaneSample, calibration_lanes
from nasmlcn.measure import PeakSettings, lane_peak_memories
from nasmlcn.specs import LaneSpec

BASE = (1, 28, 28)


def _shape(text: str) -> tuple[int, int, int]:
    c, h, w = (int(v) for v in text.lower().split("x"))
    return c, h, w


def ratios(predicted: list[float], measured: list[int]) -> dict[str, Any]:
    r = [p / m for p, m in zip(predicted, measured, strict=True)]
    return {
        "min": min(r),
        "median": statistics.median(r),
        "max": max(r),
        "under_share": sum(x < 1 for x in r) / len(r),
        "mean_over_pct": 100 * (statistics.mean(r) - 1),
        "ratios": r,
    }


def measure(
    lanes: list[LaneSpec], shape: tuple[int, int, int], args: argparse.Namespace
) -> list[int]:
    ctx = CostContext(input_shape=shape, batch_size=args.batch)

    def progress(phase: str, done: int, total: int) -> None:
        print(f"\r{'x'.join(map(str, shape))}: {phase} {done}/{total}", end="", file=sys.stderr)

    peaks = lane_peak_memories(
        lanes, ctx, "cpu", memory=PeakSettings(jobs=args.jobs), threads=1, progress=progress
    )
    print(file=sys.stderr)
    return peaks


def calibrated(lanes: list[LaneSpec], peaks: list[int], ctx: CostContext) -> Any:
    samples = [LaneSample(lane, 1.0, peak) for lane, peak in zip(lanes, peaks, strict=True)]
    return fit_calibration(samples, ctx, device="cpu", speed=1.0, threads=1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--shape", default="3x64x64", help="CxHxW of the larger images")
    parser.add_argument("--lanes", type=int, default=16)
    parser.add_argument("--max", type=int, default=4, help="largest width and depth")
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--jobs", type=int, default=2, help="child processes at once")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    shapes = [BASE, _shape(args.shape)]
    lanes = calibration_lanes(args.lanes, args.seed, max_width=args.max, max_depth=args.max)
    analytic = get_cost_model("analytic")
    result: dict[str, Any] = {
        "lanes": [str(lane) for lane in lanes],
        "batch": args.batch,
        "shapes": {},
    }
    fits = {}
    for shape in shapes:
        ctx = CostContext(input_shape=shape, batch_size=args.batch)
        peaks = measure(lanes, shape, args)
        fits[shape] = calibrated(lanes, peaks, ctx)
        _, cv_peaks = cross_validated(fits[shape], folds=5, seed=args.seed)
        predicted = {
            "analytic": [float(analytic.lane_cost(lane, ctx).memory_bytes) for lane in lanes],
            "calibrated (cv)": [float(p) for p in cv_peaks],
        }
        if shape != BASE:
            carried = CalibratedCostModel(fits[BASE])
            predicted["calibrated from 1x28x28"] = [
                float(carried.lane_cost(lane, ctx).memory_bytes) for lane in lanes
            ]
        result["shapes"]["x".join(map(str, shape))] = {
            "measured_bytes": peaks,
            "flops": [analytic.lane_cost(lane, ctx).train_flops for lane in lanes],
            "models": {name: ratios(p, peaks) for name, p in predicted.items()},
        }
    base, big = (result["shapes"]["x".join(map(str, s))] for s in shapes)
    result["flops_ratio_median"] = statistics.median(
        b / a for a, b in zip(base["flops"], big["flops"], strict=True)
    )
    result["memory_ratio_median"] = statistics.median(
        b / a for a, b in zip(base["measured_bytes"], big["measured_bytes"], strict=True)
    )
    if args.json:
        print(json.dumps(result))
        return 0
    print(f"{args.lanes} lanes (width, depth 1..{args.max}), batch {args.batch}, this CPU")
    print(
        f"{'shape':<9} {'model':<26} {'min':>6} {'median':>7} {'max':>6} {'under':>6} {'mean over':>10}"
    )
    for name, data in result["shapes"].items():
        for model, r in data["models"].items():
            print(
                f"{name:<9} {model:<26} {r['min']:6.3f} {r['median']:7.3f} {r['max']:6.3f} "
                f"{100 * r['under_share']:5.0f}% {r['mean_over_pct']:+9.1f}%"
            )
    print(
        f"at {args.shape}: median {result['flops_ratio_median']:.2f}x the FLOPs and "
        f"{result['memory_ratio_median']:.2f}x the measured peak memory of 1x28x28"
    )
    return 0


if __name__ == "__main__":
    from nasmlcn.reproduce.engines.common import exit_with

    exit_with(main())
