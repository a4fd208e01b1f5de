"""Trials per hour and in-trial training rate of finished searches, read back from
their study databases (``scripts/gpu_check.sh --part speed`` runs the same search
with 1, 2, 4 and 8 workers per GPU, then this).

Per database, over its first ``--first`` finished trials (by number) and over all of
them: the wall seconds from the first one's start to the last one's end, the trials
per hour that makes, and the median of the trials' own training rates (images/s, as
each trial measured it: ``TrialRecord.training["images_per_second"]``) and of their
durations. With several workers the first trials run side by side, so their trials
per hour is what the workers reach together. Trials that did not finish (pruned as
infeasible, failed, stopped by a timeout) are counted, not used.

Given several databases (the same job packed differently), a last table sets them
side by side: each job's workers, finished and unfinished trials, wall seconds and
trials per hour over all its finished trials, and that rate over the first
database's. (The wall time runs from the first trial's start to the last one's end:
the processes' start-up, more of it with more workers, is in the calling step's
seconds, not here.)

    python benchmarks/speed_summary.py speed-w1.db speed-w2.db speed-w4.db speed-w8.db
    python benchmarks/speed_summary.py --first 4 --json sqlite:///speed-w1.db
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nasmlcn.reproduce.engines.common import median_or_none
from nasmlcn.study import TrialRecord, load_existing_study

if TYPE_CHECKING:
    from optuna.trial import FrozenTrial


def storage_url(text: str) -> str:
    """A storage URL as it is, a file path as a SQLite URL."""
    return text if "://" in text else f"sqlite:///{Path(text).resolve()}"


def figures(trials: list[FrozenTrial]) -> dict[str, Any]:
    """Wall time, trials per hour and median rates of finished ``trials``."""
    if not trials:
        return {"trials": 0}
    starts = [t.datetime_start for t in trials if t.datetime_start is not None]
    ends = [t.datetime_complete for t in trials if t.datetime_complete is not None]
    wall = (max(ends) - min(starts)).total_seconds()
    rates = [TrialRecord.of(t).training.get("images_per_second") for t in trials]
    durations = [t.duration.total_seconds() for t in trials if t.duration is not None]
    return {
        "trials": len(trials),
        "numbers": [t.number for t in trials],
        "wall_seconds": wall,
        "trials_per_hour": 3600 * len(trials) / wall if wall > 0 else None,
        "median_images_per_second": median_or_none(
            [float(r) for r in rates if isinstance(r, int | float)]
        ),
        "median_trial_seconds": median_or_none(durations),
    }


def summarise(url: str, first: int, study: str | None = None) -> dict[str, Any]:
    """The figures of the study in ``url`` (its only one unless ``study`` names it)."""
    loaded = load_existing_study(study, url)
    trials = loaded.get_trials(deepcopy=False)
    done = sorted(
        (
            t
            for t in trials
            if t.state.name == "COMPLETE" and t.datetime_start and t.datetime_complete
        ),
        key=lambda t: t.number,
    )
    workers = {TrialRecord.of(t).worker for t in trials} - {None}
    return {
        "study": loaded.study_name,
        "states": dict(Counter(t.state.name for t in trials)),
        "workers": len(workers),
        "first": figures(done[:first]),
        "all": figures(done),
    }


def _num(value: float | None, spec: str) -> str:
    return "n/a" if value is None else format(value, spec)


def lines(name: str, data: dict[str, Any], first: int) -> list[str]:
    if "error" in data:
        return [f"{name}: {data['error']}"]
    states = ", ".join(f"{n} {s}" for s, n in sorted(data["states"].items()))
    out = [
        f"{name}: study {data['study']}, {data['workers']} worker(s); trials: {states}",
        f"  {'trials':<12} {'n':>3} {'wall s':>8} {'trials/h':>9} {'median img/s':>13} "
        f"{'median trial s':>15}",
    ]
    for label, key in ((f"first {first}", "first"), ("all", "all")):
        f = data[key]
        out.append(
            f"  {label:<12} {f['trials']:>3} {_num(f.get('wall_seconds'), '.1f'):>8} "
            f"{_num(f.get('trials_per_hour'), '.0f'):>9} "
            f"{_num(f.get('median_images_per_second'), '.0f'):>13} "
            f"{_num(f.get('median_trial_seconds'), '.1f'):>15}"
        )
    return out


def packing_lines(result: dict[str, dict[str, Any]]) -> list[str]:
    """The databases side by side: wall time and trials per hour of all finished
    trials of each, and its trials per hour over the first database's."""
    names = {text: Path(text).name for text in result}
    width = max(len("job"), *(len(n) for n in names.values()))
    out = [
        "packing (all finished trials of each job; x first: trials/h over the first job's):",
        f"  {'job':<{width}} {'workers':>7} {'done':>4} {'unfinished':>10} {'wall s':>8} "
        f"{'trials/h':>9} {'x first':>7}",
    ]
    base = next(iter(result.values())).get("all", {}).get("trials_per_hour")
    for text, data in result.items():
        if "error" in data:
            out.append(f"  {names[text]:<{width}} {data['error'][:100]}")
            continue
        f = data["all"]
        rate = f.get("trials_per_hour")
        unfinished = sum(data["states"].values()) - f["trials"]
        ratio = rate / base if rate is not None and base else None
        out.append(
            f"  {names[text]:<{width}} {data['workers']:>7} {f['trials']:>4} {unfinished:>10} "
            f"{_num(f.get('wall_seconds'), '.1f'):>8} {_num(rate, '.0f'):>9} "
            f"{_num(ratio, '.2f'):>7}"
        )
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("storage", nargs="+", help="study database file or storage URL")
    parser.add_argument("--first", type=int, default=4, help="the first N trials [default: 4]")
    parser.add_argument("--study", help="study name [default: the only one in each storage]")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    result: dict[str, dict[str, Any]] = {}
    for text in args.storage:
        try:
            result[text] = summarise(storage_url(text), args.first, args.study)
        except Exception as err:  # a missing or unfinished database: say so, go on
            result[text] = {"error": f"{type(err).__name__}: {err}"}
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    for text, data in result.items():
        print("\n".join(lines(Path(text).name, data, args.first)))
    if len(result) > 1:
        print("\n".join(["", *packing_lines(result)]))
    return 0


if __name__ == "__main__":
    from nasmlcn.reproduce.engines.common import exit_with

    exit_with(main())
