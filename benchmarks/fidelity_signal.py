"""Signal against noise: can a search's fidelity tell architectures apart?

Trains ``--archs`` architectures drawn at random (seeded) from the default search
space for ``--devices``/``--mem``/``--flops`` (``search_quality.py``'s by default:
2xK80, 12GB, 0.25x), each
with ``--seeds`` seeds (initial weights and shuffling), at every ``--fidelity``
``EPOCHSxIMAGES`` (epochs x training images; one fixed validation set of
``--val`` images for all). Real training on Fashion-MNIST, as the search's
``train`` evaluator does (batch 100, the default schedule, lanes fused).

For each fidelity it prints:

* the between-architecture sd (of the architectures' mean accuracies) over the
  within-architecture sd (the seeds' sd, pooled over architectures): above about 1,
  architectures differ by more than a seed changes them, so a sampler has a signal;
* the rank correlation (Spearman) of the architectures' mean accuracies with every
  other fidelity's, so a cheap fidelity can stand in for a dear one where it is high.

    python benchmarks/fidelity_signal.py [--archs 10 --seeds 3] [--fidelity 1x2000 ...] [--json]
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import time

import torch
from _space_models import default_space_specs

from nasmlcn.reproduce.engines.common import say

DEFAULT_FIDELITIES = ("1x2000", "3x2000", "3x6000")


def parse_fidelity(text: str) -> tuple[int, int]:
    """``EPOCHSxIMAGES`` -> (epochs, images)."""
    try:
        epochs, images = (int(part) for part in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"fidelity {text!r}: expected EPOCHSxIMAGES, e.g. 3x2000"
        ) from None
    if epochs < 1 or images < 100:
        raise argparse.ArgumentTypeError(f"fidelity {text!r}: epochs >= 1 and images >= 100")
    return epochs, images


def signal(accuracies: list[list[float]]) -> dict[str, float]:
    """Between-architecture sd of the means over the pooled within-architecture sd."""
    means = [statistics.fmean(a) for a in accuracies]
    within = math.sqrt(statistics.fmean(statistics.variance(a) for a in accuracies))
    between = statistics.stdev(means)
    return {
        "between_sd": between,
        "within_sd": within,
        "ratio": between / within if within > 0 else math.inf,
        "mean": statistics.fmean(means),
    }


def main(argv: list[str] | None = None) -> int:
    from nasmlcn.data import load_splits
    from nasmlcn.specs import format_lanes
    from nasmlcn.stats import spearman
    from nasmlcn.training import InMemoryJob, RunOptions, TrainConfig, train

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--archs", type=int, default=10)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument(
        "--fidelity", type=parse_fidelity, action="append", help="EPOCHSxIMAGES (repeatable)"
    )
    parser.add_argument("--val", type=int, default=2000, help="validation images")
    parser.add_argument("--devices", default="2xK80")
    parser.add_argument("--mem", default="12GB")
    parser.add_argument("--flops", default="0.25x")
    parser.add_argument("--dataset", default="fashion-mnist")
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--seed", type=int, default=0, help="seed of the architectures")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if args.archs < 3 or args.seeds < 2:
        parser.error("--archs must be >= 3 and --seeds >= 2 (sds need them)")
    if args.threads:
        torch.set_num_threads(args.threads)
    fidelities = args.fidelity or [parse_fidelity(f) for f in DEFAULT_FIDELITIES]
    names = [f"{e}x{n}" for e, n in fidelities]

    specs = default_space_specs(
        args.archs,
        args.seed,
        devices=args.devices,
        mem=args.mem,
        flops=args.flops,
        dataset=args.dataset,
    )
    started = time.perf_counter()
    # acc[fidelity][arch][seed]
    acc: dict[str, list[list[float]]] = {name: [] for name in names}
    seconds: dict[str, float] = dict.fromkeys(names, 0.0)
    for a, spec in enumerate(specs):
        for name in names:
            acc[name].append([])
        for seed in range(args.seeds):
            for name, (epochs, images) in zip(names, fidelities, strict=True):
                splits = load_splits(
                    args.dataset, download=False, train_limit=images, val_limit=args.val
                )
                config = TrainConfig(epochs=epochs, batch_size=100, seed=seed)
                start = time.perf_counter()
                run = train(InMemoryJob(spec, splits, config, RunOptions(test=False)))
                seconds[name] += time.perf_counter() - start
                acc[name][a].append(run.history[-1].val_accuracy)
            say(
                f"  arch {a + 1}/{len(specs)} seed {seed}: "
                + ", ".join(f"{n} {acc[n][a][-1]:.4f}" for n in names)
            )
    rows = []
    for name in names:
        means = [statistics.fmean(a) for a in acc[name]]
        rows.append(
            {
                "fidelity": name,
                **signal(acc[name]),
                "seconds_per_training": seconds[name] / (len(specs) * args.seeds),
                "spearman": {
                    other: spearman(means, [statistics.fmean(a) for a in acc[other]])
                    for other in names
                    if other != name
                },
            }
        )
    result = {
        "dataset": args.dataset,
        "devices": args.devices,
        "mem": args.mem,
        "flops": args.flops,
        "archs": [format_lanes(s.lanes) for s in specs],
        "seeds": args.seeds,
        "val_images": args.val,
        "accuracy": acc,
        "fidelities": rows,
        "minutes": (time.perf_counter() - started) / 60,
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(
        f"{len(specs)} default-space architectures ({args.devices}, {args.mem}, --flops "
        f"{args.flops}) x {args.seeds} seeds, validation on {args.val} images; "
        f"{result['minutes']:.0f} min"
    )
    print(
        f"{'fidelity':>9} {'mean acc':>8} {'between sd':>10} {'seed sd':>8} {'ratio':>6} {'s/run':>6}  Spearman with"
    )
    for r in rows:
        others = ", ".join(f"{k} {v:.2f}" for k, v in r["spearman"].items())
        print(
            f"{r['fidelity']:>9} {r['mean']:8.4f} {r['between_sd']:10.4f} {r['within_sd']:8.4f} "
            f"{r['ratio']:6.2f} {r['seconds_per_training']:6.0f}  {others}"
        )
    return 0


if __name__ == "__main__":
    from nasmlcn.reproduce.engines.common import exit_with

    exit_with(main())
