"""``run_search``: the one verb that runs a search, in this process or with worker
processes on one study (``--workers``, ``--gpus-per-trial``, ``--workers-per-gpu``).

With workers, each observer says what of it watches here and what each worker
attaches (:meth:`~nasmlcn.search.SearchObserver.for_workers`): the dashboard writes
each trial's note in the worker that ran it and the figures once, here; an MLflow
tracker opens the study's parent run here and logs each trial from its worker.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from nasmlcn.errors import SearchError
from nasmlcn.search._config import SearchConfig
from nasmlcn.search._run.loop import run_in_process
from nasmlcn.search._run.observer import SearchObserver, SearchResult
from nasmlcn.search._run.pool import run_workers
from nasmlcn.search.evaluators._base import Evaluator


def run_search(
    config: SearchConfig,
    observers: Sequence[SearchObserver] = (),
    *,
    workers: int = 1,
    gpus_per_trial: int | None = None,
    workers_per_gpu: int | None = None,
    evaluator: Evaluator | None = None,
) -> SearchResult:
    """Runs (or continues) the search of ``config``.

    Writes nothing but the study in ``config.storage`` (and its trials' weights
    beside it), prints nothing, and keeps Optuna's log lines quiet for the call.

    Args:
        config: The search (``config.storage`` must name the study storage;
            ``config.mlflow`` asks for a tracker among ``observers``).
        observers: What watches the run: a live display, a
            :class:`ProgressObserver` (a callback after every trial),
            ``nasmlcn.dashboard.DashboardObserver`` (the dashboard's trial notes and
            figures), ``nasmlcn.tracking.MlflowObserver(config.mlflow)``.
        workers: Worker processes on this machine sharing the study (1: this
            process runs the trials; on GPUs, 1 means as many as the GPUs take).
        gpus_per_trial: Give each worker its own this many GPUs.
        workers_per_gpu: Put this many workers on each GPU, one GPU per trial.
        evaluator: Overrides the configured evaluator (tests; in this process only).

    Returns:
        What this run did and the study's best trials (or Pareto front).

    Raises:
        NasmlcnError: Invalid configuration or storage, no storage named, a
            tracker asked for and not given, or one that cannot start (before
            anything is written); with workers, also a bad device request or
            every worker failing.
    """
    _check_arguments(config, observers, workers, evaluator)
    on_gpus = gpus_per_trial is not None or workers_per_gpu is not None
    if workers == 1 and not on_gpus:
        return run_in_process(config, observers, evaluator=evaluator)
    here: list[SearchObserver] = []
    made: list[Callable[[], SearchObserver]] = []
    for observer in observers:
        watcher, factory = observer.for_workers()
        here += [watcher] if watcher is not None else []
        made += [factory] if factory is not None else []
    return run_workers(
        config,
        here,
        workers=None if on_gpus and workers == 1 else workers,
        gpus_per_trial=gpus_per_trial,
        workers_per_gpu=workers_per_gpu,
        worker_observers=made,
    )


EVALUATOR_MEMBERS = ("name", "measured", "checkpoints", "evaluate")
"""What an evaluator given to :func:`run_search` must have (the ``Evaluator`` protocol)."""


def _check_evaluator(evaluator: Any) -> None:
    """An evaluator object has every member of the protocol, read by the search.

    Raises:
        SearchError: Naming the members it lacks.
    """
    missing = [m for m in EVALUATOR_MEMBERS if not hasattr(evaluator, m)]
    if "evaluate" not in missing and not callable(evaluator.evaluate):
        missing.append("evaluate")
    if missing:
        raise SearchError(
            f"evaluator must be an Evaluator (name, measured, checkpoints and evaluate()), "
            f"got {evaluator!r}, which lacks {', '.join(missing)}; to choose one by name, set "
            "SearchConfig(evaluator=...)"
        )


def _check_arguments(config: Any, observers: Any, workers: Any, evaluator: Any) -> None:
    """Arguments of the wrong kind, refused before anything is written (an evaluator
    name filled a study with failed trials)."""
    if not isinstance(config, SearchConfig):
        raise SearchError(f"run_search needs a SearchConfig, got {type(config).__name__}")
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise SearchError(f"workers must be an integer >= 1, got {workers!r}")
    if evaluator is not None:
        _check_evaluator(evaluator)
    if not isinstance(observers, Sequence) or isinstance(observers, str):
        raise SearchError(f"observers must be a sequence of SearchObserver, got {observers!r}")
