"""The search (pure Python; the ``train`` evaluator imports torch when it runs).

Importing the package loads the configuration and the four plug-in families, whose
built-ins register themselves where they are defined (about 100 modules of nasmlcn,
0.2 s; neither torch nor Optuna): the CLI builds its options and their choices from
them. The rest is imported when first used.

:func:`run_search` runs an Optuna study over a search space for target devices;
:class:`SearchConfig` describes one; :func:`retrain_study` trains a study's Pareto
front or best trials again and tests them (NASCaps' second stage). Registries:
``SAMPLERS``, ``PRUNERS``, ``OBJECTIVES``, ``EVALUATORS`` and ``SPACE_KINDS`` (in
:mod:`nasmlcn.search.spaces`).

A plug-in family is one folder (``samplers/``, ``evaluators/``, ``pruners/``,
``objectives/``): its protocol or types and its registry in ``_base``, its
implementations beside it, each registered by a decorator where it is defined
(``@register_sampler``, ``@register_evaluator``, ``@register_pruner``,
``@register_objective``); its ``__init__`` imports them by name.

Where things are, in floors (each imports only from its own floor or those below,
type-only imports included; ``tests/test_imports.py`` holds it so), bottom first:

1. ``spaces/``: the search spaces (public);
2. ``_config``: what a search is (:class:`SearchConfig`, its fields' settings, the
   limits of a run);
3. the plug-in families: ``samplers/``, ``evaluators/`` (``train`` and ``proxy``),
   ``pruners/`` (``correlation``, the default, and ``halving``), ``objectives/``;
4. ``_prepare.setup``: everything checked up front (:class:`SearchSetup`);
   ``_results.summary``: the study's answer (best trials, the front, summaries);
5. ``_run.observer``: what a run tells its caller (outcomes, result) and who listens
   (the observer protocol, the progress callback);
6. one trial, claim to tell: ``_run.trial`` (with what a run's trials share),
   ``_run.repeats`` (a model trained once; how a worker waits), ``_run.pruning`` (the
   pruner's view of the trial), ``_run.replicate``;
7. ``_prepare``: from a configuration to an open study (``recipe``: study recipes and a
   study's own configuration, to continue it by name; ``open_study``, with what a library
   call checks and quiets before a run, and ``warm``; ``forecast``);
8. ``_run.loop``: the run (propose, run a trial, tell the observers);
9. ``_run.pool`` and ``_run.shares``: many worker processes on one study, Ctrl-C and
   SIGTERM across them, each worker's GPUs and threads; ``_results``: after the search
   (``export``; ``retrain_plan`` and ``retrain``: the chosen trials trained again);
10. ``_run.search``: :func:`run_search`, here or with workers; this package's face.

What a study stores, and its storage, is :mod:`nasmlcn.study`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nasmlcn._lazy import face
from nasmlcn._storage_url import DEFAULT_STORAGE
from nasmlcn.search._config import IDENTITY_FIELDS, SearchConfig
from nasmlcn.search._prepare.recipe import load_recipe, load_search_recipe
from nasmlcn.search.evaluators import EVALUATORS
from nasmlcn.search.objectives import OBJECTIVES
from nasmlcn.search.pruners import PRUNERS
from nasmlcn.search.samplers import SAMPLERS

if TYPE_CHECKING:  # what the module __getattr__ below imports when first used
    from nasmlcn.search._config import FALLBACK_AFTER, REPEATS_IN_A_ROW
    from nasmlcn.search._prepare.recipe import (
        defaults_taken,
        expand_sweep,
        refuse_undefined_study,
        stored_config,
    )
    from nasmlcn.search._prepare.setup import SearchSetup, setup_search
    from nasmlcn.search._results.export import ExportedTrial, export_best
    from nasmlcn.search._results.retrain import (
        RetrainObserver,
        RetrainReport,
        retrain_study,
        retrained_caveats,
    )
    from nasmlcn.search._results.retrain_plan import RetrainOptions, RetrainTarget, parse_seeds
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
    from nasmlcn.search._run.observer import (
        ProgressObserver,
        SearchObserver,
        SearchResult,
        SearchStart,
        TrialOutcome,
        TrialProgress,
    )
    from nasmlcn.search._run.search import run_search
    from nasmlcn.search.evaluators._base import (
        EpochCallback,
        EpochDecision,
        EpochReport,
        EvalRequest,
        Evaluation,
        Evaluator,
    )
    from nasmlcn.search.evaluators._proxy import ProxyEvaluator, proxy_accuracy
    from nasmlcn.search.evaluators._train import TrainEvaluator
    from nasmlcn.search.objectives._base import Objective
    from nasmlcn.search.pruners._base import EpochCorrelation, EpochPruner, FinishedTrial
    from nasmlcn.search.pruners._correlation import (
        CorrelationPruner,
        epoch_correlations,
        final_correlations,
        first_epoch_reaching,
        retrained_correlations,
    )
    from nasmlcn.search.pruners._halving import HalvingPruner

__getattr__, __all__ = face(__name__, hidden=("load_recipe",))
