"""One trial's life: build -> place -> record -> evaluate -> tell.

:class:`TrialRun` takes a claimed trial (its parameters sampled) to Optuna's
``tell``: the search space builds the model for the target devices, the planner
places it (predicted latency and memory), the trial's attributes and constraints
are written (:mod:`nasmlcn.study._trial`), the evaluator trains it with per-epoch
reporting, the correlation-gated pruner and the time limits, and the objectives
are told. Every early end (cannot be built, does not fit, pruned, failed, values
not finite) goes through :class:`Ended` to one place that records it, with the reason
in one line a table can show (:func:`~nasmlcn.search._run.observer.failure_reason`).
"""

from __future__ import annotations

import logging
import math
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from nasmlcn._version import versions
from nasmlcn.costs import INFERENCE_BATCH_SIZE
from nasmlcn.planning import Plan, plan_model
from nasmlcn.search._config import SearchConfig
from nasmlcn.search._prepare.setup import SearchSetup
from nasmlcn.search._run.observer import TrialOutcome, failure_reason
from nasmlcn.search._run.pruning import Pruning
from nasmlcn.search._run.repeats import (
    TrialTraining,
    model_key,
    originals,
    replay_pruned,
    running_twin,
    trained_original,
    training_seed,
    unfit_original,
    wait_for_twin,
)
from nasmlcn.search.evaluators._base import (
    CONTINUE,
    EpochDecision,
    EpochReport,
    EvalRequest,
    Evaluation,
)
from nasmlcn.search.objectives._base import learning_constraint
from nasmlcn.search.spaces import Candidate
from nasmlcn.study import (
    TrialFiles,
    TrialRecord,
    storage_of,
    trial_id_of,
    write_ended_early,
    write_model,
    write_model_key,
    write_plan,
    write_pruning_costs,
    write_repeat,
    write_traceback,
    write_training,
)
from nasmlcn.training import TrainingStopped

if TYPE_CHECKING:
    import optuna
    from optuna.trial import FrozenTrial

    from nasmlcn.search._run.observer import SearchObserver
    from nasmlcn.search.evaluators._base import Evaluator
    from nasmlcn.search.pruners._base import EpochPruner


logger = logging.getLogger(__name__)


class SearchTimeout(Exception):
    """The search's time budget (``--timeout``) ran out while a trial trained: the
    run fails the trial, queues it again (a re-run resumes it from its last epoch)
    and stops. An exception of its own, not a :class:`KeyboardInterrupt`, so that
    nothing takes it for Ctrl-C."""


class Ended(Exception):
    """Ends a trial early as FAIL or PRUNED (raised inside :class:`TrialRun`)."""

    def __init__(
        self,
        state: str,
        reason: str,
        *,
        seen: Sequence[EpochReport] | None = None,
        saved: float = 0.0,
        repeat_of: int | None = None,
    ) -> None:
        super().__init__(reason)
        self.state, self.reason, self.saved = state, reason, saved
        self.seen = seen  # the epochs reported before an evaluation ended (None: none ran)
        self.repeat_of = repeat_of  # a model an earlier trial found not to fit


@dataclass(frozen=True)
class RunContext:
    """What every trial of one run shares: the checked setup, the study, the evaluator,
    the pruner, the observers, the search's deadline and the check for a lost stop."""

    setup: SearchSetup
    study: optuna.Study
    evaluator: Evaluator
    pruner: EpochPruner | None
    observer: SearchObserver
    deadline: float | None  # the search's --timeout, on time.perf_counter's clock
    stop_lost: Callable[[], None] = lambda: None  # a swallowed or converted stop, raised


@dataclass
class TrialRun:
    """One claimed trial of a run, from its parameters to ``tell``.

    Attributes:
        run: What the run's trials share.
        trial: The trial (RUNNING, parameters sampled).
        index: Its place in this run (1, 2, ...), for the display.
        retried: It is a queued retry of a failed trial (same parameters and
            seeds; the ``train`` evaluator resumes its last checkpoint).
        files: Its checkpoint and weights (None: the evaluator keeps none).
        timings: Seconds per phase, filled as it runs (``build``, ``record``,
            ``evaluate``, ``tell``; the loop adds ``ask``).
    """

    run: RunContext
    trial: optuna.Trial
    index: int
    retried: bool = False
    files: TrialFiles | None = None
    timings: dict[str, float] = field(default_factory=dict)
    lanes: str = ""
    start: float = field(default_factory=time.perf_counter)
    key: str | None = None  # the placed model's (search/_run/repeats.py), once built
    seed_key: str | None = None  # the model's, whatever its placement: its seed
    waited: bool = False  # it waited for a twin (another worker training its model)
    training_seed: int | None = None  # what seeded its training, once requested

    def __call__(self) -> TrialOutcome:
        """Builds, places, evaluates and tells the trial; how it ended."""
        setup, study, trial = self.run.setup, self.run.study, self.trial
        self.start = time.perf_counter()
        try:
            try:
                candidate, plan = build_and_place(setup, trial.params)
            except Exception as err:  # a space that cannot build: recorded, the search goes on
                raise Ended("FAIL", failure_reason(err)) from err
            self.lanes = candidate.spec.describe()
            tick = time.perf_counter()
            self.timings["build"] = tick - self.start
            write_candidate(trial, setup, candidate, plan)
            self.timings["record"] = time.perf_counter() - tick
            self.run.observer.on_trial_start(trial.number, self.index, self.lanes, plan)
            if setup.needs_training:
                training = self.training.key_settings(self.run.setup.config)
                self.key = model_key(candidate.spec, training, candidate.assignment)
                self.seed_key = model_key(candidate.spec, training)
                write_model_key(trial, self.key)
            if not candidate.feasible:
                raise self._unfit(candidate)
            evaluation: Evaluation | None = None
            if self.key is not None:
                pruning = Pruning.of(setup, self.run.pruner, study, plan)  # once a trial
                repeated = self._repeated(pruning)
                if repeated is not None:
                    return repeated
                tick = time.perf_counter()
                evaluation = self._evaluate(candidate, plan, pruning)
                self.timings["evaluate"] = time.perf_counter() - tick
                write_training(
                    trial,
                    {
                        **evaluation.to_dict(),
                        "evaluator": self.run.evaluator.name,
                        # what retrain seeds the weights with to train it again alike
                        "training_seed": self.training_seed,
                        "versions": versions(),
                    },
                    learning_constraint(evaluation.accuracy, setup.dataset.num_classes),
                )
                # another worker may have finished the same model meanwhile: the
                # answer keeps one trial per model, its own result taken
                original = trained_original(study, self.key)
                if original is not None:
                    return self._repeat(original)
            tick = time.perf_counter()
            values = tuple(float(o.value(plan, evaluation)) for o in setup.objectives)
            if not all(math.isfinite(v) for v in values):
                raise Ended("FAIL", f"objective values not finite: {values}")
        except Ended as ended:
            return self._end(ended)
        if self.files is not None:
            self.files.keep()
        study.tell(trial, list(values))
        self.timings["tell"] = time.perf_counter() - tick
        return TrialOutcome(
            trial.number, "COMPLETE", values, self.lanes, None, time.perf_counter() - self.start
        )

    def _repeated(self, pruning: Pruning) -> TrialOutcome | None:
        """The one repeat check before training (search/_run/repeats.py): this model's
        result where a trial (here, or another worker's it waits for) has it; a PRUNED
        repeat where the pruner stops the model's pruned curve now; else None: this
        trial trains it."""
        assert self.key is not None
        study, key = self.run.study, self.key
        # who trains the model now, then who has trained it: a twin that ends between
        # the two looks is in the second (looked at the other way round, it was in
        # neither and this trial trained the model again)
        self.waited = running_twin(study, key, self.trial.number) is not None
        complete, pruned = originals(study, key)
        if complete is None and self.waited:
            complete = self._wait_for_twin()
            if complete is None:  # it ended pruned or failed, or before the wait began
                complete, pruned = originals(study, key)
        if complete is not None:
            return self._repeat(complete)
        return self._replay(pruned, pruning) if pruned is not None else None

    @property
    def training(self) -> TrialTraining:
        return TrialTraining.of(self.trial.params, self.run.setup.config.batch_size)

    def _wait_for_twin(self) -> FrozenTrial | None:
        """The model's original once the other worker's trial training it has
        completed (None: it ended without a result, or had ended already)."""
        assert self.key is not None
        config = self.run.setup.config
        return wait_for_twin(
            self.run.study,
            self.key,
            self.trial.number,
            poll=config.poll_seconds,
            grace=config.grace,
            max_retries=config.max_retries,
            deadline=self.run.deadline,
        )

    def _repeat(self, original: FrozenTrial) -> TrialOutcome:
        """Takes ``original``'s result: the same model, trained alike (repeats.py)."""
        trial, study = self.trial, self.run.study
        assert original.values is not None
        values = tuple(original.values)
        write_repeat(trial, original)
        study.tell(trial, list(values))
        return TrialOutcome(
            trial.number,
            "COMPLETE",
            values,
            self.lanes,
            None,
            time.perf_counter() - self.start,
            repeat_of=original.number,
        )

    def _unfit(self, candidate: Candidate) -> Ended:
        """PRUNED, nothing trained: the model does not fit the devices; a repeat of the
        trial that found so first (``--trials`` counts each model once, fitting or not)."""
        earlier = unfit_original(self.run.study, self.key) if self.key is not None else None
        if earlier is not None:
            write_repeat(self.trial, earlier)
        why = f"does not fit the devices: {candidate.reason}"
        return Ended("PRUNED", why, repeat_of=earlier.number if earlier else None)

    def _replay(self, original: FrozenTrial, pruning: Pruning) -> TrialOutcome | None:
        """The pruned ``original``'s curve told to the pruner as it stands now: a
        PRUNED repeat of it where the pruner stops it, None where this trial trains."""
        from optuna.trial import TrialState

        run, pruner = self.run, pruning.pruner
        if pruner is None:
            return None
        why = replay_pruned(
            self.trial,
            original,
            lambda epoch, accuracy: pruner.decide(epoch, accuracy, pruning.finished, pruning.costs),
            epochs=run.setup.config.epochs,
            report=len(run.setup.directions) == 1,
            evaluator=run.evaluator.name,
            costs=pruning.costs,
        )
        if why is None:
            return None
        run.study.tell(self.trial, state=TrialState.PRUNED)
        elapsed = time.perf_counter() - self.start
        return TrialOutcome(
            self.trial.number, "PRUNED", None, self.lanes, why, elapsed, repeat_of=original.number
        )

    def _request(self, candidate: Candidate, plan: Plan) -> EvalRequest:
        config, trial = self.run.setup.config, self.trial
        return EvalRequest(
            spec=candidate.spec,
            # a retry trains with its original's seeds, so resuming changes nothing
            trial=original_number(trial) if self.retried else trial.number,
            # ... and so does every trial of one model (search/_run/repeats.py)
            model_seed=training_seed(self.seed_key) if self.seed_key else None,
            seed=config.seed,
            epochs=config.epochs,
            batch_size=self.training.batch_size,
            lr=self.training.lr,
            lr_policy=self.training.lr_policy,
            batch_policy=self.training.batch_policy,
            assignment=tuple(candidate.assignment or plan.placement.assignment),
            checkpoint_path=str(self.files.path) if self.files is not None else None,
            resume=self.files is not None and self.files.resumed_epoch > 0,
            should_stop=search_deadline(config, self.run.deadline),
        )

    def _evaluate(self, candidate: Candidate, plan: Plan, pruning: Pruning) -> Evaluation:
        """Trains the candidate, deciding after every epoch whether it goes on (the
        search's time budget, for evaluators that do not ask between batches; then
        ``--trial-timeout``; then the pruner); a prune or a failure ends the trial
        through :class:`Ended`, the search's time budget through :class:`SearchTimeout`."""
        run, trial, files = self.run, self.trial, self.files
        config, setup = run.setup.config, run.setup
        request = self._request(candidate, plan)
        self.training_seed = request.training_seed
        if pruning.costs:  # a pruned trial has no values: its costs for later trials' rivals
            write_pruning_costs(trial, pruning.costs)
        single = len(setup.directions) == 1
        seen: list[EpochReport] = []
        decision = CONTINUE
        # a retried trial keeps the epochs its failed run reported
        stored = storage_of(run.study).get_trial(trial_id_of(trial)) if self.retried else None
        reported = set(stored.intermediate_values) if stored is not None else set()

        def on_epoch(report: EpochReport) -> EpochDecision:
            nonlocal decision
            if not decision.goes_on:  # an evaluator that trains on: the decision stands
                return decision
            seen.append(report)
            if files is not None:
                files.saved(report.epoch)  # a retry of this trial resumes from here
            if single and report.epoch not in reported:
                trial.report(report.val_accuracy, report.epoch)
            run.observer.on_epoch(trial.number, report, config.epochs)
            run.stop_lost()
            if report.epoch >= config.epochs:
                return decision  # the last epoch: the trial completes
            timeout = request.should_stop() if request.should_stop else None
            elapsed, limit = time.perf_counter() - self.start, config.trial_timeout
            if timeout is not None:
                decision = EpochDecision("stop", f"{timeout} (after epoch {report.epoch})")
            elif limit is not None and elapsed >= limit:  # PRUNED at an epoch boundary
                when = f"after epoch {report.epoch} of {config.epochs} ({elapsed:.0f} s)"
                decision = EpochDecision("prune", f"--trial-timeout {limit:g} s: stopped {when}")
            elif pruning.pruner is not None:
                why = pruning.pruner.decide(
                    report.epoch, report.val_accuracy, pruning.finished, pruning.costs
                )
                decision = CONTINUE if why is None else EpochDecision("prune", why)
            return decision

        from optuna.exceptions import UpdateFinishedTrialError

        try:
            evaluation = run.evaluator.evaluate(request, on_epoch)
        except TrainingStopped as stop:  # the search's --timeout, between two batches
            raise SearchTimeout(str(stop)) from None
        except UpdateFinishedTrialError:
            raise  # another worker failed and queued the trial meanwhile: the runner's
        except Exception as err:  # NaN, out of memory...: recorded, the search goes on (not Ctrl-C)
            run.stop_lost()  # a Ctrl-C or SIGTERM a library turned into its error is a stop
            reason = failure_reason(err)
            logger.warning("trial %d failed: %s", trial.number, reason)
            write_traceback(trial, traceback.format_exc(limit=8)[-4000:])
            raise Ended("FAIL", reason, seen=seen) from err
        if decision.action == "stop":
            raise SearchTimeout(decision.reason)
        if decision.action == "prune":
            per_epoch = seen[-1].seconds / len(seen) if seen else 0.0
            saved = per_epoch * (config.epochs - (seen[-1].epoch if seen else 0))
            raise Ended("PRUNED", decision.reason, seen=seen, saved=saved)
        return evaluation

    def _end(self, ended: Ended) -> TrialOutcome:
        """Records a trial that ended early (the one FAIL and PRUNED path) and tells it."""
        from optuna.trial import TrialState

        seen = ended.seen
        pruned = ended.state == "PRUNED"
        evaluated = seen is not None
        training: dict[str, Any] | None = None
        if seen or (evaluated and pruned):
            training = {
                "val_accuracy_per_epoch": [r.val_accuracy for r in seen or ()],
                "evaluator": self.run.evaluator.name,
            }
            if pruned:
                training |= {
                    "epochs_run": len(seen or ()),
                    "seconds": seen[-1].seconds if seen else 0.0,
                }
        write_ended_early(
            self.trial,
            pruned=pruned,
            reason=ended.reason,
            training=training,
            seconds_saved=ended.saved if pruned and evaluated else None,
        )
        if self.files is not None:
            if pruned:
                self.files.keep()  # a pruned trial's weights are kept as a finished one's
            else:
                self.files.close()
        self.run.study.tell(self.trial, state=TrialState[ended.state])
        return TrialOutcome(
            self.trial.number,
            ended.state,
            None,
            self.lanes,
            ended.reason,
            time.perf_counter() - self.start,
            ended.saved,
            repeat_of=ended.repeat_of,
        )


def build_and_place(setup: SearchSetup, params: Mapping[str, Any]) -> tuple[Candidate, Plan]:
    """The architecture ``params`` build in ``setup``'s space (at the batch size they
    set, if any), and its plan on the devices."""
    batch_size = TrialTraining.of(params, setup.config.batch_size).batch_size
    ctx = setup.space_context
    if batch_size != ctx.cost_context.batch_size:
        ctx = replace(ctx, cost_context=replace(ctx.cost_context, batch_size=batch_size))
    candidate = setup.space.build(params, ctx)
    plan = plan_model(
        candidate.spec,
        setup.devices,
        cost_model=setup.cost_model,
        batch_size=batch_size,
        assignment=candidate.assignment,
        strategy=setup.space.placement,
        over_memory=not candidate.feasible,  # planned to record by how much
    )
    return candidate, plan


def write_candidate(
    trial: optuna.Trial, setup: SearchSetup, candidate: Candidate, plan: Plan
) -> None:
    """Records the trial's architecture and its plan on ``setup``'s devices."""
    write_model(trial, candidate.spec, candidate.repairs, candidate.repaired_lanes)
    write_plan(
        trial,
        plan,
        fits=candidate.feasible,
        latency_budget=setup.config.latency_budget,
        inference_batch_size=INFERENCE_BATCH_SIZE,
    )


def _record(trial: optuna.Trial) -> TrialRecord:
    return TrialRecord.of(storage_of(trial.study).get_trial(trial_id_of(trial)))


def original_number(trial: optuna.Trial) -> int:
    """The number of the trial that ``trial`` retries (itself if none)."""
    original = _record(trial).retry_of
    return original if original is not None else trial.number


def retry_of(trial: optuna.Trial, retried: bool) -> int | None:
    """The failed trial that ``trial`` runs again (the last in its retry history,
    which the live display showed as queued again); None for a new trial."""
    if not retried:
        return None
    last = _record(trial).last_failed
    return last if last is not None else trial.number


def search_deadline(
    config: SearchConfig, deadline: float | None
) -> Callable[[], str | None] | None:
    """The trainer's per-batch check for the search's timeout: past ``deadline`` it
    stops the trial within a batch, as Ctrl-C does (the trial is queued again and a
    re-run resumes it from its last epoch; never PRUNED)."""
    if deadline is None:
        return None
    why = f"stopped by the search's --timeout {config.timeout:g} s"
    return lambda: why if time.perf_counter() >= deadline else None
