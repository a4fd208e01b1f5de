"""Thirty trials, thirty models: how many distinct models a search of ``--trials N``
looks at, per sampler and seed, with repeats counted (``--count-repeats``, the
default before) and not (the default now), and what the repeat handling costs a
trial where the sampler proposes no repeat.

Each search is a real ``run_search`` on the default space (``mlcn-buckets``) with
the default pruner on. ``--evaluator proxy`` (the default): ``--devices 8xK80 --mem
12GB`` and every other setting its default, as a new user's first search.
``--evaluator train``: the search-quality benchmark's fidelity
(``benchmarks/search_quality.py``: ``2xK80 --flops 0.25x``, 1 epoch on 1,000 training
and 1,000 validation images of Fashion-MNIST; there nothing is pruned, one epoch
being the last), seeds 100-104 by default.

A distinct model is a distinct ``model_key`` (the placed model and its training,
``search/_run/repeats.py``) among the trials that trained or were pruned themselves.
Printed per sampler: distinct models per search for each seed, both ways, the
proposals each took, and whether any search stopped early (25 repeats in a row);
then the goal (>= 29 of 30 on every seed, no early stop).

The per-trial cost: a random-sampler search (it proposes no repeat) of the same
size, timed with the lookup of completed and pruned models (one read) and with
the completed-model lookup alone (the work a trial did before), alternating order over the seeds; the figure is the median of
the per-trial differences with the runs it rests on.

    python benchmarks/distinct_models.py [--samplers gp,tpe] [--seeds 0,1,2,3,4]
        [--trials 30] [--evaluator proxy|train] [--json]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from nasmlcn.reproduce.engines.common import exit_with, median, say

GOAL = 29


def _config(args: argparse.Namespace, sampler: str, seed: int, folder: Path, count: bool) -> Any:
    from nasmlcn.search import SearchConfig

    common: dict[str, Any] = {
        "sampler": sampler,
        "seed": seed,
        "trials": args.trials,
        "count_repeats": count,
        "storage": f"sqlite:///{folder / 's.db'}",
        "study": "s",
        "evaluator": args.evaluator,
    }
    if args.evaluator == "proxy":
        return SearchConfig(devices="8xK80", mem="12GB", **common)
    return SearchConfig(
        devices="2xK80",
        mem="12GB",
        flops="0.25x",
        epochs=1,
        train_limit=1000,
        val_limit=1000,
        dataset="fashion-mnist",
        run_on="cpu",
        **common,
    )


def _search(args: argparse.Namespace, sampler: str, seed: int, count: bool) -> dict[str, Any]:
    from nasmlcn.search import run_search
    from nasmlcn.study import TrialRecord, load_existing_study

    with tempfile.TemporaryDirectory() as folder:
        config = _config(args, sampler, seed, Path(folder), count)
        tick = time.perf_counter()
        result = run_search(config)
        seconds = time.perf_counter() - tick
        trials = load_existing_study("s", config.storage).trials
        records = [TrialRecord.of(t) for t in trials]
        looked = [
            r.model_key for r in records if r.state in ("COMPLETE", "PRUNED") and not r.repeat_of
        ]
        return {
            "sampler": sampler,
            "seed": seed,
            "count_repeats": count,
            "distinct_models": len(set(looked)),
            "proposals": len(trials),
            "pruned": sum(r.state == "PRUNED" for r in records),
            "random_fallbacks": sum("proposed_by" in t.user_attrs for t in trials),
            "stopped": result.stopped,
            "seconds": seconds,
            "seconds_per_trial": seconds / max(len(trials), 1),
        }


def _lookup_cost(args: argparse.Namespace, seeds: Sequence[int]) -> dict[str, Any]:
    """Seconds per trial of a random search with the pruned-model lookup and without
    it (the completed-model lookup alone, as before), alternating which runs first."""
    from nasmlcn.search._run import repeats as _repeats
    from nasmlcn.search._run import trial as _trial_run

    real = _trial_run.originals

    def before(study: Any, key: str) -> tuple[Any, None]:
        return _repeats.trained_original(study, key), None

    per: dict[str, list[float]] = {"with": [], "without": []}
    for i, seed in enumerate(seeds):
        order = ("with", "without") if i % 2 == 0 else ("without", "with")
        for side in order:
            _trial_run.originals = real if side == "with" else before
            try:
                run = _search(args, "random", seed, False)
            finally:
                _trial_run.originals = real
            per[side].append(run["seconds_per_trial"])
    differences = [a - b for a, b in zip(per["with"], per["without"], strict=True)]
    return {
        "runs": len(seeds) * 2,
        "seconds_per_trial_with": median(per["with"]),
        "seconds_per_trial_without": median(per["without"]),
        "median_difference_s": median(differences),
        "ratio": median(per["with"]) / median(per["without"]),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samplers", default="gp,tpe")
    parser.add_argument("--seeds", default=None, help="default: 0-4 (proxy), 100-104 (train)")
    parser.add_argument("--trials", type=int, default=30)
    parser.add_argument("--evaluator", default="proxy", choices=("proxy", "train"))
    parser.add_argument("--before", action="store_true", help="also run with --count-repeats")
    parser.add_argument("--no-cost", action="store_true", help="skip the per-trial timing")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    default = "0,1,2,3,4" if args.evaluator == "proxy" else "100,101,102,103,104"
    seeds = [int(s) for s in (args.seeds or default).split(",")]
    runs = []
    for sampler in args.samplers.split(","):
        for seed in seeds:
            for count in (True, False) if args.before else (False,):
                run = _search(args, sampler, seed, count)
                say(
                    f"{sampler} seed {seed} {'counted' if count else 'not counted'}: "
                    f"{run['distinct_models']} models in {run['proposals']} proposals, "
                    f"stopped: {run['stopped']}, {run['seconds']:.1f} s"
                )
                runs.append(run)
    cost = None if args.no_cost else _lookup_cost(args, seeds)
    after = [r for r in runs if not r["count_repeats"]]
    met = all(r["distinct_models"] >= min(GOAL, args.trials - 1) for r in after) and all(
        r["stopped"] == "trials" for r in after
    )
    if args.json:
        print(json.dumps({"runs": runs, "cost": cost, "goal_met": met}, indent=1))
        return 0
    print(f"distinct models in searches of --trials {args.trials} ({args.evaluator} evaluator)")
    print(f"{'sampler':8} {'repeats':12} " + " ".join(f"{'seed ' + str(s):>11}" for s in seeds))
    for sampler in args.samplers.split(","):
        for count in (True, False) if args.before else (False,):
            cells = []
            for seed in seeds:
                (run,) = (
                    r
                    for r in runs
                    if r["sampler"] == sampler and r["seed"] == seed and r["count_repeats"] == count
                )
                early = "*" if run["stopped"] != "trials" else ""
                cells.append(f"{run['distinct_models']}/{run['proposals']}{early}".rjust(11))
            label = "counted" if count else "not counted"
            print(f"{sampler:8} {label:12} " + " ".join(cells))
    print("cells: distinct models / proposals (* stopped before --trials)")
    if cost is not None:
        print(
            f"per trial, random sampler (no repeats), {cost['runs']} runs: "
            f"{cost['seconds_per_trial_with'] * 1e3:.1f} ms with the pruned-model lookup, "
            f"{cost['seconds_per_trial_without'] * 1e3:.1f} ms without "
            f"(ratio {cost['ratio']:.3f}; median paired difference "
            f"{cost['median_difference_s'] * 1e3:+.1f} ms)"
        )
    print(
        f"goal (>= {GOAL} distinct models on every seed, no early stop): {'met' if met else 'NOT met'}"
    )
    return 0


if __name__ == "__main__":
    exit_with(main())
