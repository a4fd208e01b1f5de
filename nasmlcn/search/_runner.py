"""The study runner: ask -> build -> plan -> evaluate -> tell, trial after trial.

A thin loop over Optuna's ask-and-tell interface that adds what a hardware-aware
NAS needs: every trial's model is built by the search space for the target
devices, planned (placement, predicted latency and memory), constrained
(``trial.set_constraint``), evaluated with per-epoch reporting and
correlation-gated pruning (for multi-objective studies too), and recorded
(architecture, placement, measured figures) as user attributes. Failures of any
kind are recorded on the trial and the search goes on; Ctrl-C fails the running
trial cleanly and stops.
"""

from __future__ import annotations

import functools
import logging
import math
import platform
import signal
import tempfile
import threading
import time
import traceback
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import nasmlcn
from nasmlcn._storage_url import redact_url
from nasmlcn.costs import INFERENCE_BATCH_SIZE
from nasmlcn.errors import DivergedError, SearchError, TrainingError
from nasmlcn.planning import Plan, plan_model
from nasmlcn.search._artifacts import TrialFiles, artifacts_dir, open_store, prune_weights
from nasmlcn.search._claim import claim, finished
from nasmlcn.search._config import SearchConfig
from nasmlcn.search._correlation import CorrelationPruner
from nasmlcn.search._evaluator import (
    EVALUATORS,
    EpochReport,
    EvalJob,
    Evaluation,
    Evaluator,
    PruneTrial,
)
from nasmlcn.search._heartbeat import heartbeat
from nasmlcn.search._learning import (
    LEARNING_CONSTRAINT,
    learning_constraint,
    learning_threshold,
)
from nasmlcn.search._lock import hold
from nasmlcn.search._optuna_compat import storage_of, trial_id_of
from nasmlcn.search._recovery import retry
from nasmlcn.search._results import (
    best_trials,
    correlation_report,
    finished_for_pruning,
    not_learning,
    summarize,
    trial_counts,
)
from nasmlcn.search._samplers import SAMPLERS
from nasmlcn.search._setup import SearchSetup, setup_search
from nasmlcn.search._storage import open_storage
from nasmlcn.search.spaces import Candidate
from nasmlcn.search.spaces._base import space_changes
from nasmlcn.specs import format_lane_mix
from nasmlcn.training._callbacks import TrainingStopped

if TYPE_CHECKING:
    import optuna

    from nasmlcn.search._entry import TrialProgress

logger = logging.getLogger(__name__)

STUDY_ATTR = "nasmlcn"


@dataclass(frozen=True)
class TrialOutcome:
    """How one trial ended.

    Attributes:
        number: Trial number.
        state: ``COMPLETE``, ``PRUNED`` or ``FAIL``.
        values: Objective values (COMPLETE only).
        lanes: The model's lanes in the compact syntax.
        reason: Why it was pruned or failed.
        seconds: Wall time of the trial.
        seconds_saved: Training time pruning saved (estimated from its epochs).
        timings: Seconds per phase: ``ask`` (sampling), ``build`` (space and
            plan), ``record`` (attributes and constraints), ``evaluate``, ``tell``.
        retry_of: The failed trial this one runs again (its parameters and, for
            the train evaluator, its last checkpoint); None for a new trial.
        queued_again_as: For a FAIL queued again (Ctrl-C, SIGTERM, the search's
            ``--timeout``), the number of its WAITING copy, which the next run
            takes; None otherwise. A FAIL never counts toward ``--trials``.
    """

    number: int
    state: str
    values: tuple[float, ...] | None
    lanes: str
    reason: str | None
    seconds: float
    seconds_saved: float = 0.0
    timings: dict[str, float] = field(default_factory=dict, compare=False)
    retry_of: int | None = None
    queued_again_as: int | None = None


@dataclass(frozen=True)
class SearchStart:
    """Sent once before the first trial of a run."""

    study: str
    storage: str
    resumed: bool
    done: int
    target: int
    epochs: int
    evaluator: str
    sampler: str
    directions: tuple[str, ...]
    metric_names: tuple[str, ...]


class SearchObserver:
    """Hooks into a search (the CLI's live display and the dashboard's notes are
    observers the CLI attaches); all no-ops here. An observer that raises stops
    nothing: the runner logs it and goes on."""

    def on_study(self, study: optuna.Study) -> None:
        """The study, once it is created or loaded (before ``on_start``)."""

    def on_start(self, start: SearchStart) -> None:
        pass

    def on_trial_start(self, number: int, index: int, lanes: str, plan: Plan) -> None:
        pass

    def on_epoch(self, number: int, report: EpochReport, epochs: int) -> None:
        pass

    def on_trial_end(self, outcome: TrialOutcome) -> None:
        pass

    def on_end(self, result: SearchResult) -> None:
        """After the last trial of this run (also after Ctrl-C or a time limit)."""


class Observers(SearchObserver):
    """Several observers as one; an observer that fails is logged and skipped
    (the search never stops for a display or a note)."""

    def __init__(self, observers: Sequence[SearchObserver]) -> None:
        self.observers = list(observers)

    def _each(self, hook: str, *args: Any) -> None:
        for observer in self.observers:
            try:
                getattr(observer, hook)(*args)
            except KeyboardInterrupt:
                raise
            except Exception:
                logger.warning(
                    "observer %s failed in %s", type(observer).__name__, hook, exc_info=True
                )

    def on_study(self, study: optuna.Study) -> None:
        self._each("on_study", study)

    def on_start(self, start: SearchStart) -> None:
        self._each("on_start", start)

    def on_trial_start(self, number: int, index: int, lanes: str, plan: Plan) -> None:
        self._each("on_trial_start", number, index, lanes, plan)

    def on_epoch(self, number: int, report: EpochReport, epochs: int) -> None:
        # not guarded: an epoch callback may stop the trial on purpose
        for observer in self.observers:
            observer.on_epoch(number, report, epochs)

    def on_trial_end(self, outcome: TrialOutcome) -> None:
        self._each("on_trial_end", outcome)

    def on_end(self, result: SearchResult) -> None:
        self._each("on_end", result)


@dataclass
class SearchResult:
    """The outcome of one ``run_search`` (a run may continue an existing study)."""

    study: str
    storage: str
    n_trials: int
    run_trials: list[TrialOutcome] = field(default_factory=list)
    best: list[dict[str, Any]] = field(default_factory=list)
    stopped: str = "trials"
    seconds: float = 0.0
    metric_names: list[str] = field(default_factory=list)
    directions: list[str] = field(default_factory=list)
    mean_values: dict[str, float] = field(default_factory=dict)
    completed: int = 0
    # completed trials that did not beat chance by a clear margin (kept in the
    # study, never on the front): their numbers and accuracies
    not_learning: list[dict[str, Any]] = field(default_factory=list)
    # the accuracy a trial had to reach to count as learning (0.19 for 10 classes)
    learning_threshold: float | None = None
    # per epoch: EpochCorrelation.to_dict() over the study's completed trials, and
    # "prunes": whether this run's pruner may stop a trial at that epoch now
    correlation: list[dict[str, Any]] = field(default_factory=list)
    # --workers: each worker's GPUs, threads and why it stopped; what went wrong
    workers: list[dict[str, Any]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    # the study's trials by how they ended (nasmlcn.search._results.trial_counts):
    # only complete and pruned ones count toward --trials
    trial_counts: dict[str, int] = field(default_factory=dict)

    @property
    def failures(self) -> list[TrialOutcome]:
        return [t for t in self.run_trials if t.state == "FAIL"]

    @property
    def pruned(self) -> list[TrialOutcome]:
        return [t for t in self.run_trials if t.state == "PRUNED"]

    def to_dict(self) -> dict[str, Any]:
        return {
            "study": self.study,
            "storage": self.storage,
            "n_trials": self.n_trials,
            "run_trials": len(self.run_trials),
            "stopped": self.stopped,
            "seconds": self.seconds,
            "metric_names": self.metric_names,
            "directions": self.directions,
            "completed": self.completed,
            "not_learning": self.not_learning,
            "learning_threshold": self.learning_threshold,
            "mean_values": self.mean_values,
            "best": self.best,
            "failures": [{"number": t.number, "reason": t.reason} for t in self.failures],
            "pruned": [
                {"number": t.number, "reason": t.reason, "seconds_saved": t.seconds_saved}
                for t in self.pruned
            ],
            "seconds_saved_by_pruning": sum(t.seconds_saved for t in self.pruned),
            "correlation": self.correlation,
            "workers": self.workers,
            "errors": self.errors,
            "trial_counts": self.trial_counts,
        }


@functools.lru_cache(maxsize=1)
def versions() -> dict[str, str]:
    """Versions worth keeping with every result."""
    import optuna

    out = {
        "nasmlcn": nasmlcn.__version__,
        "optuna": optuna.__version__,
        "python": platform.python_version(),
    }
    try:
        import importlib.metadata

        out["torch"] = importlib.metadata.version("torch")
    except Exception:  # pragma: no cover - torch missing
        pass
    return out


def open_study(
    setup: SearchSetup, storage: optuna.storages.BaseStorage, sampler: Any
) -> tuple[optuna.Study, bool]:
    """Creates the study, or loads it after checking it was made with this identity.

    Raises:
        SearchError: The name exists with another configuration (naming the
            fields that differ) or was not made by nasmlcn.
    """
    import optuna
    from optuna.study import StudyDirection

    config = setup.config
    name = config.study_name()
    existing = {s.study_name: s for s in storage.get_all_studies()}
    if name in existing:
        stored = existing[name].user_attrs.get(STUDY_ATTR)
        if not isinstance(stored, dict) or "identity" not in stored:
            raise SearchError(
                f"study {name!r} exists but was not made by nasmlcn search; choose another --study"
            )
        differing = [
            f"{key} {stored['identity'].get(key)!r} (now {value!r})"
            for key, value in config.identity().items()
            if stored["identity"].get(key) != value
        ]
        if differing:
            raise SearchError(
                f"study {name!r} was made with another configuration: "
                + "; ".join(differing)
                + ". Use the same options to continue it, or another --study"
            )
        # The space file's content is part of the identity: an edited range would
        # mix two spaces in one study (or break the sampler on a changed choice).
        changed = space_changes(stored.get("space"), setup.space.describe())
        if changed:
            raise SearchError(
                f"study {name!r} was made with another search space: "
                + ", ".join(changed)
                + f". Restore {setup.space.source!r} to continue it, or use another --study"
            )
        study = optuna.load_study(study_name=name, storage=storage, sampler=sampler)
        _redact_stored_url(study, stored)
        return study, True
    study = optuna.create_study(
        study_name=name,
        storage=storage,
        sampler=sampler,
        directions=[
            StudyDirection.MAXIMIZE if d == "maximize" else StudyDirection.MINIMIZE
            for d in setup.directions
        ],
    )
    study.set_metric_names(setup.metric_names)
    study.set_user_attr(
        STUDY_ATTR,
        {
            "identity": config.identity(),
            "config": config.to_dict(),
            "objectives": list(config.objectives),
            "metric_names": setup.metric_names,
            "evaluator": config.evaluator,
            "accuracy_is_proxy": not getattr(EVALUATORS.get(config.evaluator), "measured", True),
            "space": setup.space.describe(),
            "devices": [d.to_dict() for d in setup.devices],
            "cost_model": setup.cost_model.name,
            "time_unit": setup.cost_model.time_unit,
            "versions": versions(),
            "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        },
    )
    return study, False


def _redact_stored_url(study: optuna.Study, stored: dict[str, Any]) -> None:
    """Hides the password of a storage URL that a study made before nasmlcn hid
    them kept in its stored config; continuing the study cleans it."""
    config = stored.get("config")
    url = config.get("storage") if isinstance(config, dict) else None
    if isinstance(config, dict) and isinstance(url, str) and redact_url(url) != url:
        study.set_user_attr(
            STUDY_ATTR, {**stored, "config": {**config, "storage": redact_url(url)}}
        )


@contextmanager
def _no_interrupts() -> Iterator[None]:
    """Ignores Ctrl-C and SIGTERM while the interrupted trial is written down."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {s: signal.signal(s, signal.SIG_IGN) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


class Terminated(KeyboardInterrupt):
    """SIGTERM (a batch scheduler ending the job, ``kill``): handled as Ctrl-C."""

    def __str__(self) -> str:
        return "stopped by SIGTERM"


@contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """Turns SIGTERM into :class:`Terminated` for the block (main thread only), so a
    scheduler's stop fails and queues the running trial, as Ctrl-C does."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, frame: Any) -> None:
        raise Terminated()

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _failure_reason(err: BaseException) -> str:
    if isinstance(err, DivergedError):
        return f"diverged: {err}"
    if isinstance(err, TrainingError):
        return str(err)
    name = type(err).__name__
    first = str(err).splitlines()[0] if str(err) else ""
    # torch.OutOfMemoryError on GPUs (a RuntimeError in older torch); the CPU
    # allocator raises a RuntimeError saying it "can't allocate memory".
    oom = ("out of memory", "can't allocate memory")
    if isinstance(err, MemoryError) or "OutOfMemory" in name or any(m in first for m in oom):
        return f"out of memory: {first or name}"
    return f"{name}: {first}" if first else name


def run_search(
    config: SearchConfig,
    observer: SearchObserver | None = None,
    *,
    observers: Sequence[SearchObserver] = (),
    evaluator: Evaluator | None = None,
    progress: Callable[[TrialProgress], None] | None = None,
) -> SearchResult:
    """Runs (or continues) the search of ``config``.

    Writes nothing but the study in ``config.storage`` (and its trials' weights
    beside it), prints nothing, and keeps Optuna's log lines quiet for the call.

    Args:
        config: The search (``config.storage`` must name the study storage;
            ``config.mlflow`` adds MLflow tracking, :mod:`nasmlcn.tracking`).
        observer: Receives progress.
        observers: More observers (e.g. ``nasmlcn.dashboard.DashboardObserver``,
            which writes the dashboard's trial notes and figures).
        evaluator: Overrides the configured evaluator (tests).
        progress: Called after every trial with a :class:`TrialProgress` (the
            outcome, and the study's finished trials out of ``config.trials``).

    Returns:
        What this run did and the study's best trials (or Pareto front).

    Raises:
        NasmlcnError: Invalid configuration or storage, no storage named, or
            tracking that cannot start (before anything is written).
    """
    import optuna

    from nasmlcn.search._entry import call_observers, quiet_optuna, require_storage

    require_storage(config)
    with warnings.catch_warnings(), quiet_optuna():
        # Heartbeats with ask-and-tell and metric names are "experimental" in
        # Optuna; they are what this runner is built on, so the warnings say nothing.
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        warnings.filterwarnings("ignore", message="Heartbeat of storage")
        every = Observers([o for o in (observer, *observers) if o is not None])

        def attach() -> None:
            # after the configuration is checked: a bad one opens no tracking store
            every.observers.extend(call_observers(config, progress))

        with sigterm_as_interrupt():
            return _run_search(config, every, evaluator, attach)


FAILURES_IN_A_ROW = 10
"""A worker stops after this many trials in a row failed (failures do not count
toward ``--trials``, so a space where every candidate fails would never end)."""


def open_search(
    config: SearchConfig, checked: Callable[[], None] | None = None
) -> tuple[SearchSetup, optuna.Study, bool]:
    """Checks ``config``, opens its storage and creates or loads its study (taking
    turns with workers started at the same moment); also whether it existed.
    ``checked`` is called once the configuration is checked, before the storage
    is opened (the caller opens its experiment tracker there).

    Raises:
        NasmlcnError: Invalid configuration or storage (before anything is written).
    """
    setup = setup_search(config)
    if checked is not None:
        checked()
    storage = open_storage(config.storage, grace=config.grace)
    storage.hide_dashboard = True  # the samplers need no notes or figures
    with hold(storage):  # workers started together create the study once
        study, resumed = open_study(
            setup, storage, SAMPLERS.get(config.sampler).make(config.seed, config.trials)
        )
    return setup, study, resumed


def start_run(
    config: SearchConfig,
    setup: SearchSetup,
    study: optuna.Study,
    resumed: bool,
    done: int,
    observer: SearchObserver,
) -> SearchResult:
    """Tells ``observer`` the run starts; the run's (empty) result."""
    shown = redact_url(config.storage)  # results and progress never show a password
    observer.on_start(
        SearchStart(
            study.study_name,
            shown,
            resumed,
            done,
            config.trials,
            config.epochs,
            config.evaluator,
            config.sampler,
            tuple(setup.directions),
            tuple(setup.metric_names),
        )
    )
    return SearchResult(
        study.study_name,
        shown,
        done,
        metric_names=setup.metric_names,
        directions=setup.directions,
    )


def _run_search(
    config: SearchConfig,
    observer: SearchObserver,
    evaluator: Evaluator | None,
    checked: Callable[[], None] | None = None,
) -> SearchResult:
    started = time.perf_counter()
    setup, study, resumed = open_search(config, checked)
    observer.on_study(study)
    storage = storage_of(study)
    sampler_entry = SAMPLERS.get(config.sampler)
    done = finished(study)
    if evaluator is None:
        evaluator = EVALUATORS.get(config.evaluator)(config=config, dataset=setup.dataset)
    pruner = _pruner(config)
    result = start_run(config, setup, study, resumed, done, observer)
    distributions = setup.space.distributions()
    deadline = started + config.timeout if config.timeout is not None else None
    store = (
        open_store(artifacts_dir(config.storage, config.artifacts))
        if getattr(evaluator, "checkpoints", False)
        else None
    )
    workdir = tempfile.TemporaryDirectory(prefix="nasmlcn-trial-")
    poll = min(5.0, max(0.2, config.grace / 8))
    index = 0
    failed_in_a_row = 0
    while True:
        if deadline is not None and time.perf_counter() >= deadline:
            result.stopped = "timeout"
            break
        if failed_in_a_row >= FAILURES_IN_A_ROW:
            result.stopped = "failures"
            break
        timings: dict[str, float] = {}
        tick = time.perf_counter()
        trial: optuna.Trial | None = None
        try:
            taken = claim(
                study,
                config,
                lambda seed: sampler_entry.make(seed, config.trials),
                lambda t: _sample(study, t, distributions),
            )
            if taken.action == "done":
                result.stopped = "trials"
                break
            if taken.action == "wait":  # the target is claimed; a running trial may die
                time.sleep(poll)
                continue
            trial = taken.trial
            assert trial is not None
            index += 1
            timings["ask"] = time.perf_counter() - tick
            with heartbeat(storage_of(study), trial_id_of(trial)):
                files = TrialFiles(store, trial, Path(workdir.name)) if store else None
                if files is not None and files.resumed_epoch:
                    trial.set_user_attr("resumed_from_epoch", files.resumed_epoch)
                outcome = _run_trial(
                    setup,
                    study,
                    trial,
                    evaluator,
                    pruner,
                    observer,
                    index,
                    timings,
                    deadline,
                    taken.retried,
                    files,
                )
            if files is not None:
                files.close()
                if config.keep_weights != "all":
                    with hold(storage):
                        prune_weights(study, files.store, config.keep_weights)
            outcome = replace(outcome, timings=timings, retry_of=_retry_of(trial, taken.retried))
        except KeyboardInterrupt as stop:
            # the search's --timeout stops a trial between batches as Ctrl-C does
            timed_out = isinstance(stop, TrainingStopped)
            result.stopped = "timeout" if timed_out else "interrupted"
            if trial is None:  # Ctrl-C while sampling: Optuna may have left a RUNNING trial
                if config.storage.startswith("sqlite"):  # one machine: it can only be ours
                    with _no_interrupts():
                        _fail_running_of_this_run(study)
                break
            with _no_interrupts():
                reason = (
                    "stopped by SIGTERM"
                    if isinstance(stop, Terminated)
                    else f"{stop}; queued again, a re-run resumes it"
                    if timed_out
                    else "interrupted by the user (Ctrl-C)"
                )
                trial.set_user_attr("fail_reason", reason)
                trial.set_user_attr("failure", "interrupted")
                study.tell(trial, state=_state("FAIL"))
                # queued again: the next run resumes it (from its last checkpoint)
                again = retry(study, storage.get_trial(trial_id_of(trial)), config.max_retries)
                outcome = TrialOutcome(
                    trial.number, "FAIL", None, trial.user_attrs.get("lanes", ""), reason, 0.0,
                    retry_of=_retry_of(trial, taken.retried), queued_again_as=again,
                )  # fmt: skip
                result.run_trials.append(outcome)
                observer.on_trial_end(outcome)
            break
        failed_in_a_row = failed_in_a_row + 1 if outcome.state == "FAIL" else 0
        result.run_trials.append(outcome)
        observer.on_trial_end(outcome)
    workdir.cleanup()
    summarize_study(study, setup, result)
    result.seconds = time.perf_counter() - started
    observer.on_end(result)
    return result


def summarize_study(study: optuna.Study, setup: SearchSetup, result: SearchResult) -> None:
    """Fills ``result``'s study-wide figures: trials, means, best trials, correlation."""
    config = setup.config
    result.n_trials = len(study.get_trials(deepcopy=False))
    result.trial_counts = trial_counts(study)
    complete = [
        t.values for t in study.get_trials(deepcopy=False, states=(_state("COMPLETE"),)) if t.values
    ]
    result.completed = len(complete)
    result.not_learning = not_learning(study)
    result.learning_threshold = learning_threshold(setup.dataset.num_classes)
    if complete:
        result.mean_values = {
            name: sum(v[i] for v in complete) / len(complete)
            for i, name in enumerate(setup.metric_names)
        }
    result.best = [summarize(t, setup.metric_names).to_dict() for t in best_trials(study)]
    pruner = _pruner(config)
    correlations = correlation_report(study).correlations
    result.correlation = [
        {**c.to_dict(), "prunes": pruner is not None and pruner.allows(c.epoch, correlations)}
        for c in correlations
    ]


def _pruner(config: SearchConfig) -> CorrelationPruner | None:
    """The search's pruner (None: ``--no-prune``)."""
    if not config.prune:
        return None
    return CorrelationPruner(
        config.prune_threshold, config.prune_percentile, config.prune_min_trials
    )


def _cost_objectives(setup: SearchSetup) -> list[tuple[str, int, bool]]:
    """Per objective known before training (latency, memory, ...): its name, its
    index in a trial's values, and whether it is maximised."""
    return [
        (o.name, i, o.direction == "maximize")
        for i, o in enumerate(setup.objectives)
        if not o.needs_training
    ]


def _sample(study: optuna.Study, trial: optuna.Trial, distributions: dict[str, Any]) -> None:
    """Suggests every parameter of ``trial`` (what ``study.ask(distributions)`` does,
    through the public API). When the sampler or a distribution check raises, the
    trial is marked FAIL with the reason (never left RUNNING) and the search stops
    with a :class:`SearchError`: the next trial would fail the same way.
    """
    from optuna.distributions import (
        CategoricalDistribution,
        FloatDistribution,
        IntDistribution,
    )

    try:
        for name, dist in distributions.items():
            if isinstance(dist, FloatDistribution):
                trial.suggest_float(name, dist.low, dist.high, step=dist.step, log=dist.log)
            elif isinstance(dist, IntDistribution):
                trial.suggest_int(name, dist.low, dist.high, step=dist.step, log=dist.log)
            elif isinstance(dist, CategoricalDistribution):
                trial.suggest_categorical(name, dist.choices)
            else:  # pragma: no cover - spaces use the three kinds above
                raise SearchError(f"parameter {name!r} has an unsupported distribution {dist!r}")
    except Exception as err:
        reason = f"sampling failed: {_failure_reason(err)}"
        with _no_interrupts():
            trial.set_user_attr("fail_reason", reason)
            study.tell(trial, state=_state("FAIL"))
        raise SearchError(
            f"trial {trial.number} of study {study.study_name!r}: {reason}; it is marked FAIL"
        ) from None


def _fail_running_of_this_run(study: optuna.Study) -> None:
    """Fails the newest RUNNING trial that has no attributes yet: the one ``ask`` was
    creating when Ctrl-C came. Only used on SQLite, where no other machine's worker
    can be sampling at the same moment."""
    running = study.get_trials(deepcopy=False, states=(_state("RUNNING"),))
    if running:
        newest = max(running, key=lambda t: t.number)
        if not newest.user_attrs:
            study.tell(newest.number, state=_state("FAIL"))


def _state(name: str) -> Any:
    from optuna.trial import TrialState

    return TrialState[name]


class _Ended(Exception):
    """Ends a trial early as FAIL or PRUNED (raised inside :func:`_run_trial`)."""

    def __init__(
        self,
        state: str,
        reason: str,
        *,
        seen: Sequence[EpochReport] | None = None,
        saved: float = 0.0,
    ) -> None:
        super().__init__(reason)
        self.state, self.reason, self.saved = state, reason, saved
        self.seen = seen  # the epochs reported before an evaluation ended (None: none ran)


def _run_trial(
    setup: SearchSetup,
    study: optuna.Study,
    trial: optuna.Trial,
    evaluator: Evaluator,
    pruner: CorrelationPruner | None,
    observer: SearchObserver,
    index: int,
    timings: dict[str, float],
    deadline: float | None = None,
    retried: bool = False,
    files: TrialFiles | None = None,
) -> TrialOutcome:
    """Builds, places, evaluates and tells one trial. Every early end (cannot be
    built, does not fit, pruned, failed, values not finite) goes through
    :class:`_Ended` to one place that records it."""
    start = time.perf_counter()
    lanes = ""
    try:
        candidate, plan = _build_and_place(setup, trial)
        lanes = candidate.spec.describe()
        tick = time.perf_counter()
        timings["build"] = tick - start
        _record_plan(trial, candidate, plan, setup)
        timings["record"] = time.perf_counter() - tick
        observer.on_trial_start(trial.number, index, lanes, plan)
        if not candidate.feasible:
            raise _Ended("PRUNED", f"does not fit the devices: {candidate.reason}")
        evaluation: Evaluation | None = None
        if setup.needs_training:
            tick = time.perf_counter()
            evaluation = _evaluate(
                setup, study, trial, evaluator, pruner, observer, candidate, plan, start,
                deadline, retried, files,
            )  # fmt: skip
            timings["evaluate"] = time.perf_counter() - tick
            trial.set_user_attr(
                "training",
                {**evaluation.to_dict(), "evaluator": evaluator.name, "versions": versions()},
            )
            # a model that learned nothing stays in the study but off the front
            _set_constraint(
                trial,
                LEARNING_CONSTRAINT,
                learning_constraint(evaluation.accuracy, setup.dataset.num_classes),
            )
        tick = time.perf_counter()
        values = tuple(float(o.value(plan, evaluation)) for o in setup.objectives)
        if not all(math.isfinite(v) for v in values):
            raise _Ended("FAIL", f"objective values not finite: {values}")
    except _Ended as ended:
        return _end(study, trial, ended, lanes, start, evaluator, files)
    if files is not None:
        files.keep()
    study.tell(trial, list(values))
    timings["tell"] = time.perf_counter() - tick
    return TrialOutcome(trial.number, "COMPLETE", values, lanes, None, time.perf_counter() - start)


def _build_and_place(setup: SearchSetup, trial: optuna.Trial) -> tuple[Candidate, Plan]:
    """The trial's architecture from its parameters, and its plan on the devices."""
    config = setup.config
    params = trial.params
    batch_size = int(params.get("batch_size", config.batch_size))
    ctx = setup.space_context
    if batch_size != ctx.cost_context.batch_size:
        ctx = replace(ctx, cost_context=replace(ctx.cost_context, batch_size=batch_size))
    try:
        candidate = setup.space.build(params, ctx)
        plan = plan_model(
            candidate.spec,
            setup.devices,
            cost_model=setup.cost_model,
            batch_size=batch_size,
            assignment=candidate.assignment,
            strategy=setup.space.placement,
        )
    except Exception as err:  # a space that cannot build: recorded, the search goes on
        raise _Ended("FAIL", _failure_reason(err)) from err
    return candidate, plan


def _evaluate(
    setup: SearchSetup,
    study: optuna.Study,
    trial: optuna.Trial,
    evaluator: Evaluator,
    pruner: CorrelationPruner | None,
    observer: SearchObserver,
    candidate: Candidate,
    plan: Plan,
    start: float,
    deadline: float | None,
    retried: bool,
    files: TrialFiles | None,
) -> Evaluation:
    """Trains the candidate, reporting every epoch; pruning and failures end the
    trial through :class:`_Ended`."""
    config = setup.config
    params = trial.params
    stop_at, stop_why = _trial_deadline(config, start)
    # one epoch leaves nothing to prune (the last epoch is the result)
    cost_objectives = _cost_objectives(setup)
    finished = (
        finished_for_pruning(study, cost_objectives)
        if pruner is not None and config.epochs > 1
        else []
    )
    # the trial's own costs are predictions, known before it trains
    costs = {
        name: (-1.0 if maximize else 1.0) * float(setup.objectives[i].value(plan, None))
        for name, i, maximize in cost_objectives
    }
    single = len(setup.directions) == 1
    job = EvalJob(
        spec=candidate.spec,
        # a retry trains with its original's seeds, so resuming changes nothing
        trial=_original_number(trial) if retried else trial.number,
        seed=config.seed,
        epochs=config.epochs,
        batch_size=int(params.get("batch_size", config.batch_size)),
        lr=float(params.get("lr", 1e-3)),
        lr_policy=params.get("lr_policy"),
        batch_policy=str(params.get("batch_policy", "fixed")),
        assignment=tuple(candidate.assignment or plan.placement.assignment),
        checkpoint_path=str(files.path) if files is not None else None,
        resume=files is not None and files.resumed_epoch > 0,
        should_stop=_search_deadline(config, deadline),
    )
    seen: list[EpochReport] = []
    # a retried trial keeps the epochs its failed run reported
    reported = (
        set(storage_of(study).get_trial(trial_id_of(trial)).intermediate_values)
        if retried
        else set()
    )

    def on_epoch(report: EpochReport) -> None:
        seen.append(report)
        if files is not None:
            files.saved(report.epoch)  # a retry of this trial resumes from here
        if single and report.epoch not in reported:
            trial.report(report.val_accuracy, report.epoch)
        observer.on_epoch(trial.number, report, config.epochs)
        timeout = job.should_stop() if job.should_stop and report.epoch < config.epochs else None
        if timeout is not None:  # an evaluator that does not ask between batches stops here
            raise TrainingStopped(f"{timeout} (after epoch {report.epoch})")
        if stop_at is not None and report.epoch < config.epochs:
            now = time.perf_counter()
            if now >= stop_at:
                raise PruneTrial(
                    f"{stop_why}: stopped after epoch {report.epoch} of {config.epochs} "
                    f"({now - start:.0f} s)",
                    report.epoch,
                )
        if pruner is not None and report.epoch < config.epochs:
            reason = pruner.decide(report.epoch, report.val_accuracy, finished, costs)
            if reason is not None:
                raise PruneTrial(reason, report.epoch)

    try:
        return evaluator.evaluate(job, on_epoch)
    except PruneTrial as pruned:
        per_epoch = seen[-1].seconds / len(seen) if seen else 0.0
        saved = per_epoch * (config.epochs - pruned.epoch)
        raise _Ended("PRUNED", pruned.reason, seen=seen, saved=saved) from None
    except KeyboardInterrupt:
        raise
    except Exception as err:  # NaN, out of memory, anything: recorded, the search goes on
        reason = _failure_reason(err)
        logger.warning("trial %d failed: %s", trial.number, reason)
        trial.set_user_attr("traceback", traceback.format_exc(limit=8)[-4000:])
        raise _Ended("FAIL", reason, seen=seen) from err


def _end(
    study: optuna.Study,
    trial: optuna.Trial,
    ended: _Ended,
    lanes: str,
    start: float,
    evaluator: Evaluator,
    files: TrialFiles | None,
) -> TrialOutcome:
    """Records a trial that ended early (the one FAIL and PRUNED path) and tells it."""
    seen = ended.seen
    pruned = ended.state == "PRUNED"
    evaluated = seen is not None
    if seen or (evaluated and pruned):
        training: dict[str, Any] = {
            "val_accuracy_per_epoch": [r.val_accuracy for r in seen or ()],
            "evaluator": evaluator.name,
        }
        if pruned:
            training |= {
                "epochs_run": len(seen or ()),
                "seconds": seen[-1].seconds if seen else 0.0,
            }
        trial.set_user_attr("training", training)
    trial.set_user_attr("prune_reason" if pruned else "fail_reason", ended.reason)
    if pruned and evaluated:
        trial.set_user_attr("seconds_saved", ended.saved)
    if files is not None:
        if pruned:
            files.keep()  # a pruned trial's weights are kept as a finished one's
        else:
            files.close()
    study.tell(trial, state=_state(ended.state))
    return TrialOutcome(
        trial.number,
        ended.state,
        None,
        lanes,
        ended.reason,
        time.perf_counter() - start,
        ended.saved,
    )


def _record_plan(trial: optuna.Trial, candidate: Candidate, plan: Plan, setup: SearchSetup) -> None:
    """Architecture, placement and predictions as user attributes; the constraints."""
    config = setup.config
    trial.set_user_attr("lanes", candidate.spec.describe())
    trial.set_user_attr("lane_mix", format_lane_mix(candidate.spec.lanes))
    trial.set_user_attr("num_lanes", candidate.spec.num_lanes)
    trial.set_user_attr("arch", candidate.spec.to_dict())
    trial.set_user_attr(
        "plan",
        {
            "strategy": plan.placement.strategy,
            "assignment": list(plan.placement.assignment),
            "lane_costs": [c.time for c in plan.costs.lanes],
            "devices": [
                {
                    "name": d.device.name,
                    "speed": d.device.speed,
                    "lanes": list(d.lanes),
                    "load": d.load,
                    "time": d.time,
                    "memory_bytes": d.memory_bytes,
                    "memory_limit_bytes": d.memory_limit,
                    "inference_time": d.inference_time,
                }
                for d in plan.per_device
            ],
        },
    )
    trial.set_user_attr(
        "predicted",
        {
            "latency": plan.makespan,
            "step_time": plan.step_time,
            "inference_latency_s": plan.inference_latency,
            "inference_batch_size": INFERENCE_BATCH_SIZE,
            "time_unit": plan.time_unit,
            "imbalance": plan.imbalance,
            "peak_memory_bytes": plan.peak_memory_bytes,
            "params": plan.costs.params,
            "train_flops": plan.costs.train_flops,
            "cost_model": plan.cost_model,
        },
    )
    if candidate.repairs:
        trial.set_user_attr("repairs", list(candidate.repairs))
        trial.set_user_attr("repaired_lanes", candidate.repaired_lanes)
    # Feasible when <= 0: the fullest device's memory over its limit, relative.
    memory = max((d.memory_bytes - d.memory_limit) / d.memory_limit for d in plan.per_device)
    if not candidate.feasible:
        memory = max(memory, 1e-9)
    _set_constraint(trial, "memory", memory)
    if config.latency_budget is not None:
        _set_constraint(trial, "latency", plan.makespan - config.latency_budget)


def _set_constraint(trial: optuna.Trial, key: str, value: float) -> None:
    with warnings.catch_warnings():
        # a retried trial has its constraints already (the same values): Optuna warns
        warnings.filterwarnings("ignore", message="The constraint value is ignored")
        trial.set_constraint(key, float(value))


def _original_number(trial: optuna.Trial) -> int:
    """The number of the trial that ``trial`` retries (itself if none)."""
    from optuna.storages import RetryHeartbeatStaleTrialCallback

    frozen = storage_of(trial.study).get_trial(trial_id_of(trial))
    original = RetryHeartbeatStaleTrialCallback.retried_trial_number(frozen)
    return int(original) if original is not None else trial.number


def _retry_of(trial: optuna.Trial, retried: bool) -> int | None:
    """The failed trial that ``trial`` runs again (the last in its retry history,
    which the live display showed as queued again); None for a new trial."""
    if not retried:
        return None
    frozen = storage_of(trial.study).get_trial(trial_id_of(trial))
    history = frozen.system_attrs.get("retry_history")
    return int(history[-1]) if history else _original_number(trial)


def _trial_deadline(config: SearchConfig, start: float) -> tuple[float | None, str]:
    """When the trial starting at ``start`` must stop (at an epoch boundary, PRUNED),
    and why: its ``--trial-timeout``."""
    if config.trial_timeout is None:
        return None, ""
    return start + config.trial_timeout, f"--trial-timeout {config.trial_timeout:g} s"


def _search_deadline(
    config: SearchConfig, deadline: float | None
) -> Callable[[], str | None] | None:
    """The trainer's per-batch check for the search's ``--timeout``: past
    ``deadline`` it stops the trial within a batch, as Ctrl-C does (the trial is
    queued again and a re-run resumes it from its last epoch; never PRUNED)."""
    if deadline is None:
        return None
    why = f"stopped by the search's --timeout {config.timeout:g} s"
    return lambda: why if time.perf_counter() >= deadline else None
