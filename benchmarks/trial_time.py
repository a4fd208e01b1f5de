"""Where a trial's time goes: the main job's trials split into their phases.

The main job of ``docs/hardware.md``: ``search --devices 8xK80 --mem 12GB --epochs 1
--train-limit 10000 --trials 16 --no-prune`` (the default space, the train
evaluator, real Fashion-MNIST), run in this process on this machine's device (a
GPU where there is one: ``--run-on``). Per trial, from the runner's timings and
the evaluation's own split (``Evaluation.extra["phases"]``):

- ``ask``: the sampler's proposal and the claim; ``build``: the space's model, its
  placement and the trial's attributes; ``tell``: the result written;
- ``setup``: the data splits and the memory check; ``training`` and
  ``validation``: the epochs' passes; ``job other``: the rest of the training
  job (the model built and placed, data to the device, checkpoints, on a GPU the
  CUDA-graph capture and cuDNN's autotuning); ``inference``: the measured
  inference latency's passes;
- ``rest``: the trial's wall time not in any of these (observers, storage reads).

Printed: the median of each phase over the trials, its share of the median trial,
the time outside training (the trial's wall time less ``training``) and the job's
wall time, on the named device, over ``--runs`` runs (fresh study each).

With ``--storage`` (one run) the study is kept there, so that
``benchmarks/speed_summary.py`` reads its trials per hour: ``scripts/gpu_check.sh
--part speed`` runs the one-worker main job this way, beside the same job with 2, 4
and 8 workers per GPU. ``--timeout`` stops it as ``search --timeout`` does (the
running trial FAIL, the database whole); ``--val-limit`` and ``--keep-weights`` as
in ``search``.

    python benchmarks/trial_time.py [--trials 16] [--runs 2] [--run-on auto] [--json]
    python benchmarks/trial_time.py --runs 1 --storage sqlite:///w1.db --timeout 45 --json
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from nasmlcn.reproduce.engines.common import exit_with, say

PHASES = ("ask", "build", "setup", "training", "validation", "job_other", "inference", "tell")


def _run(args: argparse.Namespace, folder: Path) -> dict[str, Any]:
    """One main job: its wall seconds, why it stopped and its finished trials' phases;
    the study in ``args.storage`` or, without it, in ``folder`` (as the artifacts, but
    for ``args.artifacts``)."""
    from nasmlcn.search import SearchConfig, run_search
    from nasmlcn.study import load_existing_study

    config = SearchConfig(
        devices="8xK80",
        mem="12GB",
        dataset=args.dataset,
        epochs=1,
        train_limit=args.train_limit,
        val_limit=args.val_limit,
        trials=args.trials,
        timeout=args.timeout,
        prune=False,
        evaluator="train",
        run_on=args.run_on,
        storage=args.storage or f"sqlite:///{folder / 's.db'}",
        artifacts=args.artifacts or str(folder / "artifacts"),
        keep_weights=args.keep_weights,
        study="s",
        seed=args.seed,
    )
    tick = time.perf_counter()
    result = run_search(config)
    wall = time.perf_counter() - tick
    trials = {t.number: t for t in load_existing_study("s", config.storage).trials}
    rows = []
    for outcome in result.run_trials:
        if outcome.state != "COMPLETE" or outcome.repeat_of is not None:
            continue
        training = trials[outcome.number].user_attrs.get("training") or {}
        phases = (training.get("extra") or {}).get("phases") or {}
        timings = outcome.timings
        row: dict[str, Any] = {
            "ask": timings.get("ask", 0.0),
            "build": timings.get("build", 0.0) + timings.get("record", 0.0),
            "tell": timings.get("tell", 0.0),
            **{k: float(phases.get(k, 0.0)) for k in PHASES[2:7]},
            "wall": outcome.seconds + timings.get("ask", 0.0),
            "device": training.get("device"),
        }
        row["rest"] = max(row["wall"] - sum(row[k] for k in PHASES), 0.0)
        rows.append(row)
    return {"wall": wall, "stopped": result.stopped, "trials": rows}


def _median(rows: Sequence[dict[str, Any]], key: str) -> float:
    return statistics.median(r[key] for r in rows)


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=16)
    parser.add_argument("--train-limit", type=int, default=10_000)
    parser.add_argument("--val-limit", type=int, help="[default: all held out]")
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--run-on", default="auto")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timeout", type=float, help="seconds a run may take, as search's")
    parser.add_argument("--keep-weights", default="all", help="as search's [default: all]")
    parser.add_argument(
        "--storage", help="keep the study here (one run) [default: a temporary file]"
    )
    parser.add_argument("--artifacts", help="trial weights here [default: a temporary folder]")
    parser.add_argument("--dataset", default="fashion-mnist", help="synthetic for a dry run")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if args.storage and args.runs != 1:
        parser.error("--storage keeps one run's study: give --runs 1")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = _parse(argv)
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    runs = []
    for i in range(args.runs):
        with tempfile.TemporaryDirectory() as folder:
            run = _run(args, Path(folder))
        say(
            f"run {i + 1}: {run['wall']:.1f} s for {args.trials} trials (stopped: {run['stopped']})"
        )
        runs.append(run)
    rows = [r for run in runs for r in run["trials"]]
    if not rows:
        say("no trial finished: no phases to split")
        return 1
    device = rows[0]["device"]
    summary = {k: _median(rows, k) for k in (*PHASES, "rest", "wall")}
    outside = statistics.median(r["wall"] - r["training"] for r in rows)
    if args.json:
        result = {
            "device": device,
            "median": summary,
            "outside_training": outside,
            "job_seconds": [run["wall"] for run in runs],
            "stopped": [run["stopped"] for run in runs],
            "trials": len(rows),
        }
        print(json.dumps(result, indent=1))
        return 0
    print(
        f"main job ({args.trials} one-epoch default-space trials, {args.train_limit:,} images), "
        f"on {device}: {len(rows)} trials over {len(runs)} runs"
    )
    print(f"{'phase':12} {'median s':>9} {'share':>6}")
    for key in (*PHASES, "rest"):
        share = summary[key] / summary["wall"] if summary["wall"] else 0.0
        print(f"{key:12} {summary[key]:9.3f} {share:6.1%}")
    print(f"{'trial':12} {summary['wall']:9.3f}")
    print(f"outside training per trial (median): {outside:.3f} s")
    print("job wall time: " + ", ".join(f"{r['wall']:.1f} s ({r['stopped']})" for r in runs))
    return 0


if __name__ == "__main__":
    exit_with(main())
