"""The engine output of a search recipe: what its studies hold, as JSON.

``nasmlcn reproduce`` runs a search recipe with ``nasmlcn search --config`` into an
SQLite file in the run folder (a sweep makes one study per value), then reads every
study back into one table, so that a recipe's ``ours`` paths address it like any
engine's output::

    studies."thesis-fig6.2-flops-4x".mean        # average accuracy of its trials
    studies."thesis-fig6.2-flops-4x".best
    studies."thesis-fig6.5".best_so_far.7        # best after 8 trials
    studies."nascaps-pareto".pareto_size
    studies."nascaps-pareto".front_max.energy_mJ    # over the feasible Pareto front
    studies."nascaps-pareto".front_best.energy_mJ   # its most accurate member
    studies."nascaps-table2".correlation[epoch=3].pearson
    max(studies.*.best)

Accuracy is the first objective (a fraction); only feasible completed trials
count, in the order they were started.
"""

from __future__ import annotations

import statistics
from typing import Any


def summarize_storage(url: str) -> dict[str, Any]:
    """Per study in the storage ``url``: trial count, first objective's values in
    trial order, their mean, best and best-so-far, and (several objectives) the
    Pareto front."""
    import optuna
    from optuna.trial import TrialState

    from nasmlcn.search import best_trials, completed_curves, epoch_correlations, is_feasible
    from nasmlcn.study import open_storage

    storage = open_storage(url, read_only=True, heartbeat=False)
    studies: dict[str, Any] = {}
    for info in optuna.get_all_study_summaries(storage, include_best_trial=False):
        study = optuna.load_study(study_name=info.study_name, storage=storage)
        trials = [
            t
            for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
            if t.values is not None and is_feasible(t)
        ]
        trials.sort(key=lambda t: t.number)
        values = [float(t.values[0]) for t in trials]
        best_so_far: list[float] = []
        for v in values:
            best_so_far.append(max(v, best_so_far[-1]) if best_so_far else v)
        entry: dict[str, Any] = {
            "trials": len(values),
            "values": values,
            "mean": statistics.fmean(values) if values else None,
            "best": max(values) if values else None,
            "worst": min(values) if values else None,
            "best_so_far": best_so_far,
            "objectives": list(study.metric_names or []),
            "all_trials": len(study.get_trials(deepcopy=False)),
            # NASCaps Table 2: per epoch, accuracy then vs at the last epoch
            "correlation": [c.to_dict() for c in epoch_correlations(completed_curves(study))],
        }
        if len(study.directions) > 1:
            front = best_trials(study)  # the front as every answer gives it: each model once
            names = list(
                study.metric_names or [f"objective{i}" for i in range(len(study.directions))]
            )
            entry["pareto_size"] = len(front)
            entry["pareto"] = [
                dict(zip(names, t.values, strict=True))
                for t in sorted(front, key=lambda t: t.number)
            ]
            if front:
                best = max(front, key=lambda t: (t.values[0], -t.number))
                entry["front_best"] = dict(zip(names, best.values, strict=True))
                entry["front_min"] = {
                    n: min(t.values[i] for t in front) for i, n in enumerate(names)
                }
                entry["front_max"] = {
                    n: max(t.values[i] for t in front) for i, n in enumerate(names)
                }
        studies[info.study_name] = entry
    return {"studies": studies}
