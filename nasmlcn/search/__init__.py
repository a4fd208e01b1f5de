"""The search (pure Python; the ``train`` evaluator imports torch when it runs).

Importing the package loads the configuration, the registries and the built-in
evaluators, which register themselves (about 100 modules of nasmlcn, 0.2 s; neither
torch nor Optuna): the CLI builds its options and their choices from them. The rest
is imported when first used.

:func:`run_search` runs an Optuna study over a search space for target devices;
:class:`SearchConfig` describes one; :func:`retrain_study` trains a study's Pareto
front or best trials again and tests them (NASCaps' second stage). Registries:
``SAMPLERS``, ``PRUNERS``, ``OBJECTIVES``, ``EVALUATORS`` and ``SPACE_KINDS`` (in
:mod:`nasmlcn.search.spaces`).

Where things are, in floors (each imports only from its own floor or those below,
type-only imports included; ``tests/test_imports.py`` holds it so), bottom first:

1. ``spaces/``: the search spaces (public);
2. ``_config``: what a search is (``config``: :class:`SearchConfig`; ``setting``: a
   field's default, help and range; ``limits``: when a run stops asking);
3. ``_types``: the types the parts share (``setup``: :class:`SearchSetup`;
   ``evaluation``: what an evaluator takes and gives, and its protocol; ``objective``;
   ``pruner``: the pruner's protocol; ``observer``; ``outcome``); ``_pruners``: the
   pruning rules (``correlation``, the default, and ``halving``);
4. ``_registries``: ``SAMPLERS``, ``EVALUATORS``, ``OBJECTIVES``, ``PRUNERS``, side by side;
5. ``_evaluators``: real training (``train``) and the analytic stand-in (``proxy``);
   ``_results.summary``: the study's answer (best trials, the front, summaries);
6. ``_trial``: one trial, claim to tell (``run``; ``repeats``: a model trained once;
   ``context``: what its trials share; ``pruning``: the pruner's view of the trial; ``waits``);
7. ``_prepare``: from a configuration to an open study (``setup``: everything checked
   up front; ``recipe``; ``open_study`` and ``warm``; ``progress``: a callback after every
   trial; ``stored``: a study's own configuration, to continue it by name; ``guards``: what a library call checks and quiets before a run);
8. ``_loop``: the run (``runner``: propose, run a trial, tell the observers);
9. ``_workers``: many worker processes on one study (``pool``; ``shares``: each
   worker's GPUs and threads); ``_results``: after the search (``export``);
   ``_retrain``: the chosen trials trained again (``plan``, ``run``);
10. ``_run``: :func:`run_search`, here or with workers; this package's face.

What a study stores, and its storage, is :mod:`nasmlcn.study`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nasmlcn._lazy import face
from nasmlcn._storage_url import DEFAULT_STORAGE
from nasmlcn.search import _registries
from nasmlcn.search._config.config import IDENTITY_FIELDS, SearchConfig
from nasmlcn.search._evaluators import proxy as _proxy
from nasmlcn.search._evaluators import train as _train
from nasmlcn.search._prepare.recipe import load_recipe, load_search_recipe

if TYPE_CHECKING:  # what the module __getattr__ below imports when first used
    from nasmlcn.search._config.limits import FALLBACK_AFTER, REPEATS_IN_A_ROW
    from nasmlcn.search._evaluators.proxy import ProxyEvaluator, proxy_accuracy
    from nasmlcn.search._evaluators.train import TrainEvaluator
    from nasmlcn.search._prepare.progress import ProgressObserver, TrialProgress
    from nasmlcn.search._prepare.recipe import expand_sweep
    from nasmlcn.search._prepare.setup import setup_search
    from nasmlcn.search._prepare.stored import (
        defaults_taken,
        refuse_undefined_study,
        stored_config,
    )
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
    from nasmlcn.search._registries.evaluators import EVALUATORS
    from nasmlcn.search._registries.objectives import OBJECTIVES
    from nasmlcn.search._registries.pruners import PRUNERS
    from nasmlcn.search._registries.samplers import SAMPLERS
    from nasmlcn.search._results.export import ExportedTrial, export_best
    from nasmlcn.search._results.summary import (
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
    from nasmlcn.search._retrain.plan import RetrainOptions, RetrainTarget, parse_seeds
    from nasmlcn.search._retrain.run import (
        RetrainObserver,
        RetrainReport,
        retrain_study,
        retrained_caveats,
    )
    from nasmlcn.search._run import run_search
    from nasmlcn.search._types.evaluation import (
        EpochCallback,
        EpochDecision,
        EpochReport,
        EvalRequest,
        Evaluation,
        Evaluator,
    )
    from nasmlcn.search._types.objective import Objective
    from nasmlcn.search._types.observer import SearchObserver
    from nasmlcn.search._types.outcome import SearchResult, SearchStart, TrialOutcome
    from nasmlcn.search._types.pruner import EpochPruner
    from nasmlcn.search._types.setup import SearchSetup

__getattr__, __all__ = face(__name__, hidden=("load_recipe",))
