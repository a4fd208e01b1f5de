"""The report as text: the tables the benchmark prints."""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    pass

from _search_quality.settings import ACCURACY, HALVING_TRIALS, LATENCY_MARGIN, PARETO


def _clock(seconds: float) -> str:
    minutes, secs = divmod(round(seconds), 60)
    return f"{minutes}:{secs:02d}"


def _cell(stat: Mapping[str, Any], digits: int) -> str:
    if stat["mean"] is None:
        return "-"
    sd = f" ± {stat['sd']:.{digits}f}" if stat["sd"] is not None else ""
    return f"{stat['mean']:.{digits}f}{sd} [{stat['runs']}]"


def _interval(d: Mapping[str, Any] | None, digits: int) -> str:
    if d is None:
        return "-"
    return (
        f"{d['mean']:+.{digits}f} [{d['low']:+.{digits}f}, {d['high']:+.{digits}f}] "
        f"{d['verdict']} ({d['pairs']} pairs)"
    )


def render(report: Mapping[str, Any]) -> str:
    s = report["settings"]
    ref = report["reference_point"]
    cache = report["cache"]
    t = s["trials"]
    lines = [
        f"Search quality: {s['devices']} {s['mem']} --flops {s['flops']}, {s['epochs']} epoch(s) "
        f"on {s['train_limit']:,} training / {s['val_limit']:,} validation images, "
        f"seeds {', '.join(map(str, s['seeds']))}, {t} trials per run, real "
        f"training on {s['run_on']} ({report['workers']} worker(s) of "
        f"{report['threads_per_worker']} torch thread(s)); no pruning but in the "
        f"multi-fidelity runs ({s['long_epochs']} epochs).",
        f"Cache: {cache['trials_served']} of {cache['trials_evaluated']} evaluated trials "
        f"served by the cache (same model, seed and trial trained before, in this "
        f"invocation or an earlier one), {cache['trained']} trained; {cache['path']} "
        f"({cache['entries']} entries).",
        "Figures: mean ± sd over seeds [runs it rests on]; n counts every trial; compute is "
        "CPU seconds of training (a cached trial counts what its training took).",
    ]
    main = {k: r for k, r in report["runs"].items() if not r["long"]}
    for objectives, what, field in (
        (list(ACCURACY), "Best validation accuracy after n trials", "best_accuracy"),
        (list(PARETO), "Hypervolume after n trials (accuracy + latency)", "hypervolume"),
    ):
        runs = {k: r for k, r in main.items() if r["objectives"] == objectives}
        lines += ["", f"{what} (objectives: {', '.join(objectives)})"]
        width = max(len(r["label"]) for r in runs.values()) + 2
        lines.append("run".ljust(width) + "".join(f"n={n}".ljust(24) for n in s["checkpoints"]))
        for r in runs.values():
            cells = "".join(_cell(r["at"][str(n)][field], 4).ljust(24) for n in s["checkpoints"])
            lines.append(r["label"].ljust(width) + cells)
    lines.append(
        f"(hypervolume reference point: accuracy {ref['accuracy']:g} (chance), latency "
        f"{ref['latency'] * 1e3:.4g} ms = {1 + LATENCY_MARGIN:g} x the load limit's largest "
        f"step time {ref['latency_bound'] * 1e3:.4g} ms; largest latency seen "
        f"{ref['max_latency_seen'] * 1e3:.4g} ms; normalised by the box up to accuracy 1, latency 0)"
    )
    runs = {k: r for k, r in main.items() if r["objectives"] == list(ACCURACY)}
    width = max(len(r["label"]) for r in runs.values()) + 2
    budgets = list(next(iter(runs.values()))["within"])
    lines += [
        "",
        "Best validation accuracy within c CPU seconds of training (c: a quarter, half and "
        "all of random on mlcn-buckets' mean compute; a run that finished sooner keeps its "
        "best; total: the run's mean compute for all its trials)",
        "run".ljust(width) + "".join(f"c={b} s".ljust(24) for b in budgets) + "total",
    ]
    for r in runs.values():
        cells = "".join(_cell(r["within"][b], 4).ljust(24) for b in budgets)
        total = statistics.fmean(v["compute"] for v in r["seeds"].values())
        lines.append(r["label"].ljust(width) + cells + f"{total:.0f} s")

    g = report["goals"]
    n = s["goal_trials"]
    lines += [
        "",
        f"Paired by seed against random on mlcn-thesis (the baseline, best-of-{t} "
        f"{_cell(g['target'], 4)}): difference in best accuracy after {t} trials, 95 % t "
        "interval; and against random on the same space",
    ]
    for sampler, a in g["accuracy"].items():
        reached = a["reaches_baseline_best_at"]
        lines.append(
            f"  {sampler:<7} vs baseline {_interval(a['vs_baseline'], 4)}; vs random on "
            f"mlcn-buckets {_interval(a['vs_random_same_space'], 4) if sampler != 'random' else '-'}"
            f"; after {n}: {_cell(a['at_goal_trials'], 4)}; mean reaches the baseline's "
            + (f"after {reached} trials" if reached else f"in none of {t} trials")
        )
    lines.append(f"Hypervolume after {t} trials, paired by seed against random on mlcn-buckets:")
    for key, h in g["hypervolume"].items():
        if key.startswith("random/mlcn-buckets") or "vs_random_same_space" not in h:
            continue
        lines.append(f"  {key:<20} {_interval(h['vs_random_same_space'], 4)}")
    mf = g["multi_fidelity"]
    lines += [
        "",
        f"Multi-fidelity: TPE at {s['long_epochs']} epochs without and with successive halving "
        f"(rate 3: rung at epoch 1; {HALVING_TRIALS} x the trials), best {s['long_epochs']}-epoch "
        f"accuracy within c CPU seconds of training (c: fractions of the plain run's "
        f"{mf['full_compute']:.0f} s); trials: mean trials started within c; pruned per seed "
        f"{mf['halving_pruned_per_seed']}",
    ]
    for fraction, b in mf["budgets"].items():
        lines.append(
            f"  c={b['seconds']:.0f} s ({fraction}): halving {_cell(b['halving'], 4)} "
            f"({b['halving_trials'] or 0:.1f} trials), plain {_cell(b['plain'], 4)} "
            f"({b['plain_trials'] or 0:.1f} trials); difference {_interval(b['difference'], 4)}"
        )
    lines.append("")
    for name in ("reaches_within_goal_trials", "ahead_at_trials", "hypervolume_ahead"):
        goal = g[name]
        lines.append(f"Goal: {goal['goal']}: {'HOLDS' if goal['holds'] else 'does not hold'}")
    repeats = []
    for r in report["runs"].values():
        distinct = [v["distinct_models"] for v in r["seeds"].values()]
        failed = sum(v["failed"] for v in r["seeds"].values())
        complete = [r["trials"] - v["pruned"] - v["failed"] for v in r["seeds"].values()]
        if failed or any(d < c for d, c in zip(distinct, complete, strict=True)):
            repeats.append(
                f"{r['key']}: distinct models per seed {distinct} of {r['trials']} trials"
                + (f", {failed} trial(s) failed" if failed else "")
            )
    lines += [""] + (repeats or ["Every complete trial of every run trained a distinct model."])
    est = report["estimate"]
    lines += [
        "",
        f"Took {_clock(report['seconds'])} (estimated {_clock(est['seconds'])} for "
        f"{sum(est['trainings'].values())} trainings; trained {cache['trained']}).",
        "Files: " + ", ".join(report["files"]),
    ]
    return "\n".join(lines)
