"""Per-trial overhead of the search: sampling, building, placement, storage, notes.

For each sampler, runs N trials (default 500) of ``nasmlcn.search.run_search`` with
the ``proxy`` evaluator and the dashboard observer (as the CLI does) on a fresh
SQLite file, and two plain Optuna ask/tell loops with the same search space and
sampler and no bookkeeping, i.e. what a hand-written Optuna loop would cost:

- ``plain, same SQLite``: a SQLite file with the settings nasmlcn opens it with
  (WAL journal, ``synchronous=NORMAL``), so the ratio shows nasmlcn's own work;
- ``plain, default SQLite``: Optuna's defaults (rollback journal, full sync).

The figure is wall time per trial: the time between one trial's end and the next's
(the first from the start of the run), so every SQL query, note write and log line
of the loop is in it, not only the phases the runner times. Beside it, the SQL
statements each side sends per trial (setting up the study included): a count that
does not drift with the machine's load. The three sides run in
turn, in alternating order over ``--rounds`` rounds (default 2), each on a fresh
file in one process; medians and p95 are over all rounds' trials.

    python benchmarks/search_overhead.py [--trials 500] [--rounds 2]
        [--samplers tpe,nsga2] [--objectives accuracy,latency] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

import optuna
from optuna.study import StudyDirection
from sqlalchemy import event
from sqlalchemy.engine import Engine

from nasmlcn.dashboard import DashboardObserver
from nasmlcn.search import SAMPLERS, SearchConfig, SearchObserver, run_search
from nasmlcn.search.spaces import load_space
from nasmlcn.study._storage import _sqlite_pragmas

SIDES = ("nasmlcn", "plain_same_sqlite", "plain_default_sqlite")
_STATEMENTS = [0]  # SQL statements sent by every engine of this process


@event.listens_for(Engine, "before_cursor_execute")
def _count_statement(*_: Any) -> None:
    _STATEMENTS[0] += 1


def _stats(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {
        "median_ms": statistics.median(ordered) * 1e3,
        "p95_ms": ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))] * 1e3,
        "mean_ms": statistics.fmean(ordered) * 1e3,
    }


class _TrialEnds(SearchObserver):
    """Wall-clock instants at which trials end."""

    def __init__(self) -> None:
        self.ends: list[float] = []

    def on_trial_end(self, outcome: Any) -> None:
        self.ends.append(time.perf_counter())


def _gaps(start: float, ends: list[float]) -> list[float]:
    return [b - a for a, b in zip([start, *ends[:-1]], ends, strict=True)]


def run_nasmlcn(
    sampler: str, trials: int, path: Path, objectives: tuple[str, ...]
) -> tuple[list[float], dict[str, float]]:
    config = SearchConfig(
        evaluator="proxy",
        sampler=sampler,
        trials=trials,
        epochs=1,
        objectives=objectives,
        storage=f"sqlite:///{path}",
        devices="8xK80",
        mem="12GB",
    )
    ends = _TrialEnds()
    start = time.perf_counter()
    result = run_search(config, observers=[DashboardObserver(), ends])
    phases = {
        phase: statistics.median(t.timings.get(phase, 0.0) for t in result.run_trials) * 1e3
        for phase in ("ask", "build", "record", "evaluate", "tell")
    }
    return _gaps(start, ends.ends), phases


def run_plain(
    sampler: str, trials: int, path: Path, objectives: tuple[str, ...], same_sqlite: bool
) -> list[float]:
    storage = optuna.storages.RDBStorage(f"sqlite:///{path}")
    if same_sqlite:  # every connection from here on gets nasmlcn's pragmas
        event.listen(storage.engine, "connect", _sqlite_pragmas)
        storage.engine.dispose()
    distributions = load_space("mlcn-buckets").distributions()
    study = optuna.create_study(
        storage=storage,
        sampler=SAMPLERS.get(sampler).make(0, trials),
        directions=[StudyDirection.MAXIMIZE] + [StudyDirection.MINIMIZE] * (len(objectives) - 1),
    )
    ends = []
    start = time.perf_counter()
    for i in range(trials):
        trial = study.ask(distributions)
        values = [float(trial.params["fill"])] + [float(i % 7)] * (len(objectives) - 1)
        study.tell(trial, values)
        ends.append(time.perf_counter())
    return _gaps(start, ends)


def measure(
    sampler: str, trials: int, rounds: int, folder: Path, objectives: tuple[str, ...]
) -> dict[str, Any]:
    gaps: dict[str, list[float]] = {side: [] for side in SIDES}
    statements: dict[str, int] = dict.fromkeys(SIDES, 0)
    phases: list[dict[str, float]] = []
    for r in range(rounds):
        order = SIDES if r % 2 == 0 else tuple(reversed(SIDES))
        for side in order:
            path = folder / f"{sampler}-{side}-{r}.db"
            before = _STATEMENTS[0]
            if side == "nasmlcn":
                found, phase = run_nasmlcn(sampler, trials, path, objectives)
                phases.append(phase)
            else:
                same = side == "plain_same_sqlite"
                found = run_plain(sampler, trials, path, objectives, same_sqlite=same)
            gaps[side].extend(found)
            statements[side] += _STATEMENTS[0] - before
    report: dict[str, Any] = {
        side: {
            **_stats(gaps[side]),
            "trials": len(gaps[side]),
            "statements_per_trial": statements[side] / len(gaps[side]),
        }
        for side in SIDES
    }
    report["nasmlcn"]["phases_median_ms"] = {
        k: statistics.median(p[k] for p in phases) for k in phases[0]
    }
    for side in SIDES[1:]:
        report[f"ratio_vs_{side}"] = report["nasmlcn"]["median_ms"] / report[side]["median_ms"]
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--samplers", default="tpe,nsga2")
    parser.add_argument("--objectives", default="accuracy,latency")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    warnings.simplefilter("ignore")
    objectives = tuple(args.objectives.split(","))
    report: dict[str, Any] = {
        "trials": args.trials,
        "rounds": args.rounds,
        "objectives": list(objectives),
        "samplers": {},
    }
    with tempfile.TemporaryDirectory() as tmp:
        for sampler in args.samplers.split(","):
            report["samplers"][sampler] = measure(
                sampler, args.trials, args.rounds, Path(tmp), objectives
            )
    if args.json:
        print(json.dumps(report, indent=2))
        return
    print(
        f"{args.trials} trials x {args.rounds} rounds (alternating order) per side, objectives "
        f"{args.objectives}, SQLite, proxy evaluator, 8xK80 buckets; wall ms per trial "
        "(SQL statements per trial)"
    )
    print(
        f"{'sampler':8} {'nasmlcn median/p95':>19}   {'plain same SQLite':>18}  "
        f"{'plain default SQLite':>20}   ratio same/default   nasmlcn phases (median ms)"
    )
    for name, r in report["samplers"].items():
        ours, same, default = (r[side] for side in SIDES)
        phases = " ".join(f"{k} {v:.1f}" for k, v in ours["phases_median_ms"].items())
        print(
            f"{name:8} {ours['median_ms']:9.1f} / {ours['p95_ms']:6.1f} "
            f"({ours['statements_per_trial']:.1f})  "
            f"{same['median_ms']:8.1f} / {same['p95_ms']:6.1f} ({same['statements_per_trial']:.1f})  "
            f"{default['median_ms']:9.1f} / {default['p95_ms']:7.1f}   "
            f"x{r['ratio_vs_plain_same_sqlite']:.2f} / x{r['ratio_vs_plain_default_sqlite']:.2f}"
            f"        {phases}"
        )


if __name__ == "__main__":
    from nasmlcn.reproduce.engines.common import exit_with

    main()
    exit_with(0)
