"""The answer and its noise, on a worked case: a search, its top models retrained with
the same seeds, the tie group, what ``best --pick lean`` chooses against the single-run
best, and the search's own noise estimate against the spread of one model over seeds.

All through the command line, as a user runs it (``nasmlcn search``, ``retrain``,
``best --json``), in a folder of its own:

1. ``nasmlcn search`` at the quickstart's fidelity (``--devices 8xK80 --mem 12GB
   --flops 0.5x``, 1 epoch on 5,000 training and 1,000 validation images of
   Fashion-MNIST), ``--trials 20``, its replicate after 8 models (the default);
2. ``nasmlcn retrain --top 5 --seeds 3`` (1 epoch, 5,000 training images, 5,000 test
   images): each model with seeds 1, 2, 3;
3. where the replicated model is among them, the 5 with two more seeds (``--seeds
   4,5``), so that it has 5 (and every model, paired, too);
4. ``nasmlcn best --json`` and ``best --pick lean --json``.

Printed: each retrained model's mean test accuracy, 95 % t interval, per-seed figures
and standing; the tie group; the single-run best (the search's own answer) and its
retrained standing; the lean pick and its predicted whole training step (lanes and
head) against the single-run best's; the search's noise estimate (the sd of one run
from its replicate pair) against the sd of the replicated model's 5 retrained seeds.
The replicate trains with another initialisation and batch order on the search's
split; a retrained seed also draws another split: the second spread holds more
sources of noise, so a ratio near 1 is the expectation, not a law.

``--quick`` is CI's path: synthetic data, tiny models, a few trials.

    python benchmarks/answer_noise.py [--out DIR] [--seed 0] [--quick] [--json]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

QUICKSTART = (
    *("--devices", "8xK80", "--mem", "12GB", "--flops", "0.5x", "--epochs", "1"),
    *("--train-limit", "5000", "--val-limit", "1000", "--dataset", "fashion-mnist"),
)
QUICK = (
    *("--devices", "1xK80", "--mem", "12GB", "--flops", "0.05x", "--epochs", "2"),
    *("--train-limit", "300", "--val-limit", "50", "--batch-size", "10"),
    *("--dataset", "synthetic", "--sampler", "random"),
)
RETRAIN = ("--epochs", "1", "--train-limit", "5000", "--test-limit", "5000")
QUICK_RETRAIN = ("--epochs", "2", "--train-limit", "200", "--test-limit", "100")


def nasmlcn(*args: str, cwd: Path) -> dict[str, Any]:
    """``nasmlcn ARGS --json`` in ``cwd``: its JSON; stderr goes through."""
    env = {**os.environ, "COLUMNS": "200"}
    done = subprocess.run(
        [sys.executable, "-m", "nasmlcn", *args, "--json"],
        cwd=cwd,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"nasmlcn {' '.join(args)} exited {done.returncode}")
    return dict(json.loads(done.stdout))


def _sd(values: Sequence[float]) -> float | None:
    return statistics.stdev(values) if len(values) > 1 else None


def run_case(args: argparse.Namespace, folder: Path) -> dict[str, Any]:
    """The four steps of the module docstring; what they printed."""
    storage = f"sqlite:///{folder / 'case.db'}"
    where = ("--storage", storage, "--study", "case")
    space = QUICK if args.quick else QUICKSTART
    trials = "6" if args.quick else str(args.trials)
    after = "3" if args.quick else "8"
    started = time.time()
    searched = nasmlcn(
        "search", *where, *space, "--trials", trials, "--seed", str(args.seed),
        "--replicate-after", after, "--objectives", "accuracy,latency", "-q", cwd=folder,
    )  # fmt: skip
    search_seconds = time.time() - started
    retrain = (*where, "--inference-batch", "10", *(QUICK_RETRAIN if args.quick else RETRAIN))
    top = nasmlcn("retrain", *retrain, "--top", "5", "--seeds", "3", "--out", "rt", cwd=folder)
    noise = searched.get("noise") or {}
    replicated = next(iter(noise.get("replicates") or []), None)
    extra = None
    if replicated is not None and any(m["number"] == replicated["number"] for m in top["models"]):
        # the replicated model with 5 seeds: the top 5 with two more (paired: all alike)
        extra = nasmlcn(
            "retrain", *retrain, "--top", "5", "--seeds", "4,5", "--out", "rt", cwd=folder
        )
    answer = nasmlcn("best", *where, cwd=folder)
    lean = nasmlcn("best", *where, "--pick", "lean", cwd=folder)
    return {
        "search": searched,
        "search_seconds": search_seconds,
        "retrain": top,
        "extra": extra,
        "best": answer,
        "lean": lean,
        "seconds": time.time() - started,
    }


def summarize(case: dict[str, Any]) -> dict[str, Any]:
    """The figures of the worked case (module docstring)."""
    seeded = case["best"]["seeded"] or {"standings": []}
    standings = {s["number"]: s for s in seeded["standings"]}
    rows = {r["number"]: r for r in case["best"]["best"]}
    single = case["best"]["best"][0]["number"] if case["best"]["best"] else None
    lean = case["lean"]["lean"]
    step = {
        n: r["predicted"].get("step_time") for n, r in rows.items() if r.get("predicted")
    } | _steps(case)
    noise = case["search"].get("noise") or {}
    replicated = next(iter(noise.get("replicates") or []), None)
    spread = None
    if replicated is not None and replicated["number"] in standings:
        values = list(standings[replicated["number"]]["per_seed"].values())
        spread = {"number": replicated["number"], "seeds": len(values), "sd": _sd(values)}
    ratio = None
    if spread and spread["sd"] and noise.get("sd"):
        ratio = noise["sd"] / spread["sd"]
    return {
        "standings": seeded["standings"],
        "tie_group": [n for n, s in standings.items() if s["mark"] in ("best", "tied")],
        "undecided": [n for n, s in standings.items() if s["mark"] == "undecided"],
        "single_run_best": single,
        "single_run_best_standing": standings.get(single, {}).get("mark"),
        "lean": lean,
        "lean_step_over_single_best": _ratio(step, lean["number"], single) if lean else None,
        "noise_sd": noise.get("sd"),
        "noise_pairs": noise.get("pairs"),
        "replicated_model_seed_sd": spread,
        "noise_over_seed_sd": ratio,
    }


def _steps(case: dict[str, Any]) -> dict[int, float]:
    """Every retrained model's predicted whole step (the lean pick need not be listed)."""
    lean = case["lean"]["lean"]
    if lean is None or lean["prefer"] != "step_time_s":
        return {}
    return {lean["number"]: lean["cost"], lean["best"]: lean["best_cost"]}


def _ratio(step: dict[int, Any], a: int, b: int | None) -> float | None:
    if b is None or not step.get(a) or not step.get(b):
        return None
    return float(step[a]) / float(step[b])


def _print(summary: dict[str, Any], case: dict[str, Any]) -> None:
    print(
        f"search: {case['search_seconds'] / 60:.1f} min; whole case {case['seconds'] / 60:.1f} min"
    )
    print(f"{'#':>3} {'mean [95 % t]':>28} {'n':>2}  per seed{'':<28} standing")
    for s in summary["standings"]:
        interval = f"[{s['low']:.4f}, {s['high']:.4f}]" if s["low"] is not None else ""
        seeds = ", ".join(f"{v:.4f}" for v in s["per_seed"].values())
        print(
            f"{s['number']:>3} {s['mean']:.4f} {interval:>21} {s['n']:>2}  {seeds:<36} {s['mark']}"
        )
    print(f"tie group (best and tied): {summary['tie_group']}; undecided: {summary['undecided']}")
    print(
        f"single-run best (the search's answer): #{summary['single_run_best']}, retrained: "
        f"{summary['single_run_best_standing']}"
    )
    lean, ratio = summary["lean"], summary["lean_step_over_single_best"]
    if lean:
        print(
            f"--pick lean: #{lean['number']} ({lean['evidence']}); predicted whole step "
            + (f"{ratio:.2f}x the single-run best's" if ratio else "n/a")
        )
    sd, spread = summary["noise_sd"], summary["replicated_model_seed_sd"]
    if sd is not None and spread:
        print(
            f"noise: the search's estimate sd {sd:.4f} ({summary['noise_pairs']} pair); model "
            f"#{spread['number']} over {spread['seeds']} retrained seeds sd "
            f"{spread['sd']:.4f}: ratio {summary['noise_over_seed_sd']:.2f}"
        )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="keep the study and runs here")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.out or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        case = run_case(args, folder)
    summary = summarize(case)
    if args.json:
        print(json.dumps({"summary": summary, "case": case}, default=str))
    else:
        _print(summary, case)
    return 0 if not math.isnan(case["seconds"]) else 1


if __name__ == "__main__":
    from nasmlcn.reproduce.engines.common import exit_with

    exit_with(main())
