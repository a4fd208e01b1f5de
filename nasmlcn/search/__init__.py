"""The search (pure Python; the ``train`` evaluator imports torch when it runs).

Importing the package is cheap (the configuration only: the CLI builds its options
from it); the rest is imported when first used.

:func:`run_search` runs an Optuna study over a search space for target devices;
:class:`SearchConfig` describes one; :func:`retrain_study` trains a study's Pareto
front or best trials again and tests them (NASCaps' second stage). Registries:
``SAMPLERS``, ``PRUNERS``, ``OBJECTIVES``, ``EVALUATORS`` and ``SPACE_KINDS`` (in
:mod:`nasmlcn.search.spaces`).

Where things are, by concern (each a private subpackage):

- ``_config``: a search's description (``config``: :class:`SearchConfig`; ``setting``:
  a field's default, help and range; ``recipe``: study recipes and their sweeps);
- ``_prepare``: from a configuration to an open study (``setup``: everything checked up
  front; ``open_study``: create or load and check its identity, warm start included;
  ``warm``; ``entry``: what a library call adds around a run);
- ``_loop``: the run (``search``: :func:`run_search`, here or with workers;
  ``runner``: claim -> trial -> tell the observers; ``observer``, ``outcome``,
  ``samplers``, ``waits``);
- ``_trial``: one trial's life (``run``; ``repeats``: a model trained once;
  ``objectives``, and whether a trial learned);
- ``_evaluators``: how a candidate is scored (``evaluator``: the protocol; ``train``,
  ``proxy``);
- ``_pruners``: stopping weak trials (``pruners``: the registry; ``correlation``, the
  default, and ``halving``);
- ``_results``: after the search (``results``, ``retrain_plan`` and ``retrain``,
  ``export``);
- ``_workers``: many worker processes on one study (``pool``);
- ``spaces/``: the search spaces (public).

What a study stores, and its storage, is :mod:`nasmlcn.study`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nasmlcn._lazy import lazy_exports
from nasmlcn._storage_url import DEFAULT_STORAGE
from nasmlcn.search._config.config import IDENTITY_FIELDS, SearchConfig
from nasmlcn.search._config.recipe import load_recipe, load_search_recipe
from nasmlcn.search._evaluators import (
    proxy,
    train,
)

if TYPE_CHECKING:  # what the module __getattr__ below imports when first used
    from nasmlcn.search._config.recipe import expand_sweep
    from nasmlcn.search._evaluators.evaluator import (
        EVALUATORS,
        EpochCallback,
        EpochDecision,
        EpochReport,
        EvalRequest,
        Evaluation,
        Evaluator,
    )
    from nasmlcn.search._evaluators.proxy import ProxyEvaluator, proxy_accuracy
    from nasmlcn.search._loop.observer import SearchObserver
    from nasmlcn.search._loop.outcome import SearchResult, SearchStart, TrialOutcome
    from nasmlcn.search._loop.samplers import SAMPLERS
    from nasmlcn.search._loop.search import run_search
    from nasmlcn.search._prepare.entry import ProgressObserver, TrialProgress
    from nasmlcn.search._prepare.setup import SearchSetup, setup_search
    from nasmlcn.search._pruners.correlation import (
        CorrelationPruner,
        EpochCorrelation,
        FinishedTrial,
        epoch_correlations,
        final_correlations,
        first_epoch_reaching,
        retrained_correlations,
    )
    from nasmlcn.search._pruners.halving import HalvingPruner
    from nasmlcn.search._pruners.pruners import PRUNERS, EpochPruner
    from nasmlcn.search._results.export import ExportedTrial, export_best
    from nasmlcn.search._results.results import (
        CorrelationReport,
        TrialSummary,
        best_trials,
        completed_curves,
        correlation_report,
        describe_counts,
        is_feasible,
        not_learning,
        proposals,
        summarize,
    )
    from nasmlcn.search._results.retrain import (
        RetrainObserver,
        RetrainReport,
        retrain_study,
        retrained_caveats,
    )
    from nasmlcn.search._results.retrain_plan import RetrainOptions, RetrainTarget
    from nasmlcn.search._trial.objectives import OBJECTIVES, Objective
    from nasmlcn.search._trial.repeats import REPEATS_IN_A_ROW

_LAZY = {
    name: module
    for module, names in {
        "_config.recipe": ("expand_sweep",),
        "_evaluators.evaluator": (
            "EVALUATORS",
            "EpochCallback",
            "EpochReport",
            "EvalRequest",
            "Evaluation",
            "Evaluator",
            "EpochDecision",
        ),
        "_evaluators.proxy": ("ProxyEvaluator", "proxy_accuracy"),
        "_loop.observer": ("SearchObserver",),
        "_loop.outcome": ("SearchResult", "SearchStart", "TrialOutcome"),
        "_loop.search": ("run_search",),
        "_loop.samplers": ("SAMPLERS",),
        "_prepare.entry": ("ProgressObserver", "TrialProgress"),
        "_prepare.setup": ("SearchSetup", "setup_search"),
        "_pruners.correlation": (
            "CorrelationPruner",
            "EpochCorrelation",
            "FinishedTrial",
            "epoch_correlations",
            "final_correlations",
            "first_epoch_reaching",
            "retrained_correlations",
        ),
        "_pruners.halving": ("HalvingPruner",),
        "_pruners.pruners": ("PRUNERS", "EpochPruner"),
        "_results.export": ("ExportedTrial", "export_best"),
        "_results.results": (
            "CorrelationReport",
            "TrialSummary",
            "best_trials",
            "completed_curves",
            "correlation_report",
            "describe_counts",
            "is_feasible",
            "not_learning",
            "proposals",
            "summarize",
        ),
        "_results.retrain": (
            "RetrainObserver",
            "RetrainReport",
            "retrain_study",
            "retrained_caveats",
        ),
        "_results.retrain_plan": ("RetrainOptions", "RetrainTarget"),
        "_trial.objectives": ("OBJECTIVES", "Objective"),
        "_trial.repeats": ("REPEATS_IN_A_ROW",),
    }.items()
    for name in names
}

__all__ = sorted(
    ["DEFAULT_STORAGE", "IDENTITY_FIELDS", "SearchConfig", "load_search_recipe", *_LAZY]
)

__getattr__ = lazy_exports(__name__, _LAZY)
