"""Search quality without the winner's curse: each search's chosen model, retrained.

A search's best-of-30 validation accuracy at a low fidelity is partly its luckiest
draw. What a user keeps is the model the search chose; this benchmark retrains that
model with fresh seeds at a higher fidelity and tests it, and compares samplers on
that figure. It also counts what repeats cost and save.

Each run is a real search (``run_search``, the ``train`` evaluator, this machine's
CPU) at ``search_quality.py``'s fidelity: ``--devices 2xK80 --mem 12GB --flops
0.25x``, 1 epoch on 1,000 training / 1,000 validation images, no pruning, with
``count_repeats=False``: 30 *trainings* per run, a repeat (a proposal of a model
already trained) taking its original's result on top. Runs: the thesis's random
search (random on ``mlcn-thesis``, the baseline), and random, TPE and GP on
``mlcn-buckets``; seeds 100-104 by default (never used by ``search_quality.py``).

Per run it records:

- distinct models among the first 30 trials: what a 30-trial search trains when
  repeats count toward ``--trials`` (the default), against 30 of 30 here; the
  repeats proposed in all (trainings a search that trained every proposal again
  would have spent; a search whose last 25 proposals were all repeats stops there);
- the best validation accuracy after 30 trials and after 30 trainings;
- the chosen model (``best_trials(study, top=1)``) retrained by ``retrain_study``
  with ``--retrain-seeds`` fresh seeds (default 2: seeds 1000 and 1001; a fresh seed
  is also a fresh train/validation split) for 3 epochs on 5,000 training images,
  tested on 5,000 test images the search never saw; its mean over the seeds.

Printed: per sampler, the mean and sd over search seeds of each figure, and each
sampler's retrained accuracy minus the baseline's, paired by search seed, with a
95 % t interval (a tie when it holds 0). Results go to ``--results`` (JSON, written
after every run): a re-run skips what is there.

    python benchmarks/search_retrained.py                 # 4 samplers x 5 seeds, ~40 min
    python benchmarks/search_retrained.py --quick --json  # 2 samplers x 2 seeds, smaller
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
import warnings
from collections.abc import Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Any

from nasmlcn.reproduce.engines.common import paired, say, verdict

RUNS = (
    ("random", "mlcn-thesis"),  # the thesis's own search (Algorithm 6): the baseline
    ("random", "mlcn-buckets"),
    ("tpe", "mlcn-buckets"),
    ("gp", "mlcn-buckets"),
)
BASELINE = RUNS[0]
DEFAULT_RESULTS = Path.home() / ".cache" / "nasmlcn" / "search-retrained.json"


def _label(run: Sequence[str]) -> str:
    return f"{run[0]} on {run[1]}"


def search_and_retrain(run: tuple[str, str], seed: int, args: dict[str, Any]) -> dict[str, Any]:
    """One search with real training, then its chosen model retrained and tested."""
    import optuna
    import torch

    from nasmlcn.search import (
        RetrainOptions,
        SearchConfig,
        best_trials,
        retrain_study,
        run_search,
    )
    from nasmlcn.study import TrialRecord, load_existing_study

    torch.set_num_threads(args["threads"])
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    warnings.simplefilter("ignore")
    sampler, space = run
    tick = time.time()
    with tempfile.TemporaryDirectory(prefix="search-retrained-") as tmp:
        storage = f"sqlite:///{Path(tmp) / 's.db'}"
        config = SearchConfig(
            devices="2xK80", mem="12GB", flops="0.25x", space=space, sampler=sampler,
            objectives=("accuracy",), evaluator="train", epochs=args["epochs"],
            train_limit=args["train_limit"], val_limit=args["val_limit"],
            trials=args["trials"], count_repeats=False, prune=False, seed=seed,
            run_on="cpu", storage=storage, study="s", artifacts=str(Path(tmp) / "artifacts"),
            keep_weights="best:1",
        )  # fmt: skip
        result = run_search(config)
        study = load_existing_study("s", storage)
        trials = sorted(study.trials, key=lambda t: t.number)
        records = [TrialRecord.of(t) for t in trials]
        first = records[: args["trials"]]
        keys_first = {r.model_key for r in first if r.model_key}
        trained = [r for r in records if r.repeat_of is None and r.state == "COMPLETE"]

        def best_of(rs: Sequence[Any]) -> float | None:
            values = [r.values[0] for r in rs if r.values and r.state == "COMPLETE"]
            return max(values) if values else None

        chosen = next(iter(best_trials(study, top=1)), None)
        retrained = []
        for fresh in args["retrain_seeds"] if chosen is not None else ():
            options = RetrainOptions(
                top=1, epochs=args["retrain_epochs"], train_limit=args["retrain_train"],
                test_limit=args["retrain_test"], seed=fresh, device="cpu",
                out_dir=str(Path(tmp) / "retrain"),
            )  # fmt: skip
            report = retrain_study("s", storage, options)
            retrained.append(report.models[0].test_accuracy)
    return {
        "run": _label(run),
        "seed": seed,
        "stopped": result.stopped,
        "trials": len(records),
        "trainings": len(trained),
        "distinct_in_first_trials": len(keys_first),
        "repeats_in_first_trials": sum(r.repeat_of is not None for r in first),
        "repeats": sum(r.repeat_of is not None for r in records),
        "best_after_trials": best_of(first),
        "best_after_trainings": best_of(records),
        # None: no trial learned (nothing to keep); its retrained accuracy is chance's
        "chosen": None
        if chosen is None
        else {"number": chosen.number, "lanes": TrialRecord.of(chosen).lane_mix},
        "retrained_test_accuracy": retrained,
        "retrained_mean": statistics.fmean(retrained) if retrained else 0.1,
        "seconds": time.time() - tick,
    }


def _stat(values: Sequence[float]) -> str:
    if not values:
        return "-"
    sd = f" ± {statistics.stdev(values):.3f}" if len(values) > 1 else ""
    return f"{statistics.fmean(values):.3f}{sd}"


def summarize(rows: Sequence[Mapping[str, Any]], trials: int) -> dict[str, Any]:
    """Per sampler: the figures' means over seeds, and the paired difference of the
    retrained accuracy from the baseline's."""
    by_run: dict[str, dict[int, Mapping[str, Any]]] = {}
    for row in rows:
        by_run.setdefault(row["run"], {})[row["seed"]] = row
    base = by_run.get(_label(BASELINE), {})
    out: dict[str, Any] = {}
    for label, seeds in by_run.items():
        rs = [seeds[s] for s in sorted(seeds)]
        entry: dict[str, Any] = {
            "runs": len(rs),
            "distinct_per_trials": [r["distinct_in_first_trials"] for r in rs],
            "repeats": [r["repeats"] for r in rs],
            "best_after_trials": [r["best_after_trials"] for r in rs],
            "best_after_trainings": [r["best_after_trainings"] for r in rs],
            "retrained": [r["retrained_mean"] for r in rs],
        }
        pairs = [s for s in sorted(seeds) if s in base]
        if label != _label(BASELINE) and len(pairs) >= 2:
            entry["retrained_minus_baseline"] = paired(
                [seeds[s]["retrained_mean"] for s in pairs],
                [base[s]["retrained_mean"] for s in pairs],
            )
        out[label] = entry
    return {"trials": trials, "samplers": out}


def render(summary: Mapping[str, Any]) -> str:
    trials = summary["trials"]
    lines = [
        f"| sampler | distinct models in {trials} trials | repeats proposed (trainings "
        f"saved) | best val. after {trials} trials / trainings | chosen model retrained "
        "(test) | minus the baseline, paired, 95 % t |",
        "|---|---|---|---|---|---|",
    ]
    for label, e in summary["samplers"].items():
        diff = e.get("retrained_minus_baseline")
        shown = "(baseline)" if label == _label(BASELINE) else "-"
        if diff:
            lo, hi = diff["low"], diff["high"]
            shown = f"{diff['mean']:+.4f} [{lo:+.4f}, {hi:+.4f}] {verdict(diff)}"
        distinct = e["distinct_per_trials"]
        lines.append(
            f"| {label} | {statistics.fmean(distinct):.1f} ({min(distinct)}-{max(distinct)}) "
            f"| {_stat(e['repeats'])} "
            f"| {_stat(e['best_after_trials'])} / {_stat(e['best_after_trainings'])} "
            f"| {_stat(e['retrained'])} | {shown} |"
        )
    runs = min(e["runs"] for e in summary["samplers"].values())
    lines.append(f"\n{runs} search seed(s) per sampler; mean ± sd over them.")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=5, help="search seeds 100..100+N-1 [5]")
    parser.add_argument("--trials", type=int, default=30, help="trainings per search [30]")
    parser.add_argument("--retrain-seeds", type=int, default=2, help="fresh seeds [2]")
    parser.add_argument("--workers", type=int, default=2, help="processes at once [2]")
    parser.add_argument("--results", type=Path, default=DEFAULT_RESULTS)
    parser.add_argument("--quick", action="store_true", help="2 samplers x 2 seeds, smaller")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    settings = {
        "epochs": 1, "train_limit": 1000, "val_limit": 1000, "trials": args.trials,
        "retrain_epochs": 3, "retrain_train": 5000, "retrain_test": 5000,
        "retrain_seeds": [1000 + i for i in range(args.retrain_seeds)],
        "threads": max(1, (os.cpu_count() or 2) // args.workers),
    }  # fmt: skip
    runs: tuple[tuple[str, str], ...] = RUNS
    seeds = [100 + i for i in range(args.seeds)]
    if args.quick:
        runs, seeds = (RUNS[0], RUNS[3]), [100, 101]
        settings.update(trials=min(args.trials, 6), val_limit=300,
                        retrain_epochs=1, retrain_train=600, retrain_test=500)  # fmt: skip
    key = json.dumps({k: v for k, v in settings.items() if k != "threads"}, sort_keys=True)
    saved: dict[str, Any] = {}
    if args.results.is_file():
        saved = json.loads(args.results.read_text(encoding="utf-8"))
    done = saved.get(key, {})
    todo = [(r, s) for r in runs for s in seeds if f"{_label(r)}/{s}" not in done]
    say(f"[search_retrained] {len(todo)} of {len(runs) * len(seeds)} runs to do")
    started = time.time()
    with ProcessPoolExecutor(args.workers) as pool:
        futures = {pool.submit(search_and_retrain, r, s, settings): (r, s) for r, s in todo}
        for future in as_completed(futures):
            row = future.result()
            done[f"{row['run']}/{row['seed']}"] = row
            saved[key] = done
            args.results.parent.mkdir(parents=True, exist_ok=True)
            tmp = args.results.with_suffix(".tmp")
            tmp.write_text(json.dumps(saved, indent=1), encoding="utf-8")
            os.replace(tmp, args.results)
            say(
                f"[search_retrained {time.time() - started:5.0f}s] {row['run']} seed "
                f"{row['seed']}: {row['distinct_in_first_trials']} distinct in "
                f"{settings['trials']} trials, retrained {row['retrained_mean']:.4f}"
            )
    rows = [done[f"{_label(r)}/{s}"] for r in runs for s in seeds]
    summary = summarize(rows, settings["trials"])
    if args.json:
        print(json.dumps({"settings": settings, **summary, "rows": rows}))
    else:
        print(render(summary))
    return 0


if __name__ == "__main__":
    from nasmlcn.reproduce.engines.common import exit_with

    exit_with(main())
