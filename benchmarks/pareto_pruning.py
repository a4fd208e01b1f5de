"""Pruning in a multi-objective study: how much of the Pareto front each rule removes,
and how much training it still saves.

For every seed, the same search runs twice: random sampler, that seed, so both runs
propose the same architectures in the same order; once with ``--no-prune`` (the
reference: its Pareto front is the study's right answer) and once with the default
pruner. On the reference study it also replays two rules over the trials in order
(:func:`nasmlcn.search.pruners._correlation.replay_pruning`, one worker):

- ``all trials`` (the rule before): a trial is pruned when its accuracy at an epoch
  is below the median of every finished trial's;
- ``rivals`` (the default now): below the median of the finished trials that cost
  no more in every cost objective (predicted before training).

Per seed and in total it prints the reference front's size and its cost range
against the study's, the front trials each rule removes, the trials it prunes and
the share of the training epochs it saves; for the live pruned search, whether
its front equals the reference's. With the proxy evaluator (the default: it is
deterministic per architecture, so the replay and the live search must agree) it
takes seconds; ``--evaluator train`` measures it on real training.

    python benchmarks/pareto_pruning.py [--objectives accuracy,latency] [--trials 80]
        [--epochs 5] [--seeds 0,1,2] [--evaluator proxy|train] [--json]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import warnings
from pathlib import Path
from typing import Any

from nasmlcn.search import SearchConfig, run_search, setup_search
from nasmlcn.search._results.summary import finished_for_pruning
from nasmlcn.search.pruners import CorrelationPruner, replay_pruning
from nasmlcn.study import TrialRecord, load_existing_study


def cost_objectives(config: SearchConfig) -> list[tuple[str, int, bool]]:
    """What the runner compares trials on (its ``_cost_objectives``), from the config."""
    setup = setup_search(config)
    return [
        (o.name, i, o.direction == "maximize")
        for i, o in enumerate(setup.objectives)
        if not o.needs_training
    ]


def one_seed(base: SearchConfig, seed: int) -> dict[str, Any]:
    reference = base.with_overrides(seed=seed, study=f"no-prune-{seed}", prune=False)
    pruned = base.with_overrides(seed=seed, study=f"prune-{seed}", prune=True)
    run_search(reference)
    run_search(pruned)
    study = load_existing_study(reference.study, base.storage)
    live = load_existing_study(pruned.study, base.storage)
    front = sorted(t.number for t in study.best_trials)
    live_front = sorted(t.number for t in live.best_trials)
    trials = finished_for_pruning(study, cost_objectives(reference), repeats=True)
    numbers = [t.number for t in study.trials if t.state.name == "COMPLETE" and t.values]
    assert len(numbers) == len(trials), "every reference trial is finished and trained"
    pruner = CorrelationPruner(base.prune_threshold, base.prune_percentile, base.prune_min_trials)
    epochs = base.epochs
    total_epochs = len(trials) * epochs
    rules: dict[str, Any] = {}
    for rule, ignore in (("all trials", True), ("rivals", False)):
        stopped = replay_pruning(trials, pruner, ignore_costs=ignore)
        pruned_numbers = {n for n, e in zip(numbers, stopped, strict=True) if e is not None}
        rules[rule] = {
            "pruned": len(pruned_numbers),
            "front_removed": sorted(set(front) & pruned_numbers),
            "pruned_trials": sorted(pruned_numbers),
            "epochs_saved_share": sum(epochs - e for e in stopped if e is not None) / total_epochs,
        }
    live_pruned = [TrialRecord.of(t) for t in live.trials if t.state.name == "PRUNED"]
    live_epochs = sum(len(r.accuracy_per_epoch) for r in live_pruned)
    costs = [dict(t.costs) for t in trials]
    names = [name for name, _, _ in cost_objectives(reference)]
    by_number = dict(zip(numbers, costs, strict=True))
    return {
        "seed": seed,
        "trials": len(trials),
        "front": front,
        "cost_range": {
            n: {
                "study": [min(c[n] for c in costs), max(c[n] for c in costs)],
                "front": [min(by_number[f][n] for f in front), max(by_number[f][n] for f in front)],
            }
            for n in names
        },
        "replay": rules,
        "live": {
            "pruned": len(live_pruned),
            "front_removed": sorted({r.number for r in live_pruned} & set(front)),
            "epochs_saved_share": (len(live_pruned) * epochs - live_epochs) / total_epochs,
            "same_front": live_front == front,
            "front": live_front,
            "pruned_trials": sorted(r.number for r in live_pruned),
        },
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objectives", default="accuracy,latency")
    parser.add_argument("--trials", type=int, default=80)
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--devices", default="8xK80")
    parser.add_argument("--mem", default="12GB")
    parser.add_argument("--evaluator", default="proxy", choices=("proxy", "train"))
    parser.add_argument("--train-limit", type=int, default=1000)
    parser.add_argument("--val-limit", type=int, default=500)
    parser.add_argument("--flops", default=SearchConfig.flops)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    seeds = [int(s) for s in args.seeds.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        base = SearchConfig(
            devices=args.devices,
            mem=args.mem,
            flops=args.flops,
            sampler="random",
            evaluator=args.evaluator,
            objectives=tuple(args.objectives.split(",")),
            epochs=args.epochs,
            trials=args.trials,
            train_limit=args.train_limit if args.evaluator == "train" else None,
            val_limit=args.val_limit if args.evaluator == "train" else None,
            run_on="cpu",
            storage=f"sqlite:///{Path(tmp) / 'pareto-pruning.db'}",
        )
        rows = [one_seed(base, seed) for seed in seeds]
    front = sum(len(r["front"]) for r in rows)
    report: dict[str, Any] = {
        "objectives": args.objectives,
        "evaluator": args.evaluator,
        "trials": args.trials,
        "epochs": args.epochs,
        "seeds": rows,
        "front_trials": front,
        "front_removed_share": {
            rule: sum(len(r["replay"][rule]["front_removed"]) for r in rows) / front
            for rule in ("all trials", "rivals")
        }
        | {"rivals, live": sum(len(r["live"]["front_removed"]) for r in rows) / front},
        "epochs_saved_share": {
            rule: sum(r["replay"][rule]["epochs_saved_share"] for r in rows) / len(rows)
            for rule in ("all trials", "rivals")
        }
        | {"rivals, live": sum(r["live"]["epochs_saved_share"] for r in rows) / len(rows)},
    }
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print(
        f"{args.objectives}: {args.trials} trials x {args.epochs} epochs, {args.evaluator} "
        f"evaluator, {args.devices} {args.mem}, random sampler, {len(seeds)} seeds"
    )
    print("seed  front  front removed (all trials / rivals / live)  pruned  epochs saved")
    for r in rows:
        old, new, live = r["replay"]["all trials"], r["replay"]["rivals"], r["live"]
        print(
            f"{r['seed']:4d}  {len(r['front']):5d}  "
            f"{len(old['front_removed']):10d} / {len(new['front_removed'])} / "
            f"{len(live['front_removed'])}"
            f"{'':18s}{old['pruned']:3d}/{new['pruned']:3d}  "
            f"{old['epochs_saved_share']:.0%}/{new['epochs_saved_share']:.0%}"
            f"{'' if live['same_front'] else '  (live front differs!)'}"
        )
        for name, span in r["cost_range"].items():
            print(
                f"      {name}: front spans {span['front'][0]:.3g}..{span['front'][1]:.3g} "
                f"of the study's {span['study'][0]:.3g}..{span['study'][1]:.3g}"
            )
    share, saved = report["front_removed_share"], report["epochs_saved_share"]
    print(
        f"share of the front removed over {front} front trials: all trials "
        f"{share['all trials']:.0%}, rivals {share['rivals']:.0%} (live {share['rivals, live']:.0%})"
    )
    print(
        f"training epochs saved: all trials {saved['all trials']:.0%}, rivals "
        f"{saved['rivals']:.0%} (live {saved['rivals, live']:.0%})"
    )
    return 0


if __name__ == "__main__":
    from nasmlcn.reproduce.engines.common import exit_with

    exit_with(main())
