"""Many workers on one study: started at once, throughput, real training.

1. **Started at once** (proxy evaluator): N ``nasmlcn search`` processes started at
   the same instant on a fresh SQLite file (default 4) and on an empty PostgreSQL
   database (default 8; a private server started as the tests do,
   ``tests/_postgres.py``). Reports crashes, finished trials against ``--trials``
   and duplicate parameter sets.
2. **Proxy throughput**: trials per second of N workers against 1 worker, same
   study size, on SQLite and PostgreSQL (several runs, alternating order).
3. **Real training**: the ``train`` evaluator on a Fashion-MNIST subset, 2 workers
   x 1 thread against 1 worker x 2 threads, the same trials (random sampler: a
   trial's parameters depend only on ``--seed`` and its number), alternating.

    python benchmarks/workers.py [--runs 3] [--skip-training] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # tests._postgres: the private PostgreSQL server


def _search(study: str, trials: int, extra: list[str]) -> list[str]:
    """The worker command; the storage URL goes in ``NASMLCN_STORAGE`` (``_env``), so
    the PostgreSQL password is in no process list."""
    return [
        sys.executable,
        "-m",
        "nasmlcn",
        "search",
        *("--study", study, "--trials", str(trials), "--quiet"),
        *extra,
    ]


def _env(url: str, threads: int | None = 1) -> dict[str, str]:
    env = {**os.environ, "NASMLCN_STORAGE": url}
    if threads is not None:
        env["OMP_NUM_THREADS"] = str(threads)
    return env


PROXY = ["--evaluator", "proxy", "--devices", "4xK80", "--mem", "12GB", "--epochs", "3"]


def _together(n: int, url: str, study: str, trials: int, extra: list[str]) -> dict[str, Any]:
    """Starts ``n`` workers at once; their exit codes, wall time and the study's state."""
    import optuna
    from optuna.trial import TrialState

    command = _search(study, trials, extra)
    start = time.perf_counter()
    procs = [
        subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=_env(url))
        for _ in range(n)
    ]
    errors = [p.communicate()[1].decode(errors="replace").strip() for p in procs]
    seconds = time.perf_counter() - start
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    done = optuna.load_study(study_name=study, storage=url).get_trials(
        deepcopy=False, states=(TrialState.COMPLETE, TrialState.PRUNED)
    )
    params = [tuple(sorted(t.params.items())) for t in done]
    # a repeat (a model proposed again takes its original's result) comes on top of
    # --trials, which counts models
    repeats = sum(1 for t in done if t.user_attrs.get("repeat_of") is not None)
    # from the first trial's start to the last one's end: interpreter start-up
    # (seconds per worker process) is not the search's throughput
    first = min(t.datetime_start for t in done if t.datetime_start)
    last = max(t.datetime_complete for t in done if t.datetime_complete)
    span = max((last - first).total_seconds(), 1e-6)
    return {
        "workers": n,
        "crashes": sum(1 for p in procs if p.returncode != 0),
        "errors": [e.splitlines()[-1] for e, p in zip(errors, procs, strict=True) if p.returncode],
        "finished": len(done),
        "models": len(done) - repeats,
        "repeats": repeats,
        "target": trials,
        "duplicates": len(params) - len(set(params)),
        "seconds": seconds,
        "trials_per_second": len(done) / span,
    }


def started_at_once(postgres: Any) -> list[dict[str, Any]]:
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        sqlite = _together(4, f"sqlite:///{tmp}/fresh.db", "once", 40, PROXY)
        out.append({"storage": "SQLite (fresh file)", **sqlite})
    url = postgres.create_database().url
    out.append({"storage": "PostgreSQL (empty database)", **_together(8, url, "once", 40, PROXY)})
    out.append(
        {
            "storage": "PostgreSQL (existing schema and study)",
            **_together(8, url, "once", 80, PROXY),
        }
    )
    return out


def proxy_throughput(postgres: Any, runs: int, trials: int) -> list[dict[str, Any]]:
    out = []
    for name in ("SQLite", "PostgreSQL"):
        for n in (2, 4):
            rates: dict[int, list[float]] = {1: [], n: []}
            for run in range(runs):
                for workers in (1, n) if run % 2 == 0 else (n, 1):
                    with tempfile.TemporaryDirectory() as tmp:
                        url = (
                            f"sqlite:///{tmp}/t.db"
                            if name == "SQLite"
                            else postgres.create_database().url
                        )
                        got = _together(workers, url, "speed", trials, PROXY)
                        assert got["crashes"] == 0, got
                        assert got["models"] == trials, got
                        rates[workers].append(got["trials_per_second"])
            one, many = statistics.median(rates[1]), statistics.median(rates[n])
            out.append(
                {
                    "storage": name,
                    "workers": n,
                    "trials": trials,
                    "runs": runs,
                    "one_worker_trials_per_s": one,
                    "n_workers_trials_per_s": many,
                    "ratio": many / one,
                }
            )
    return out


def training(runs: int, trials: int) -> dict[str, Any]:
    """2 workers x 1 thread vs 1 worker x 2 threads, the same trials, alternating."""
    extra = [
        *("--evaluator", "train", "--devices", "2xK80", "--mem", "12GB", "--flops", "0.25x"),
        *("--epochs", "2", "--train-limit", "2000", "--val-limit", "500", "--no-prune"),
        *("--sampler", "random", "--seed", "0", "--run-on", "cpu"),
    ]
    seconds: dict[str, list[float]] = {"2 workers x 1 thread": [], "1 worker x 2 threads": []}
    for run in range(runs):
        order = list(seconds) if run % 2 == 0 else list(reversed(seconds))
        for label in order:
            with tempfile.TemporaryDirectory() as tmp:
                url = f"sqlite:///{tmp}/train.db"
                workers = ["--workers", "2"] if label.startswith("2") else []
                command = _search("train", trials, [*extra, *workers])
                start = time.perf_counter()
                subprocess.run(
                    command,
                    check=True,
                    stdout=subprocess.DEVNULL,
                    cwd=ROOT,
                    env=_env(url, threads=None),  # the pool splits the cores itself
                )
                seconds[label].append(time.perf_counter() - start)
    medians = {k: statistics.median(v) for k, v in seconds.items()}
    return {
        "trials": trials,
        "runs": runs,
        "seconds": seconds,
        "median_seconds": medians,
        "trials_per_hour": {k: trials * 3600 / v for k, v in medians.items()},
        "speedup_of_2_workers": medians["1 worker x 2 threads"] / medians["2 workers x 1 thread"],
    }


def main() -> None:
    from tests._postgres import PostgresServer

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--proxy-trials", type=int, default=60)
    parser.add_argument("--train-trials", type=int, default=4)
    parser.add_argument("--skip-training", action="store_true")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    server = PostgresServer()
    try:
        result: dict[str, Any] = {"started_at_once": started_at_once(server)}
        result["proxy_throughput"] = proxy_throughput(server, args.runs, args.proxy_trials)
    finally:
        server.stop()
    if not args.skip_training:
        result["training"] = training(args.runs, args.train_trials)
    result["cpus"] = os.cpu_count()
    if args.json:
        print(json.dumps(result))
        return
    print("started at once (proxy evaluator):")
    for r in result["started_at_once"]:
        print(
            f"  {r['workers']} workers, {r['storage']}: {r['crashes']} crashes, "
            f"{r['finished']}/{r['target']} finished, {r['duplicates']} duplicate parameter sets"
            + (f"; errors: {r['errors']}" if r["errors"] else "")
        )
    print(f"proxy throughput (median of {args.runs} runs each, alternating order):")
    for r in result["proxy_throughput"]:
        print(
            f"  {r['storage']}: {r['workers']} workers {r['n_workers_trials_per_s']:.1f} trials/s, "
            f"1 worker {r['one_worker_trials_per_s']:.1f} trials/s: x{r['ratio']:.2f}"
        )
    if "training" in result:
        t = result["training"]
        print(
            f"real training, {t['trials']} trials, median of {t['runs']} runs each "
            f"({result['cpus']} CPUs):"
        )
        for label, value in t["median_seconds"].items():
            print(f"  {label}: {value:.0f} s ({t['trials_per_hour'][label]:.0f} trials/h)")
        print(f"  2 workers x 1 thread vs 1 worker x 2 threads: x{t['speedup_of_2_workers']:.2f}")


if __name__ == "__main__":
    from nasmlcn.reproduce.engines.common import exit_with

    main()
    exit_with(0)
