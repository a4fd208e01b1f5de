"""The study runner: a loop of claim -> run one trial -> tell its observers.

A thin loop over Optuna's ask-and-tell interface that adds what a hardware-aware
NAS needs: each turn claims the next trial (:func:`nasmlcn.study.claim`: many
workers on one study, no overshoot), runs it (:class:`~nasmlcn.search._run.trial.TrialRun`:
build, place, record, evaluate with per-epoch pruning, tell) and tells the
observers (:mod:`nasmlcn.search._run.observer`). Failures of any kind are recorded on
the trial and the search goes on; Ctrl-C and SIGTERM
fail the running trial cleanly, queue it again and stop: a scheduler's stop (SIGTERM)
is handled as Ctrl-C, and neither may cut the writing-down of the interrupted trial.
"""

from __future__ import annotations

import logging
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nasmlcn._heap import frozen_heap, settle
from nasmlcn._signals import (
    Terminated,
    lost_stops,
    no_interrupts,
    stop_kind,
    stops_held,
    stops_raised,
)
from nasmlcn._storage_url import redact_url
from nasmlcn.errors import SearchError
from nasmlcn.search._config import FAILURES_IN_A_ROW, FALLBACK_AFTER, REPEATS_IN_A_ROW, SearchConfig
from nasmlcn.search._prepare.forecast import forecast_search
from nasmlcn.search._prepare.open_study import (
    OpenedSearch,
    open_search,
    quiet_optuna,
    require_storage,
    require_tracker,
)
from nasmlcn.search._prepare.setup import SearchSetup, setup_search
from nasmlcn.search._prepare.warm import transferred_count
from nasmlcn.search._results.summary import (
    best_trials,
    correlation_report,
    noise_summary,
    not_learning,
    proposals,
    pruned_records,
    summarize,
    trial_counts,
)
from nasmlcn.search._run.observer import (
    Observers,
    SearchObserver,
    SearchResult,
    SearchStart,
    TrialOutcome,
    failure_reason,
)
from nasmlcn.search._run.repeats import random_proposal, waits
from nasmlcn.search._run.replicate import Replicator
from nasmlcn.search._run.trial import RunContext, SearchTimeout, TrialRun, retry_of
from nasmlcn.search.evaluators._base import EVALUATORS, Evaluator
from nasmlcn.search.objectives._base import learning_threshold
from nasmlcn.search.pruners._base import PRUNERS, EpochPruner
from nasmlcn.search.samplers._base import SAMPLERS, suggest_all
from nasmlcn.study import (
    BufferedStorage,
    StudyRecord,
    TrialFiles,
    TrialRecord,
    artifacts_dir,
    claim,
    discard_weights,
    finished,
    heartbeat,
    hold,
    open_store,
    parse_keep,
    retry,
    storage_of,
    trial_id_of,
    write_failed,
    write_proposed_by,
    write_resumed,
)
from nasmlcn.study import best_trials as answer  # among a read of the trials

if TYPE_CHECKING:
    import optuna
    from optuna.trial import FrozenTrial

    from nasmlcn.data import DatasetInfo

logger = logging.getLogger(__name__)


def run_in_process(
    config: SearchConfig,
    observers: Sequence[SearchObserver] = (),
    *,
    evaluator: Evaluator | None = None,
    forecast: bool = True,
) -> SearchResult:
    """:func:`~nasmlcn.search.run_search` in this process, without workers (each
    worker of a pool runs this, with no ``forecast``: the parent made it); arguments,
    result and errors as there, and ``evaluator`` overrides the configured one (tests)."""

    require_storage(config)
    require_tracker(config, observers)
    with quiet_optuna(), stops_raised(), lost_stops() as stop_lost:
        every = Observers(observers)
        opened = open_search(setup_search(config), every)
        with frozen_heap():  # a trial's collections walk its own objects only
            return _run_search(opened, every, evaluator, stop_lost, forecast)


def start_run(
    config: SearchConfig,
    setup: SearchSetup,
    study: optuna.Study,
    resumed: bool,
    done: int,
    observer: SearchObserver,
    *,
    workers: int = 1,
    forecast: bool = True,
) -> SearchResult:
    """Tells ``observer`` the run starts, with how long its trials are predicted to
    take (``forecast``: a pool's workers leave it to the parent, which shares it out
    over its ``workers``); the run's (empty) result."""
    shown = redact_url(config.storage)  # results and progress never show a password
    predicted = forecast_search(setup, config.trials - done, workers) if forecast else None
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
            config.count_repeats,
            data_line(setup.dataset),
            setup.notices,
            predicted.line() if predicted is not None else "",
        )
    )
    return SearchResult(
        study.study_name,
        shown,
        done,
        metric_names=setup.metric_names,
        directions=setup.directions,
        notices=list(setup.notices),
        forecast=predicted.to_dict() if predicted is not None else None,
    )


def data_line(dataset: DatasetInfo) -> str:
    """What the search trains on, for its first lines: a user's data as described,
    a built-in set by name too (``fashion-mnist (built-in): Zalando ...``), so that a
    forgotten ``--dataset`` shows at once."""
    if dataset.own is not None:
        return dataset.description
    return f"{dataset.name} (built-in): {dataset.description}"


def _run_search(
    opened: OpenedSearch,
    observer: SearchObserver,
    evaluator: Evaluator | None,
    stop_lost: Callable[[], None],
    forecast: bool = True,
) -> SearchResult:
    """The loop: claim a trial, run it, tell the observers, until a stop
    (``stop_lost`` raises a Ctrl-C or SIGTERM that was swallowed or turned into an error)."""
    started = time.perf_counter()
    setup, study = opened.setup, opened.study
    config = setup.config  # with the devices' own cost model
    # trials a warm start added as data do not count toward --trials
    transferred = transferred_count(study)
    target = replace(config, trials=config.trials + transferred)
    done = finished(study, config.count_repeats) - transferred
    if evaluator is None:
        evaluator = EVALUATORS.get(config.evaluator)(config=config, dataset=setup.dataset)
    result = start_run(config, setup, study, opened.resumed, done, observer, forecast=forecast)
    result.warm_start = opened.warmed.to_dict() if opened.warmed is not None else None
    distributions = setup.space.distributions()
    deadline = started + config.timeout if config.timeout is not None else None
    pruner = make_pruner(config)
    run = RunContext(setup, study, evaluator, pruner, observer, deadline, stop_lost)
    replicator = Replicator.of(run)  # the best model so far, once more: the noise
    workdir = tempfile.TemporaryDirectory(prefix="nasmlcn-trial-")
    folder = artifacts_dir(config.storage, config.artifacts)
    store = open_store(folder) if evaluator.checkpoints else None
    index = failed_in_a_row = repeats_in_a_row = 0
    pauses = waits(config.poll_seconds)
    waited_for: tuple[int, ...] = ()
    while True:
        stopped = _stop_before(deadline, failed_in_a_row)
        if stopped is not None:
            result.stopped = stopped
            break
        tick = time.perf_counter()
        trial: optuna.Trial | None = None
        retried = False
        try:
            stop_lost()
            if replicator is not None and replicator.after(index):
                continue  # it trained: the search's time is looked at again
            with stops_held():  # a trial claimed is in hand before Ctrl-C can stop it
                taken = _propose(study, config, target, distributions, repeats_in_a_row)
                trial, retried = taken.trial, taken.retried
            if taken.action == "done":
                result.stopped = "trials"
                break
            if taken.action == "wait":  # the target is claimed; a running trial may die
                running = _running(study)
                if running != waited_for:
                    observer.on_wait(running, config.grace)
                    waited_for = running
                time.sleep(next(pauses))
                continue
            pauses = waits(config.poll_seconds)  # the next wait starts short again
            waited_for = ()
            assert trial is not None
            index += 1
            outcome = _run_trial(run, trial, index, retried, store, Path(workdir.name), tick)
        except (SearchTimeout, KeyboardInterrupt) as stop:
            # the search's --timeout stops a trial as Ctrl-C does: queued again
            result.stopped = _stop_kind(stop)
            _record_stop(run, trial, retried, stop, result)
            break
        failed_in_a_row = failed_in_a_row + 1 if outcome.state == "FAIL" else 0
        repeats_in_a_row = repeats_in_a_row + 1 if outcome.repeat_of is not None else 0
        result.run_trials.append(outcome)
        observer.on_trial_end(outcome)
        settle()  # the next trial's collections skip what this one left alive
        if repeats_in_a_row >= REPEATS_IN_A_ROW:  # nothing new to propose: say so, stop
            result.stopped = "repeats"
            break
    workdir.cleanup()
    summarize_study(study, setup, result, pruner)
    result.seconds = time.perf_counter() - started
    observer.on_end(result)
    return result


def _stop_before(deadline: float | None, failed_in_a_row: int) -> str | None:
    """Why the run stops before its next trial: ``timeout`` (the search's time is up)
    or ``failures`` (its last trials all failed); None: it goes on."""
    if deadline is not None and time.perf_counter() >= deadline:
        return "timeout"
    return "failures" if failed_in_a_row >= FAILURES_IN_A_ROW else None


def _propose(
    study: optuna.Study,
    config: SearchConfig,
    target: SearchConfig,
    distributions: dict[str, Any],
    repeats_in_a_row: int,
) -> Any:
    """Claims the next trial (or says to wait, or that the target is reached): the
    study's sampler proposes it, or, after :data:`FALLBACK_AFTER` repeats in a row,
    a random candidate of the space (:mod:`nasmlcn.search._run.repeats`)."""
    entry = SAMPLERS.get(config.sampler)
    fallback = (
        entry.random_fallback and not config.count_repeats and repeats_in_a_row >= FALLBACK_AFTER
    )
    with random_proposal(study, fallback):
        taken = claim(
            study,
            target,
            lambda seed: entry.make(seed, config.trials),
            lambda t: sample(study, t, distributions),
        )
    if fallback and taken.trial is not None and not taken.retried:
        write_proposed_by(taken.trial, f"random, after {repeats_in_a_row} repeats")
    return taken


def _run_trial(
    run: RunContext,
    trial: optuna.Trial,
    index: int,
    retried: bool,
    store: Any,
    workdir: Path,
    tick: float,
) -> TrialOutcome:
    """Runs the claimed ``trial`` under its heartbeat, with its files (in ``store``;
    none where the evaluator keeps no checkpoints)."""
    from optuna.exceptions import UpdateFinishedTrialError

    timings = {"ask": time.perf_counter() - tick}
    with heartbeat(storage_of(run.study), trial_id_of(trial)):
        files = TrialFiles(store, trial, workdir) if store else None
        if files is not None and files.resumed_epoch:
            write_resumed(trial, files.resumed_epoch)
        try:
            outcome = TrialRun(run, trial, index, retried, files, timings)()
        except UpdateFinishedTrialError:
            return _taken_over(run, trial, files)
        except Exception:
            # a Ctrl-C or SIGTERM inside a commit comes out as the storage's error
            # (StorageInternalError): the trial was stopped, not failed
            run.stop_lost()
            raise
    if files is not None:
        _close_files(run.study, files, run.setup.config.keep_weights)
    return replace(outcome, timings=timings, retry_of=retry_of(trial, retried))


def _taken_over(run: RunContext, trial: optuna.Trial, files: TrialFiles | None) -> TrialOutcome:
    """Another worker failed ``trial`` while this one trained it (its heartbeat
    looked stale: a pause longer than --grace, a worker with a shorter --grace) and
    queued it again. The checkpoint it recorded stays for that retry, this worker
    tells nothing and goes on with its next trial."""
    if files is not None:
        files.release()
    trials = run.study.get_trials(deepcopy=False)
    record = TrialRecord.of(next(t for t in trials if t.number == trial.number))
    again = [t.number for t in trials if TrialRecord.of(t).last_failed == trial.number]
    reason = f"{record.reason or 'failed'}; another worker failed it while this one trained it"
    logger.warning("trial %d: %s", trial.number, reason)
    return TrialOutcome(
        trial.number, "FAIL", None, record.lanes or "", reason, 0.0,
        queued_again_as=again[0] if again else None,
    )  # fmt: skip


def _stop_kind(stop: SearchTimeout | KeyboardInterrupt) -> str:
    """``SearchResult.stopped`` for a stop: ``timeout``, ``terminated`` (SIGTERM) or
    ``interrupted`` (Ctrl-C)."""
    return "timeout" if isinstance(stop, SearchTimeout) else stop_kind(stop)


def _record_stop(
    run: RunContext,
    trial: optuna.Trial | None,
    retried: bool,
    stop: SearchTimeout | KeyboardInterrupt,
    result: SearchResult,
) -> None:
    """Writes down the trial that Ctrl-C, SIGTERM or the search's time budget
    stopped (queued again), whatever else arrives meanwhile."""
    study = run.study
    with no_interrupts():
        storage = storage_of(study)
        if isinstance(storage, BufferedStorage):
            storage.drop_connections()  # a stop inside a query left it open
        if trial is None:  # none in hand: a claim is never cut in half (stops_held)
            return
        if storage.get_trial(trial_id_of(trial)).state.is_finished():
            return  # told already (the stop came as its files closed): nothing to stop
        outcome = _stopped(study, trial, retried, stop)
        result.run_trials.append(outcome)
        run.observer.on_trial_end(outcome)


def _close_files(study: optuna.Study, files: TrialFiles, keep: str) -> None:
    """Closes a trial's files, then drops the weights ``keep`` no longer keeps."""
    files.close()
    if keep != "all":
        with hold(storage_of(study)):
            # one read: the kept set and the trials it spares are of the same moment
            trials = study.get_trials(deepcopy=False)
            kept = kept_weights(study, keep, trials)
            if kept is not None:
                discard_weights(study, files.store, kept, trials)


def _stopped(
    study: optuna.Study,
    trial: optuna.Trial,
    retried: bool,
    stop: SearchTimeout | KeyboardInterrupt,
) -> TrialOutcome:
    """Marks ``trial``, stopped by Ctrl-C, SIGTERM or the search's --timeout, FAIL
    with the reason, and queues it again: the next run resumes it."""
    reason = (
        str(stop)  # SIGTERM's, or the search's timeout (the display adds "queued again as #M")
        if isinstance(stop, Terminated | SearchTimeout)
        else "interrupted by the user (Ctrl-C)"
    )
    storage = storage_of(study)
    # failed and queued again in one turn of the lock: another worker's claim in
    # between saw one trial fewer claimed and started one more than --trials
    with hold(storage):
        write_failed(trial, reason, failure="interrupted")
        study.tell(trial, state=_state("FAIL"))
        # a stop the user or the scheduler asked for is no crash: it never uses up
        # --max-retries (a trial longer than four scheduler jobs was dropped)
        again = retry(study, storage.get_trial(trial_id_of(trial)), None)
    return TrialOutcome(
        trial.number, "FAIL", None, _lanes_of(study, trial), reason, 0.0,
        retry_of=retry_of(trial, retried), queued_again_as=again,
    )  # fmt: skip


def summarize_study(
    study: optuna.Study,
    setup: SearchSetup,
    result: SearchResult,
    pruner: EpochPruner | None = None,
) -> None:
    """Fills ``result``'s study-wide figures: trials, means, best trials, correlation
    (``pruner``: the run's, else made from the configuration)."""
    config = setup.config
    result.n_trials = len(study.get_trials(deepcopy=False))
    result.trial_counts = trial_counts(study)
    result.study_pruned = pruned_records(study)
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
    proposed = proposals(study)
    result.best = [
        summarize(t, setup.metric_names, proposed=proposed.get(t.number, 1)).to_dict()
        for t in best_trials(study)
    ]
    result.noise = noise_summary(StudyRecord.read(study), result.best, setup.metric_names)
    if pruner is None:
        pruner = make_pruner(config)
    correlations = correlation_report(study).correlations
    result.correlation = [
        {**c.to_dict(), "prunes": pruner is not None and pruner.allows(c.epoch, correlations)}
        for c in correlations
    ]


def make_pruner(config: SearchConfig) -> EpochPruner | None:
    """The search's pruner (None: pruning is off)."""
    if not config.prune:
        return None
    return PRUNERS.get(config.pruner).make(config)


def kept_weights(
    study: optuna.Study, policy: str, trials: Sequence[FrozenTrial]
) -> set[int] | None:
    """The trials among ``trials`` (a read of ``study``) whose weights ``policy``
    (``keep_weights``) keeps: with several objectives the Pareto front, with one the
    best (``pareto``) or the best K (``best:K``); None keeps every trial's."""
    kind, count = parse_keep(policy)
    if kind == "all":
        return None
    top = count if kind == "best" else 1
    return {t.number for t in answer(trials, study.directions, top)}


def sample(study: optuna.Study, trial: optuna.Trial, distributions: dict[str, Any]) -> None:
    """Suggests every parameter of ``trial`` (what ``study.ask(distributions)`` does,
    through the public API). When the sampler or a distribution check raises, the
    trial is marked FAIL with the reason (never left RUNNING) and the search stops
    with a :class:`SearchError`: the next trial would fail the same way.
    """
    try:
        suggest_all(trial, distributions)
    except Exception as err:
        reason = f"sampling failed: {failure_reason(err)}"
        with no_interrupts():
            write_failed(trial, reason)
            study.tell(trial, state=_state("FAIL"))
        raise SearchError(
            f"trial {trial.number} of study {study.study_name!r}: {reason}; it is marked FAIL"
        ) from None


def _running(study: optuna.Study) -> tuple[int, ...]:
    """The numbers of ``study``'s RUNNING trials."""
    return tuple(t.number for t in study.get_trials(deepcopy=False, states=(_state("RUNNING"),)))


def _lanes_of(study: optuna.Study, trial: optuna.Trial) -> str:
    """The lanes written on ``trial`` ("" before its model was built)."""
    return TrialRecord.of(storage_of(study).get_trial(trial_id_of(trial))).lanes or ""


def _state(name: str) -> Any:
    from optuna.trial import TrialState

    return TrialState[name]
