"""The observer protocol: hooks into a search that the caller attaches (the CLI's
live display, the dashboard's notes, MLflow tracking); the search itself knows
nothing of them. A run is watched one way: the list of observers it is given.

What a search run tells its caller: how each trial ended, how the run started,
and the run's result (what ``run_search`` and ``run_workers`` return, and
``nasmlcn search --json`` prints), and why a trial failed, in one line a table can
show (:func:`failure_reason`).

``run_search(progress=...)``: a callback after every trial, as an observer
(:class:`ProgressObserver`); what it receives (:class:`TrialProgress`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from nasmlcn._signals import stop_pending
from nasmlcn.errors import DivergedError, TrainingError, field_text
from nasmlcn.study import finished

if TYPE_CHECKING:
    import optuna

    from nasmlcn.planning import Plan
    from nasmlcn.search.evaluators._base import EpochReport

    pass
    from nasmlcn.search._prepare.setup import SearchSetup
    from nasmlcn.study import Noise, Replicate


logger = logging.getLogger(__name__)


class SearchObserver:
    """Hooks into a search (the CLI's live display and the dashboard's notes are
    observers the CLI attaches); all no-ops here. An observer that raises stops
    nothing (the runner logs it and goes on), but in :meth:`on_checked`."""

    tracking_uri: str | None = None
    """The tracking URI an experiment tracker logs to (``SearchConfig.mlflow`` asks
    for one such observer); None for others."""

    def on_checked(self, setup: SearchSetup) -> None:
        """The configuration and devices are checked and nothing is written yet: an
        observer that opens something (a tracking store) opens it here. An error
        raised here stops the search before its study is made."""

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

    def on_replicate_start(self, number: int, lanes: str, epochs: int) -> None:
        """The search trains trial ``number``'s model (``lanes``) once more for
        ``epochs`` epochs with another seed, to measure the noise of one run (a
        replicate, :mod:`nasmlcn.study._noise`: no trial; once per study)."""

    def on_replicate_end(self, replicate: Replicate, noise: Noise) -> None:
        """The replicate is stored; ``noise``: the study's estimate with it."""

    def on_wait(self, running: tuple[int, ...], grace: float) -> None:
        """Every trial left to run is claimed, by these RUNNING trials of other
        processes: the run waits for them to end, or to go silent for ``grace``
        seconds (a dead worker's), when it fails, queues and takes them. Told again
        when the running trials change."""

    def on_end(self, result: SearchResult) -> None:
        """After the last trial of this run (also after Ctrl-C or a time limit)."""

    def for_workers(self) -> tuple[SearchObserver | None, Callable[[], SearchObserver] | None]:
        """How this observer watches a run with worker processes: what watches in
        this process (it hears every worker's finished trials), and a picklable
        factory of what each worker attaches (None: nothing). By default it all
        stays in this process."""
        return self, None


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
                if stop_pending():  # a Ctrl-C or SIGTERM inside the observer's commit,
                    continue  # come out as the library's error: the run's next check raises it
                logger.warning(
                    "observer %s failed in %s", type(observer).__name__, hook, exc_info=True
                )

    def on_checked(self, setup: SearchSetup) -> None:
        # not guarded: an observer that cannot start stops the search up front
        for observer in self.observers:
            observer.on_checked(setup)

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

    def on_replicate_start(self, number: int, lanes: str, epochs: int) -> None:
        self._each("on_replicate_start", number, lanes, epochs)

    def on_replicate_end(self, replicate: Replicate, noise: Noise) -> None:
        self._each("on_replicate_end", replicate, noise)

    def on_wait(self, running: tuple[int, ...], grace: float) -> None:
        self._each("on_wait", running, grace)

    def on_end(self, result: SearchResult) -> None:
        self._each("on_end", result)


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
        repeat_of: A repeat (:mod:`nasmlcn.search._run.repeats`): the trial whose
            result it took, untrained; it does not count toward ``--trials``.
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
    repeat_of: int | None = None  # took this trial's result (search/_run/repeats.py)


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
    count_repeats: bool = False  # a repeat moves the trials bar only when it counts
    data: str = ""  # a user's own data, in one line (empty: a built-in dataset)
    notices: tuple[str, ...] = ()  # what the user should know (SearchSetup.notices)
    forecast: str = ""  # how long the trials left will take, in one line (empty: none)


@dataclass
class SearchResult:
    """The outcome of one ``run_search`` (a run may continue an existing study).

    ``stopped`` says why the run ended: ``trials`` (the target is reached),
    ``timeout`` (the search's ``--timeout``), ``interrupted`` (Ctrl-C),
    ``terminated`` (SIGTERM), ``failures`` (trials failed in a row) or ``repeats``
    (the sampler proposed only models already trained).
    """

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
    # the study's trials by how they ended (nasmlcn.search._results.summary.trial_counts):
    # only complete and pruned ones count toward --trials
    trial_counts: dict[str, int] = field(default_factory=dict)
    # --warm-start: what it did when it made the study (WarmStart.to_dict()), else None
    warm_start: dict[str, Any] | None = None
    # the study's pruned trials, this run's and earlier runs' (``pruned`` in to_dict,
    # so that it agrees with trial_counts); None: this run's only
    study_pruned: list[dict[str, Any]] | None = None
    # what the user should know before the first trial (a limit above the data, a
    # --mem above the catalog's): SearchSetup.notices
    notices: list[str] = field(default_factory=list)
    # how long a trial and the trials left were predicted to take, before the first
    # (nasmlcn.search._prepare.forecast.Forecast.to_dict()); None: not forecast
    forecast: dict[str, Any] | None = None
    # the noise of one training run, from the study's replicates, and how the best
    # models stand in it (nasmlcn.search._results.summary.noise_summary); None: the
    # study has no replicate (--replicate-after 0, the proxy, too few models yet)
    noise: dict[str, Any] | None = None

    @property
    def failures(self) -> list[TrialOutcome]:
        return [t for t in self.run_trials if t.state == "FAIL"]

    @property
    def pruned(self) -> list[TrialOutcome]:
        return [t for t in self.run_trials if t.state == "PRUNED"]

    def pruned_in_study(self) -> list[dict[str, Any]]:
        """The study's pruned trials (``study_pruned``), else this run's: number,
        reason and the seconds of training each saved."""
        if self.study_pruned is not None:
            return self.study_pruned
        return [
            {"number": t.number, "reason": t.reason, "seconds_saved": t.seconds_saved}
            for t in self.pruned
        ]

    def to_dict(self) -> dict[str, Any]:
        pruned = self.pruned_in_study()
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
            "pruned": pruned,
            "seconds_saved_by_pruning": sum(p["seconds_saved"] for p in pruned),
            "correlation": self.correlation,
            "workers": self.workers,
            "errors": self.errors,
            "trial_counts": self.trial_counts,
            "warm_start": self.warm_start,
            "notices": [field_text(n) for n in self.notices],
            "forecast": self.forecast,
            "noise": self.noise,
        }


def failure_reason(err: BaseException) -> str:
    """``diverged: ...``, ``out of memory: ...``, or the exception's type and first line."""
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


@dataclass(frozen=True)
class TrialProgress:
    """What a ``progress`` callback receives after every trial.

    Attributes:
        outcome: How the trial ended.
        done: The study's trials that count toward ``target`` (COMPLETE and
            PRUNED, by every worker), this one included, when the callback is
            called (in a ``run_workers`` pool the parent relays each trial after
            it ended, so other trials may have finished since: ``done`` never
            goes back, but may step by more than one).
        target: The trials the study should reach (``SearchConfig.trials``).
    """

    outcome: TrialOutcome
    done: int
    target: int


ProgressCallback = Callable[[TrialProgress], None]


class ProgressObserver(SearchObserver):
    """Calls ``progress`` after every trial (a ``--workers`` pool's parent relays
    every worker's trials)."""

    def __init__(self, progress: ProgressCallback) -> None:
        self.progress = progress
        self.study: optuna.Study | None = None
        self.target = 0

    def on_study(self, study: optuna.Study) -> None:
        self.study = study

    def on_start(self, start: SearchStart) -> None:
        self.target = start.target

    def on_trial_end(self, outcome: TrialOutcome) -> None:
        done = finished(self.study) if self.study is not None else 0
        self.progress(TrialProgress(outcome, done, self.target))
