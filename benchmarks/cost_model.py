"""Cost models vs measurements: step time and peak memory of random lanes.

Measures >= 30 random lanes (mlcn1/mlcn2, width and depth 1..5, batch 100) on
one device: the training step time (interleaved rounds, fastest step kept)
and the peak training memory (on a CPU, a fresh process per lane; on CUDA,
``torch.cuda.max_memory_allocated``). The calibrated model is fitted on two
thirds of the lanes; every model is judged on the remaining third (held out),
and the calibrated one also by 5-fold cross-validation over all lanes. For the
memory models it reports the share of lanes under-predicted by more than 5 %
and the mean over-estimate. On a CPU, memory is measured twice: with glibc's
mmap threshold held fixed (reproducible; what the calibrated model is fitted
to) and with glibc's defaults (what an ordinary process shows: the heap keeps
freed memory, by a varying amount). Finally, the analytic FLOP counts are
checked against ``torch.utils.flop_counter.FlopCounterMode`` on a few lanes.

    python benchmarks/cost_model.py [--json] [--lanes 30] [--seed 0] [--device cpu|cuda]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from typing import Any

import torch
from torch.utils.flop_counter import FlopCounterMode

from nasmlcn.costs import CostContext, get_cost_model, lane_profile
from nasmlcn.costs._calibrated import CalibratedCostModel
from nasmlcn.costs._fit import cross_validated, fit_calibration
from nasmlcn.costs._samples import LaneSample
from nasmlcn.costs._scoring import score_cost_model, score_predictions
from nasmlcn.errors import CalibrationError
from nasmlcn.hardware import usable_cores
from nasmlcn.measure import (
    CalibrationRequest,
    LaneStepper,
    PeakSettings,
    lane_peak_memories,
    measure_calibration,
)
from nasmlcn.specs import LaneSpec
from nasmlcn.stats import Agreement, agreement

MIB = 2**20
FLOP_CHECK_LANES = ["mlcn1:1x1", "mlcn1:3x2", "mlcn2:2x3", "mlcn2:5x1"]


def counted_flops(lane: LaneSpec, ctx: CostContext) -> int:
    """FLOPs of one forward + backward pass, as ``FlopCounterMode`` counts them."""
    stepper = LaneStepper(lane, ctx, torch.device("cpu"))
    with FlopCounterMode(display=False) as counter:
        out = stepper.module(stepper.x)  # (B, K)
        out.abs().sum().backward()
    return int(counter.get_total_flops())


def flop_check(ctx: CostContext) -> list[dict[str, Any]]:
    from nasmlcn.specs import parse_lane

    rows = []
    for text in FLOP_CHECK_LANES:
        lane = parse_lane(text)
        analytic = lane_profile(lane, ctx).train_flops_per_step(ctx.batch_size)
        counted = counted_flops(lane, ctx)
        rows.append({"lane": text, "analytic": analytic, "counted": counted})
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--lanes", type=int, default=30)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--batch-size", type=int, default=100)
    parser.add_argument("--device", default="cpu", help="cpu or cuda[:N]")
    parser.add_argument("--threads", type=int, default=usable_cores())
    parser.add_argument("--rounds", type=int, default=2, help="interleaved timing rounds")
    parser.add_argument(
        "--clock",
        choices=["wall", "cpu"],
        default="wall",
        help="cpu: process CPU time (needs --threads 1; immune to other processes)",
    )
    parser.add_argument("--train-share", type=float, default=2 / 3)
    parser.add_argument(
        "--no-default-malloc",
        action="store_true",
        help="skip the second CPU memory pass with glibc's default allocator settings",
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if args.lanes < 6:
        parser.error("--lanes must be at least 6")

    request = CalibrationRequest(
        lanes=args.lanes,
        seed=args.seed,
        batch_size=args.batch_size,
        device=args.device,
        threads=args.threads,
        clock=args.clock,
        rounds=args.rounds,
    )

    started = time.perf_counter()

    def progress(phase: str, done: int, total: int) -> None:
        print(f"\r{phase} {done}/{total}", end="", file=sys.stderr, flush=True)

    try:
        measured = measure_calibration(request, progress)
    except CalibrationError as exc:
        parser.error(str(exc))
    device, ctx, speeds = measured.lane_device.name, measured.context, measured.speeds
    samples = list(measured.samples)
    lanes = [s.lane for s in samples]
    default_peaks: list[int] | None = None
    if device == "cpu" and not args.no_default_malloc:
        default_peaks = lane_peak_memories(
            lanes,
            ctx,
            device,
            memory=PeakSettings(jobs=2, malloc="default"),
            threads=args.threads,
            seed=args.seed,
        )
    print(file=sys.stderr)
    elapsed = time.perf_counter() - started

    order = list(range(len(samples)))
    random.Random(args.seed).shuffle(order)
    cut = max(3, min(len(samples) - 3, round(args.train_share * len(samples))))
    train = [samples[i] for i in sorted(order[:cut])]
    test = [samples[i] for i in sorted(order[cut:])]
    speed = measured.speed
    calibration = fit_calibration(
        train,
        ctx,
        device=device,
        speed=speed,
        threads=args.threads,
        memory_method=measured.memory_method,
        speed_anchor=speeds.anchor,
    )
    models = [
        get_cost_model("analytic"),
        get_cost_model("thesis"),
        CalibratedCostModel(calibration),
    ]
    held_out = [score_cost_model(m, test, ctx, speed) for m in models]
    everything = fit_calibration(samples, ctx, device=device, speed=speed, threads=args.threads)
    cv_seconds, cv_peaks = cross_validated(everything, folds=5, seed=args.seed)
    cv = score_predictions("calibrated (5-fold, all lanes)", cv_seconds, cv_peaks, samples)
    in_sample = [score_cost_model(m, samples, ctx, speed) for m in models[:2]]

    default_malloc: dict[str, Agreement] = {}
    if default_peaks is not None:
        measured_default = [float(p) for p in default_peaks]
        full_cal = CalibratedCostModel(everything)
        for m in [*models[:2], full_cal]:
            predicted = [float(m.lane_cost(s.lane, ctx).memory_bytes) for s in samples]
            name = (
                "calibrated (fit to fixed-threshold peaks, all lanes)" if m is full_cal else m.name
            )
            default_malloc[name] = agreement(predicted, measured_default)

    flops = flop_check(ctx)
    result: dict[str, Any] = {
        "device": device,
        "device_description": measured.lane_device.description,
        "threads": torch.get_num_threads(),
        "clock": args.clock,
        "batch_size": args.batch_size,
        "lanes": len(samples),
        "train_lanes": len(train),
        "test_lanes": len(test),
        "seed": args.seed,
        "seconds": round(elapsed, 1),
        "load_average": measured.load_average,
        "fc_flops_per_second": speeds.fc_flops_per_second,
        "speed": speed,
        "speed_anchor": speeds.anchor,
        "memory_method": measured.memory_method,
        "held_out": [s.to_dict() for s in held_out],
        "cross_validated": cv.to_dict(),
        "all_lanes": [s.to_dict() for s in in_sample],
        "default_malloc_memory": {k: v.to_dict() for k, v in default_malloc.items()},
        "calibrated_time_coefficients": dict(
            zip(calibration.time_features, calibration.time_coefficients, strict=True)
        ),
        "calibrated_memory_coefficients": dict(
            zip(calibration.memory_features, calibration.memory_coefficients, strict=True)
        ),
        "flop_check": flops,
        "samples": [
            {
                **s.to_dict(),
                **({"peak_bytes_default_malloc": default_peaks[i]} if default_peaks else {}),
            }
            for i, s in enumerate(samples)
        ],
    }
    if args.json:
        print(json.dumps(result))
        return 0
    print_report(result, samples, default_peaks)
    return 0


def _f(value: float | None, fmt: str) -> str:
    return "-" if value is None else format(value, fmt)


def print_report(
    result: dict[str, Any], samples: list[LaneSample], default_peaks: list[int] | None
) -> None:
    print(
        f"{result['lanes']} lanes on {result['device']} ({result['device_description']}), "
        f"{result['threads']} thread(s) ({result['clock']} clock), batch {result['batch_size']}, "
        f"measured in {result['seconds']:.0f} s (1-minute load up to {result['load_average']:.1f})"
    )
    print(
        f"FC 512x512: {result['fc_flops_per_second'][result['device']] / 1e9:.1f} GFLOP/s -> "
        f"speed {result['speed']:.3g} ({result['speed_anchor']})"
    )
    print(f"memory: {result['memory_method']}")
    print()
    header = (
        f"{'model':<32} {'time r':>7} {'rho':>6} {'MAPE':>7} | {'mem r':>6} {'rho':>6} "
        f"{'MAPE':>8} {'>5% under':>9} {'max under':>9} {'mean over':>9} {'MiB':>8}"
    )

    def row(s: dict[str, Any]) -> str:
        t, m = s["time"], s["memory"]
        time_mape = f"{t['mape']:.1f}%" if t["mape"] is not None else f"{t['mape_scaled']:.1f}%*"
        return (
            f"{s['model']:<32} {_f(t['pearson'], '.3f'):>7} {_f(t['spearman'], '.3f'):>6} "
            f"{time_mape:>7} | {_f(m['pearson'], '.3f'):>6} {_f(m['spearman'], '.3f'):>6} "
            f"{m['mape']:>7.1f}% {100 * m['under_share']:>8.0f}% {m['max_under_pct']:>8.1f}% "
            f"{m['mean_over_pct']:>+8.1f}% {m['mean_over'] / MIB:>+8.1f}"
        )

    print(
        f"held out: {result['test_lanes']} lanes (calibrated fitted on the other {result['train_lanes']})"
    )
    print(header)
    for s in result["held_out"]:
        print(row(s))
    print(row(result["cross_validated"]))
    print()
    print(f"all {result['lanes']} lanes (models not fitted to them)")
    print(header)
    for s in result["all_lanes"]:
        print(row(s))
    print("* thesis eq. 5.1 is in width^2*depth units: MAPE after the best single scale factor")
    if result["default_malloc_memory"]:
        print()
        print("memory vs peaks with glibc's default allocator settings (all lanes)")
        print(
            f"{'model':<52} {'MAPE':>8} {'>5% under':>9} {'max under':>9} {'mean over':>9} {'MiB':>8}"
        )
        for name, a in result["default_malloc_memory"].items():
            print(
                f"{name:<52} {a['mape']:>7.1f}% {100 * a['under_share']:>8.0f}% "
                f"{a['max_under_pct']:>8.1f}% {a['mean_over_pct']:>+8.1f}% "
                f"{a['mean_over'] / MIB:>+8.1f}"
            )
    print()
    coefficients = ", ".join(
        f"{k} {v:.3g}" for k, v in result["calibrated_time_coefficients"].items()
    )
    print(f"calibrated time (s per unit): {coefficients}")
    coefficients = ", ".join(
        f"{k} {v:.3g}" for k, v in result["calibrated_memory_coefficients"].items()
    )
    print(f"calibrated memory (bytes per unit): {coefficients}")
    print()
    print("analytic FLOPs per training step (forward + backward) vs FlopCounterMode")
    for r in result["flop_check"]:
        ratio = r["analytic"] / r["counted"] if r["counted"] else float("nan")
        print(
            f"  {r['lane']:<10} analytic {r['analytic']:>15,} counted {r['counted']:>15,} ratio {ratio:.6f}"
        )
    print()
    analytic = get_cost_model("analytic")
    ctx = CostContext(batch_size=result["batch_size"])
    print(f"{'lane':<10} {'ms/step':>8} {'peak MiB':>9} {'default':>8} {'analytic MiB':>12}")
    for i, s in enumerate(samples):
        default = f"{default_peaks[i] / MIB:8.1f}" if default_peaks else f"{'-':>8}"
        print(
            f"{s.lane!s:<10} {s.seconds * 1e3:8.1f} {s.peak_bytes / MIB:9.1f} {default} "
            f"{analytic.lane_cost(s.lane, ctx).memory_bytes / MIB:12.1f}"
        )


if __name__ == "__main__":
    from nasmlcn.reproduce.engines.common import exit_with

    exit_with(main())
