"""The whole-model step time on models the fit never saw: 10 committed models.

``nasmlcn calibrate`` fits the whole-model step time (:mod:`nasmlcn.costs._whole`)
to random whole models (:func:`nasmlcn.costs.calibration_models`). This benchmark
measures those (``--fit-models``, as calibrate does: the fastest of a few training
steps), fits, and then predicts the ten models of :data:`HELD_OUT`, which are
committed here, span 1 to 60 lanes and are not among the fitted ones. Each held-out
model is measured in ``--runs`` runs (rounds over all ten, so a slow spell touches
every model alike), each run the fastest of ``--steps`` steps after a warm-up; its
figure is the median of the runs.

It prints, for each held-out model, the measured and predicted step time and their
ratio; then the worst ratio either way (max of predicted/measured and its inverse)
and Spearman's rho. The baseline, fitted to the same measurements in the same run,
is the fit without the per-step term (``step``: what every step pays once, which
small models are made of). The issue's bar: worst ratio <= 1.5, rho >= 0.95.

Times are this process's CPU time at 1 thread by default (``--clock cpu``: immune to
other processes on a shared machine); ``--clock wall`` for elapsed time.

    python benchmarks/whole_model_held_out.py [--fit-models 24] [--runs 3] [--json]
    python benchmarks/whole_model_held_out.py --save m.json   # keep the measurements
    python benchmarks/whole_model_held_out.py --load m.json   # refit without measuring
    python benchmarks/whole_model_held_out.py --quick         # a smoke run (batch 4)
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

HELD_OUT = (
    "mlcn1:1x1",
    "mlcn2:4x4",
    "3*mlcn1:2x2",
    "mlcn1:3x2,4*mlcn2:1x3",
    "9*mlcn2:2x2",
    "10*mlcn1:1x2,6*mlcn2:1x1",
    "24*mlcn2:1x3",
    "18*mlcn1:2x1,15*mlcn2:1x2",
    "47*mlcn1:1x2",
    "20*mlcn1:1x1,22*mlcn2:2x2,18*mlcn1:1x4",
)
"""The held-out models: 1, 1, 3, 5, 9, 16, 24, 33, 47 and 60 lanes, both lane types,
one to three kinds, widths 1-4 and depths 1-4 (as the space's models have)."""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fit-models", type=int, default=24)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--clock", choices=("cpu", "wall"), default="cpu")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--save", type=Path, help="write the measurements to this JSON file")
    parser.add_argument("--load", type=Path, help="fit to measurements saved by --save")
    parser.add_argument(
        "--quick", action="store_true", help="smoke run: 6 fitted models, batch 4, one run"
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if args.quick:
        args.fit_models, args.batch, args.runs, args.steps = 6, 4, 1, 1

    from nasmlcn.specs import format_lanes, parse_lanes

    held_out = [tuple(parse_lanes(m)) for m in HELD_OUT]
    started = time.perf_counter()
    measured = json.loads(args.load.read_text()) if args.load else _measure(args, held_out)
    if args.save:
        args.save.write_text(json.dumps(measured, indent=1))
    fitted = [tuple(parse_lanes(m)) for m in measured["fit"]]
    overlap = {format_lanes(m) for m in fitted} & {format_lanes(m) for m in held_out}
    if overlap:
        raise SystemExit(f"error: held-out models among the fitted ones: {sorted(overlap)}")
    result = _compare(measured, fitted, held_out, args)
    result["minutes"] = (time.perf_counter() - started) / 60
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    _print(result)
    return 0


def _measure(args: argparse.Namespace, held_out: list[tuple[Any, ...]]) -> dict[str, Any]:
    """Step times of the fitted models (as calibrate measures them) and of the held-out
    ones (``--runs`` rounds)."""
    import torch

    from nasmlcn.costs import CostContext, calibration_models
    from nasmlcn.measure import time_model_step
    from nasmlcn.specs import format_lanes

    torch.set_num_threads(args.threads)
    ctx = CostContext(batch_size=args.batch)

    def step(lanes: tuple[Any, ...]) -> float:
        return time_model_step(lanes, ctx, "cpu", steps=args.steps, clock=args.clock)

    fit_models = calibration_models(args.fit_models, args.seed)
    fit = {}
    for i, lanes in enumerate(fit_models):
        fit[format_lanes(lanes)] = step(lanes)
        _progress(f"fit {i + 1}/{len(fit_models)}", lanes, fit[format_lanes(lanes)])
    runs: dict[str, list[float]] = {format_lanes(m): [] for m in held_out}
    for r in range(args.runs):
        for lanes in held_out:
            runs[format_lanes(lanes)].append(step(lanes))
            _progress(f"held out, run {r + 1}/{args.runs}", lanes, runs[format_lanes(lanes)][-1])
    return {
        "batch": args.batch,
        "threads": args.threads,
        "clock": args.clock,
        "steps": args.steps,
        "fit": fit,
        "held_out": runs,
    }


def _progress(what: str, lanes: tuple[Any, ...], seconds: float) -> None:
    print(f"  {what}: {len(lanes):2d} lanes {seconds * 1e3:8.1f} ms", file=sys.stderr, flush=True)


def _compare(
    measured: dict[str, Any],
    fitted: list[tuple[Any, ...]],
    held_out: list[tuple[Any, ...]],
    args: argparse.Namespace,
) -> dict[str, Any]:
    """Held-out predictions of the fit and of the baseline, against the medians."""
    from nasmlcn.costs import (
        MODEL_TIME_FEATURES,
        CostContext,
        fit_model_time,
        whole_model_features,
    )
    from nasmlcn.specs import format_lanes
    from nasmlcn.stats import spearman

    ctx = CostContext(batch_size=measured["batch"])
    rows = [whole_model_features(m, ctx, "cpu") for m in fitted]
    seconds = [measured["fit"][format_lanes(m)] for m in fitted]
    held_rows = [whole_model_features(m, ctx, "cpu") for m in held_out]
    medians = [statistics.median(measured["held_out"][format_lanes(m)]) for m in held_out]
    no_step = MODEL_TIME_FEATURES.index("step")
    fits = {
        "whole_model": fit_model_time(rows, seconds),
        "without_step_term": _fit_without(rows, seconds, no_step),
    }
    out: dict[str, Any] = {
        "threads": measured["threads"],
        "clock": measured["clock"],
        "batch": measured["batch"],
        "fit_models": len(fitted),
        "runs": len(next(iter(measured["held_out"].values()))),
        "features": list(MODEL_TIME_FEATURES),
        "models": [],
    }
    for name, coefficients in fits.items():
        predicted = [sum(c * v for c, v in zip(coefficients, r, strict=True)) for r in held_rows]
        ratios = [p / m for p, m in zip(predicted, medians, strict=True)]
        out[name] = {
            "coefficients": coefficients,
            "predicted": predicted,
            "ratios": ratios,
            "worst_ratio": max(max(ratios), 1 / min(ratios)),
            "spearman": spearman(predicted, medians),
        }
    for i, lanes in enumerate(held_out):
        out["models"].append(
            {
                "lanes": format_lanes(lanes),
                "num_lanes": len(lanes),
                "measured_s": medians[i],
                "runs_s": measured["held_out"][format_lanes(lanes)],
                "predicted_s": out["whole_model"]["predicted"][i],
                "ratio": out["whole_model"]["ratios"][i],
                "baseline_ratio": out["without_step_term"]["ratios"][i],
            }
        )
    return out


def _fit_without(rows: list[list[float]], seconds: list[float], drop: int) -> list[float]:
    """The fit with one feature held at 0."""
    from nasmlcn.costs import fit_model_time

    kept = fit_model_time([r[:drop] + r[drop + 1 :] for r in rows], seconds)
    return [*kept[:drop], 0.0, *kept[drop:]]


def _print(result: dict[str, Any]) -> None:
    print(
        f"{len(result['models'])} held-out models, fit on {result['fit_models']} random ones; "
        f"{result['threads']} thread(s), {result['clock']} clock, batch {result['batch']}, "
        f"median of {result['runs']} runs"
    )
    print(f"{'lanes':>5} {'measured':>11} {'predicted':>11} {'ratio':>6} {'no step':>8}  model")
    for m in result["models"]:
        print(
            f"{m['num_lanes']:5d} {m['measured_s'] * 1e3:8.1f} ms {m['predicted_s'] * 1e3:8.1f} ms "
            f"{m['ratio']:6.2f} {m['baseline_ratio']:8.2f}  {m['lanes']}"
        )
    for name, label in (("whole_model", "whole-model fit"), ("without_step_term", "no step term")):
        s = result[name]
        print(f"{label:16} worst ratio {s['worst_ratio']:.2f}x  Spearman {s['spearman']:.3f}")
    ratio = result["without_step_term"]["worst_ratio"] / result["whole_model"]["worst_ratio"]
    print(f"worst ratio, baseline / fit: {ratio:.2f}")
    print(
        "coefficients: "
        + ", ".join(
            f"{n}={c:.3g}"
            for n, c in zip(result["features"], result["whole_model"]["coefficients"], strict=True)
        )
    )


if __name__ == "__main__":
    from nasmlcn.reproduce.engines.common import exit_with

    exit_with(main())
