"""The search (pure Python; the ``train`` evaluator imports torch when it runs).

Importing the package is cheap (the configuration only: the CLI builds its options
from it); the rest is imported when first used.

:func:`run_search` runs an Optuna study over a search space for target devices;
:class:`SearchConfig` describes one; :func:`retrain_study` trains a study's Pareto
front or best trials again and tests them (NASCaps' second stage). Registries:
``SAMPLERS``, ``PRUNERS``, ``OBJECTIVES``, ``EVALUATORS`` and ``SPACE_KINDS`` (in
:mod:`nasmlcn.search.spaces`).

Where things are: defining a search (``_config`` and ``_setting``: the fields and
their options, ``_recipe``, ``_setup``, ``_sweep``,
``_objectives``, ``_samplers``, ``spaces/``); running it (``_runner``: the loop,
``_trial_run``: one trial's life, ``_open``: opening and checking the study,
``_observer``, ``_outcome``, ``_signals``, ``_failure``, ``_pruners``: the pruners
(``_correlation``, the default, and ``_halving``: successive halving),
``_learning``, ``_entry``, ``_pool``: many workers, ``_waits``; the evaluators ``_evaluator``,
``_proxy``, ``_train_evaluator``); after the search (``_results``, ``_retrain_plan``
and ``_retrain``, ``_export``). What a study stores, and its storage, is :mod:`nasmlcn.study`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nasmlcn._lazy import lazy_exports
from nasmlcn._storage_url import DEFAULT_STORAGE
from nasmlcn.search import (
    _proxy,  # noqa: F401  (register the proxy evaluator)
    _train_evaluator,  # noqa: F401  (register the train evaluator)
)
from nasmlcn.search._config import IDENTITY_FIELDS, SearchConfig
from nasmlcn.search._recipe import load_recipe

if TYPE_CHECKING:  # what the module __getattr__ below imports when first used
    from nasmlcn.search._correlation import (
        CorrelationPruner,
        EpochCorrelation,
        FinishedTrial,
        epoch_correlations,
        final_correlations,
        first_epoch_reaching,
        retrained_correlations,
    )
    from nasmlcn.search._entry import ProgressObserver, TrialProgress
    from nasmlcn.search._evaluator import (
        EVALUATORS,
        EpochCallback,
        EpochReport,
        EvalRequest,
        Evaluation,
        Evaluator,
        PruneTrial,
    )
    from nasmlcn.search._export import ExportedTrial, export_best
    from nasmlcn.search._halving import HalvingPruner
    from nasmlcn.search._objectives import OBJECTIVES, Objective
    from nasmlcn.search._observer import SearchObserver
    from nasmlcn.search._outcome import SearchResult, SearchStart, TrialOutcome
    from nasmlcn.search._pool import run_workers
    from nasmlcn.search._proxy import ProxyEvaluator, proxy_accuracy
    from nasmlcn.search._pruners import PRUNERS, EpochPruner
    from nasmlcn.search._repeats import REPEATS_IN_A_ROW
    from nasmlcn.search._results import (
        CorrelationReport,
        TrialSummary,
        best_trials,
        completed_curves,
        correlation_report,
        describe_counts,
        is_feasible,
        proposals,
        summarize,
    )
    from nasmlcn.search._retrain import (
        RetrainObserver,
        RetrainReport,
        retrain_study,
        retrained_caveats,
    )
    from nasmlcn.search._retrain_plan import RetrainOptions, RetrainTarget
    from nasmlcn.search._runner import run_search
    from nasmlcn.search._samplers import SAMPLERS
    from nasmlcn.search._setup import SearchSetup, setup_search
    from nasmlcn.search._sweep import expand_sweep

__all__ = [
    "DEFAULT_STORAGE",
    "EVALUATORS",
    "IDENTITY_FIELDS",
    "OBJECTIVES",
    "PRUNERS",
    "REPEATS_IN_A_ROW",
    "SAMPLERS",
    "CorrelationPruner",
    "CorrelationReport",
    "EpochCallback",
    "EpochCorrelation",
    "EpochPruner",
    "EpochReport",
    "EvalRequest",
    "Evaluation",
    "Evaluator",
    "ExportedTrial",
    "FinishedTrial",
    "HalvingPruner",
    "Objective",
    "ProgressObserver",
    "ProxyEvaluator",
    "PruneTrial",
    "RetrainObserver",
    "RetrainOptions",
    "RetrainReport",
    "RetrainTarget",
    "SearchConfig",
    "SearchObserver",
    "SearchResult",
    "SearchSetup",
    "SearchStart",
    "TrialOutcome",
    "TrialProgress",
    "TrialSummary",
    "best_trials",
    "completed_curves",
    "correlation_report",
    "describe_counts",
    "epoch_correlations",
    "expand_sweep",
    "export_best",
    "final_correlations",
    "first_epoch_reaching",
    "is_feasible",
    "load_recipe",
    "proposals",
    "proxy_accuracy",
    "retrain_study",
    "retrained_caveats",
    "retrained_correlations",
    "run_search",
    "run_workers",
    "setup_search",
    "summarize",
]

_LAZY = {
    "REPEATS_IN_A_ROW": "_repeats",
    "CorrelationPruner": "_correlation",
    "EpochCorrelation": "_correlation",
    "FinishedTrial": "_correlation",
    "epoch_correlations": "_correlation",
    "final_correlations": "_correlation",
    "first_epoch_reaching": "_correlation",
    "retrained_correlations": "_correlation",
    "ProgressObserver": "_entry",
    "TrialProgress": "_entry",
    "EVALUATORS": "_evaluator",
    "EpochCallback": "_evaluator",
    "EpochReport": "_evaluator",
    "EvalRequest": "_evaluator",
    "Evaluation": "_evaluator",
    "Evaluator": "_evaluator",
    "PruneTrial": "_evaluator",
    "ExportedTrial": "_export",
    "export_best": "_export",
    "HalvingPruner": "_halving",
    "OBJECTIVES": "_objectives",
    "Objective": "_objectives",
    "SearchObserver": "_observer",
    "SearchResult": "_outcome",
    "SearchStart": "_outcome",
    "TrialOutcome": "_outcome",
    "run_workers": "_pool",
    "ProxyEvaluator": "_proxy",
    "proxy_accuracy": "_proxy",
    "EpochPruner": "_pruners",
    "PRUNERS": "_pruners",
    "CorrelationReport": "_results",
    "TrialSummary": "_results",
    "best_trials": "_results",
    "completed_curves": "_results",
    "correlation_report": "_results",
    "describe_counts": "_results",
    "is_feasible": "_results",
    "proposals": "_results",
    "summarize": "_results",
    "RetrainObserver": "_retrain",
    "RetrainOptions": "_retrain_plan",
    "RetrainReport": "_retrain",
    "RetrainTarget": "_retrain_plan",
    "retrain_study": "_retrain",
    "retrained_caveats": "_retrain",
    "run_search": "_runner",
    "SAMPLERS": "_samplers",
    "SearchSetup": "_setup",
    "setup_search": "_setup",
    "expand_sweep": "_sweep",
}


__getattr__ = lazy_exports(__name__, _LAZY)
