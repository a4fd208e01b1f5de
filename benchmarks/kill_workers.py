"""Workers killed with -9 at random moments lose nothing.

Runs a study of the real ``train`` evaluator (Fashion-MNIST subset, CPU) with two
``nasmlcn search`` worker processes on one SQLite file, kills a random worker with
SIGKILL at random moments (``--kills`` times, default 20) and starts a new one in
its place each time, then lets the study finish. Reports, and checks:

- finished trials (COMPLETE + PRUNED) == ``--trials`` (nothing lost, no overshoot);
- no trial finished twice (every failed-by-crash trial has at most one finished
  retry, and no two finished trials share parameters);
- every trial a kill interrupted was failed with its reason and retried, and the
  retries that had a checkpoint resumed from it (``resumed_from_epoch``);
- ``PRAGMA integrity_check`` of the database says ok.

    python benchmarks/kill_workers.py [--kills 20] [--trials 16] [--seed 0] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def _command(url: str, args: argparse.Namespace) -> list[str]:
    return [
        sys.executable,
        "-m",
        "nasmlcn",
        "search",
        *("--evaluator", "train", "--devices", "2xK80", "--mem", "12GB", "--flops", "0.25x"),
        *("--epochs", str(args.epochs), "--train-limit", "600", "--val-limit", "300"),
        *("--trials", str(args.trials), "--sampler", "random", "--seed", str(args.seed)),
        *("--storage", url, "--study", "kill", "--run-on", "cpu", "--grace", str(args.grace)),
        *("--no-prune", "--max-retries", "10", "--quiet"),
    ]


def _start(command: list[str], log: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    with log.open("ab") as out:
        return subprocess.Popen(command, stdout=out, stderr=out, cwd=ROOT, env=env)


def run(args: argparse.Namespace) -> dict[str, Any]:
    import optuna

    from nasmlcn.study import TrialRecord

    rng = random.Random(args.seed)
    folder = Path(tempfile.mkdtemp(prefix="nasmlcn-kill-"))
    db = folder / "kill.db"
    url = f"sqlite:///{db}"
    command = _command(url, args)
    log = folder / "workers.log"
    workers = [_start(command, log) for _ in range(2)]
    kills = 0
    started = time.perf_counter()
    while kills < args.kills:
        time.sleep(rng.uniform(args.min_gap, args.max_gap))
        alive = [w for w in workers if w.poll() is None]
        if not alive:
            break  # the study finished before all kills were spent
        victim = rng.choice(alive)
        os.kill(victim.pid, signal.SIGKILL)
        victim.wait()
        kills += 1
        workers[workers.index(victim)] = _start(command, log)
        print(
            f"kill {kills}/{args.kills} at {time.perf_counter() - started:.0f} s", file=sys.stderr
        )
    codes = [w.wait(timeout=3600) for w in workers]
    seconds = time.perf_counter() - started

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.load_study(study_name="kill", storage=url)
    frozen = study.get_trials(deepcopy=False)
    trials = [TrialRecord.of(t) for t in frozen]
    history = {t.number: t.system_attrs.get("retry_history") for t in frozen}
    done = [t for t in trials if t.state in ("COMPLETE", "PRUNED")]
    crashed = [t for t in trials if t.failure == "crash"]
    retries: dict[int, list[Any]] = {}
    for t in trials:
        if t.retry_of is not None:  # keyed by the trial it directly retries
            previous = history[t.number]
            assert previous, f"trial {t.number} retries another but has no retry_history"
            retries.setdefault(previous[-1], []).append(t)
    unretried = [t.number for t in crashed if t.number not in retries]
    params = [tuple(sorted(t.params.items())) for t in done]
    resumed = [t for t in done if t.resumed_from_epoch]
    with sqlite3.connect(db) as connection:
        integrity = connection.execute("PRAGMA integrity_check").fetchone()[0]
    return {
        "kills": kills,
        "trials_target": args.trials,
        "finished": len(done),
        "finished_twice": len(params) - len(set(params)),
        "failed_by_crash": len(crashed),
        "crash_reasons": sorted({t.fail_reason or "" for t in crashed}),
        "crashed_not_retried": unretried,
        # crashed trials whose retry chain ended in a finished trial
        "retried_and_finished": sum(1 for t in crashed if _chain_finished(t.number, retries)),
        "resumed_from_checkpoint": len(resumed),
        "resumed_epochs": sorted(t.resumed_from_epoch or 0 for t in resumed),
        "running_or_waiting_left": sum(1 for t in trials if t.state in ("RUNNING", "WAITING")),
        "integrity_check": integrity,
        "worker_exit_codes": codes,
        "seconds": seconds,
        "folder": str(folder),
    }


def _chain_finished(number: int, retries: dict[int, list[Any]]) -> bool:
    for retry in retries.get(number, []):
        if retry.state in ("COMPLETE", "PRUNED"):
            return True
        if _chain_finished(retry.number, retries):
            return True
    return False


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--trials", type=int, default=16)
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--grace", type=float, default=4.0)
    parser.add_argument("--min-gap", type=float, default=2.0)
    parser.add_argument("--max-gap", type=float, default=12.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result = run(args)
    if args.json:
        print(json.dumps(result))
        return
    ok = (
        result["finished"] == result["trials_target"]
        and result["finished_twice"] == 0
        and not result["crashed_not_retried"]
        and result["retried_and_finished"] == result["failed_by_crash"]
        and result["running_or_waiting_left"] == 0
        and result["integrity_check"] == "ok"
    )
    print(
        f"{result['kills']} kill -9 of 2 workers over {result['seconds']:.0f} s: "
        f"{result['finished']}/{result['trials_target']} finished, "
        f"{result['finished_twice']} finished twice, {result['failed_by_crash']} trials "
        f"failed by a crash, {len(result['crashed_not_retried'])} of them not retried, "
        f"{result['retried_and_finished']} retried until finished, "
        f"{result['resumed_from_checkpoint']} resumed from a checkpoint (epochs "
        f"{result['resumed_epochs']}), integrity {result['integrity_check']}: "
        + ("OK" if ok else "FAILED")
    )
    print(f"reasons: {result['crash_reasons']}")
    if not ok:
        sys.exit(1)


if __name__ == "__main__":
    from nasmlcn.reproduce.engines.common import exit_with

    main()
    exit_with(0)
