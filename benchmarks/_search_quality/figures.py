"""Figures from the trials: best-so-far, hypervolume, compute, the paired
differences from the baseline, the goals and the multi-fidelity pair."""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from nasmlcn.reproduce.engines.common import running_best

if TYPE_CHECKING:
    pass

from _search_quality.settings import (
    _BUCKETS,
    _LONG_TPE,
    _PARETO_BUCKETS,
    _THESIS,
    GUIDED,
    Settings,
    TrialRecord,
)


def models(records: Sequence[TrialRecord]) -> list[TrialRecord]:
    """The trials that trained a model: what ``--trials`` counts; a repeat (a model
    proposed again, its original's result taken, nothing trained) comes on top and is
    left out of the curves, so that every sampler's curve has one point per model."""
    return [r for r in records if r.repeat_of is None]


def best_so_far(records: Sequence[TrialRecord]) -> list[float | None]:
    """After each model's trial (any state), the best accuracy of the completed ones
    so far."""
    return running_best([r.accuracy if r.state == "COMPLETE" else None for r in models(records)])


def _hypervolume(points: Sequence[tuple[float, float]], reference: tuple[float, float]) -> float:
    """Exact hypervolume of minimisation ``points`` that dominate ``reference``.

    The one private import of this benchmark: Optuna 5 has no public hypervolume
    function; its own ``plot_hypervolume_history`` uses this one (exact WFG), as
    does nasmlcn's dashboard.
    """
    import numpy as np
    from optuna._hypervolume import compute_hypervolume

    inside = [p for p in points if p[0] < reference[0] and p[1] < reference[1]]
    if not inside:
        return 0.0
    return float(compute_hypervolume(np.asarray(inside, dtype=float), np.asarray(reference)))


def hypervolume_so_far(
    records: Sequence[TrialRecord], accuracy_floor: float, latency_ref: float
) -> list[float]:
    """After each model's trial, the normalised hypervolume of the completed ones so far."""
    box = (1.0 - accuracy_floor) * latency_ref
    points: list[tuple[float, float]] = []
    out: list[float] = []
    for r in models(records):
        if r.state == "COMPLETE" and r.accuracy is not None and r.latency is not None:
            points.append((-r.accuracy, r.latency))
        out.append(_hypervolume(points, (-accuracy_floor, latency_ref)) / box if points else 0.0)
    return out


def at(curves: Sequence[Sequence[float | None]], n: int) -> dict[str, Any]:
    """Mean, sd and count over the runs (seeds) that have a value after ``n`` trials."""
    values = [v for c in curves if len(c) >= n and (v := c[n - 1]) is not None]
    return {
        "mean": statistics.fmean(values) if values else None,
        "sd": statistics.stdev(values) if len(values) > 1 else None,
        "runs": len(values),
        "values": values,
    }


def mean_curve(curves: Sequence[Sequence[float | None]]) -> list[float | None]:
    n = max((len(c) for c in curves), default=0)
    return [at(curves, i)["mean"] for i in range(1, n + 1)]


def best_within(records: Sequence[TrialRecord], budget: float) -> float | None:
    """The best accuracy of the completed trials among those run before ``budget`` CPU
    seconds of training were spent (a run that finished sooner keeps its best)."""
    spent, best = 0.0, None
    for r in records:
        spent += r.compute
        if spent > budget:
            break
        if r.state == "COMPLETE" and r.accuracy is not None:
            best = r.accuracy if best is None else max(best, r.accuracy)
    return best


def compute_so_far(records: Sequence[TrialRecord]) -> list[float]:
    """After each model's trial, the CPU seconds of training spent so far."""
    return list(itertools.accumulate(r.compute for r in models(records)))


def paired(
    curves: Sequence[Sequence[float | None]], baseline: Sequence[Sequence[float | None]], n: int
) -> dict[str, Any] | None:
    """Paired by seed (the same data split and weight seeds): the mean difference of
    the figure after ``n`` trials with its 95 % t interval; None below 2 pairs."""
    pairs: list[tuple[float, float]] = [
        (x, y)
        for c, b in zip(curves, baseline, strict=True)
        if len(c) >= n
        and len(b) >= n
        and (x := c[n - 1]) is not None
        and (y := b[n - 1]) is not None
    ]
    if len(pairs) < 2:
        return None
    return paired_values([a for a, _ in pairs], [b for _, b in pairs])


def paired_values(a: Sequence[float], b: Sequence[float]) -> dict[str, Any]:
    from nasmlcn.stats import paired_interval

    return paired_interval(a, b).to_dict()


def reaches(curves: Sequence[Sequence[float | None]], target: float | None) -> int | None:
    """The first n at which the mean over seeds reaches ``target`` (None: never)."""
    if target is None:
        return None
    return next(
        (i + 1 for i, v in enumerate(mean_curve(curves)) if v is not None and v >= target), None
    )


def goals(runs: Mapping[str, Any], settings: Settings) -> dict[str, Any]:
    """The issue's three goals for every guided sampler, and the multi-fidelity figures."""
    t, n = settings.trials, settings.goal_trials
    base = runs[_THESIS]["curves"]["best_accuracy"]
    target = at(base, t)
    random_buckets = runs[_BUCKETS]["curves"]["best_accuracy"]
    accuracy: dict[str, Any] = {}
    for sampler in ("random", *GUIDED):
        curves = runs[f"accuracy/{sampler}/mlcn-buckets"]["curves"]["best_accuracy"]
        accuracy[sampler] = {
            "at_goal_trials": at(curves, n),
            "at_trials": at(curves, t),
            "reaches_baseline_best_at": reaches(curves, target["mean"]),
            "vs_baseline": paired(curves, base, t),
            "vs_random_same_space": paired(curves, random_buckets, t),
        }
    hv_random = runs[_PARETO_BUCKETS]["curves"]["hypervolume"]
    hv_thesis = runs["accuracy+latency/random/mlcn-thesis"]["curves"]["hypervolume"]
    hypervolume: dict[str, Any] = {"random/mlcn-thesis": {"at_trials": at(hv_thesis, t)}}
    for sampler in ("random", *GUIDED):
        curves = runs[f"accuracy+latency/{sampler}/mlcn-buckets"]["curves"]["hypervolume"]
        hypervolume[f"{sampler}/mlcn-buckets"] = {
            "at_trials": at(curves, t),
            "vs_random_same_space": paired(curves, hv_random, t),
            "vs_baseline": paired(curves, hv_thesis, t),
        }

    def mean_of(stat: Mapping[str, Any]) -> float:
        return stat["mean"] if stat["mean"] is not None else -math.inf

    best = max(GUIDED, key=lambda s: mean_of(accuracy[s]["at_trials"]))
    best_hv = max(GUIDED, key=lambda s: mean_of(hypervolume[f"{s}/mlcn-buckets"]["at_trials"]))
    reached = accuracy[best]["reaches_baseline_best_at"]
    ahead = accuracy[best]["vs_baseline"]
    hv_ahead = hypervolume[f"{best_hv}/mlcn-buckets"]["vs_random_same_space"]
    return {
        "target": target,
        "accuracy": accuracy,
        "hypervolume": hypervolume,
        "best_sampler": best,
        "best_hypervolume_sampler": best_hv,
        "reaches_within_goal_trials": {
            "goal": f"the best sampler ({best}) reaches random's (thesis space) mean "
            f"best-of-{t} within {n} trials",
            "holds": reached is not None and reached <= n,
        },
        "ahead_at_trials": {
            "goal": f"the best sampler ({best}) is ahead of random (thesis space) after {t} "
            "trials, outside the 95 % interval",
            "holds": ahead is not None and ahead["verdict"] == "ahead",
        },
        "hypervolume_ahead": {
            "goal": f"the best multi-objective sampler ({best_hv})'s hypervolume after {t} "
            "trials is above random's on the same space, outside the 95 % interval",
            "holds": hv_ahead is not None and hv_ahead["verdict"] == "ahead",
        },
        "multi_fidelity": multi_fidelity(runs),
    }


COMPUTE_BUDGETS = (0.25, 0.5, 1.0)
"""Budgets of "best accuracy within c seconds": fractions of the mean training compute
of random on mlcn-buckets over all its trials."""
MF_BUDGETS = (0.25, 0.5, 0.75, 1.0)
"""The multi-fidelity comparison's budgets: fractions of the full-length TPE run's
mean training compute for all its trials."""


def multi_fidelity(runs: Mapping[str, Any]) -> dict[str, Any]:
    """Successive halving vs the same sampler at full length: the best full-length
    accuracy within the same training compute, paired by seed."""
    plain = runs[_LONG_TPE]
    halving = runs[_LONG_TPE + "+halving"]

    def records(run: Mapping[str, Any]) -> list[list[TrialRecord]]:
        return [[TrialRecord(**t) for t in v["trials"]] for v in run["seeds"].values()]

    plain_r, halving_r = records(plain), records(halving)
    totals = [sum(r.compute for r in seed) for seed in plain_r]
    full = statistics.fmean(totals) if totals else 0.0
    out: dict[str, Any] = {"full_compute": full, "budgets": {}}
    for fraction in MF_BUDGETS:
        budget = fraction * full
        a = [best_within(seed, budget) for seed in halving_r]
        b = [best_within(seed, budget) for seed in plain_r]
        both = [(x, y) for x, y in zip(a, b, strict=True) if x is not None and y is not None]
        out["budgets"][f"{fraction:g}"] = {
            "seconds": budget,
            "halving": _stat([x for x in a if x is not None]),
            "plain": _stat([y for y in b if y is not None]),
            "halving_trials": trials_within(halving_r, budget),
            "plain_trials": trials_within(plain_r, budget),
            "difference": paired_values([x for x, _ in both], [y for _, y in both])
            if len(both) >= 2
            else None,
        }
    pruned = [sum(1 for r in seed if r.state == "PRUNED") for seed in halving_r]
    out["halving_pruned_per_seed"] = pruned
    return out


def trials_within(runs: Sequence[Sequence[TrialRecord]], budget: float) -> float | None:
    """Mean over seeds of the trials that ended within ``budget`` CPU seconds."""
    if not runs:
        return None
    return statistics.fmean(
        sum(1 for spent in compute_so_far(seed) if spent <= budget) for seed in runs
    )


def _stat(values: Sequence[float]) -> dict[str, Any]:
    return {
        "mean": statistics.fmean(values) if values else None,
        "sd": statistics.stdev(values) if len(values) > 1 else None,
        "runs": len(values),
        "values": list(values),
    }
