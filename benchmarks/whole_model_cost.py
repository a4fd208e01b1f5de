"""The whole-model cost model against measured step times of random whole models.

Measures ``--models`` (>= 20) random MLCNs of 1-64 lanes, 1-3 kinds mixed
(:func:`nasmlcn.costs._samples.calibration_models`), one training step each as
training runs it (lanes fused, margin + reconstruction loss, Adam; batch
``--batch``, ``--threads`` threads, the fastest of ``--steps`` steps after a
warm-up). Then it compares two predictions with the measurements:

* ``whole-model``: the calibrated whole-model time (:mod:`nasmlcn.costs._whole`),
  each model predicted by a fit on the *other* folds only (``--folds``-fold
  cross-validation, so no model predicts itself);
* ``analytic``: the default cost model's lane times summed, plus its head.

For each: Pearson's r and Spearman's rho between prediction and measurement, and
the worst factor between them after one common scale factor (the scale that
minimises the worst factor: ``sqrt(max ratio / min ratio)``). The issue's bar for
the calibrated model: r and rho >= 0.95, worst factor <= 1.5.

    python benchmarks/whole_model_cost.py [--models 24] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

import torch

from nasmlcn.costs import (
    MODEL_TIME_FEATURES,
    CostContext,
    calibration_models,
    cross_validated_times,
    fit_model_time,
    get_cost_model,
    time_agreement,
    whole_model_features,
)
from nasmlcn.measure import time_model_step
from nasmlcn.specs import format_lanes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", type=int, default=24)
    parser.add_argument("--max-lanes", type=int, default=64)
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--folds", type=int, default=6)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    ctx = CostContext(batch_size=args.batch)
    device = torch.device(args.device)
    analytic = get_cost_model("analytic")
    rows: list[dict[str, Any]] = []
    started = time.perf_counter()
    models = calibration_models(args.models, args.seed, max_lanes=args.max_lanes)
    for i, lanes in enumerate(models):
        seconds = time_model_step(lanes, ctx, device, steps=args.steps)
        cost = analytic.model_cost(ctx.spec(lanes), args.batch)
        rows.append(
            {
                "lanes": format_lanes(lanes),
                "num_lanes": len(lanes),
                "seconds": seconds,
                "features": whole_model_features(lanes, ctx, device.type),
                "analytic": cost.time,
            }
        )
        print(  # progress on stderr (stdout: the table or the JSON)
            f"  [{i + 1}/{args.models}] {len(lanes):2d} lanes {seconds * 1e3:8.1f} ms  {rows[-1]['lanes']}",
            file=sys.stderr,
            flush=True,
        )
    measured = [r["seconds"] for r in rows]
    features = [r["features"] for r in rows]
    whole = cross_validated_times(
        models,
        measured,
        ctx,
        device.type,
        folds=args.folds,
        seed=args.seed,
    )
    for r, p in zip(rows, whole, strict=True):
        r["whole_model"] = p
    coefficients = fit_model_time(features, measured)
    result = {
        "device": str(device),
        "threads": args.threads,
        "batch": args.batch,
        "models": rows,
        "features": list(MODEL_TIME_FEATURES),
        "coefficients_all_models": coefficients,
        "whole_model": time_agreement(whole, measured),
        "analytic": time_agreement([r["analytic"] for r in rows], measured),
        "minutes": (time.perf_counter() - started) / 60,
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(
        f"{len(rows)} random models of 1-{args.max_lanes} lanes on {device}, {args.threads} "
        f"thread(s), batch {args.batch}; measured: fastest of {args.steps} training steps"
    )
    print(f"{'lanes':>5} {'measured':>10} {'whole-model':>12} {'analytic (s)':>13}  model")
    for r in sorted(rows, key=lambda r: r["seconds"]):
        print(
            f"{r['num_lanes']:5d} {r['seconds'] * 1e3:8.1f} ms {r['whole_model'] * 1e3:9.1f} ms "
            f"{r['analytic']:13.4f}  {r['lanes']}"
        )
    for name, label in (
        ("whole_model", f"whole-model ({args.folds}-fold held out)"),
        ("analytic", "analytic (lane sum + head)"),
    ):
        s = result[name]
        print(
            f"{label:34} Pearson {s['pearson']:.3f}  Spearman {s['spearman']:.3f}  "
            f"worst factor after one scale {s['worst_factor']:.2f}x"
        )
    print(
        "coefficients (all models): "
        + ", ".join(f"{n}={c:.3g}" for n, c in zip(MODEL_TIME_FEATURES, coefficients, strict=True))
    )
    return 0


if __name__ == "__main__":
    from nasmlcn.reproduce.engines.common import exit_with

    exit_with(main())
