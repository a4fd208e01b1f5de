"""The search measures its own noise: the best model so far, trained once more.

One training run of a model is one sample of a noisy figure. Once the study has
``--replicate-after`` completed models (COMPLETE and feasible, each model once: no
repeats, nor a warm start's trials), the worker that finds it so first claims the
study's replicate (:func:`nasmlcn.study.claim_replicate`, under the storage's lock:
one per study, however many workers), and trains the best of them so far again with
the evaluator: the same model (the trial's stored architecture and placement), the
same training settings and data split, and another training seed (initial weights
and batch order), derived from the trial's own: :func:`replicate_model_seed`. No
checkpoint, no pruning. The pair is stored on the study
(:class:`~nasmlcn.study.Replicate`); the trial is not touched, and nothing counts
toward ``--trials``.

Only an evaluator whose accuracy comes from real training (``measured``: the ``train``
evaluator) replicates: the proxy's figure has no noise to measure. Ctrl-C, SIGTERM
and the search's ``--timeout`` stop a replicate as they stop a trial: the run
stops, and the claim is let go (a later run makes the replicate). A replicate whose
training fails is let go too, and this run does not try again. A worker that dies
leaves its claim, which another takes over once it is stale (``--grace`` plus four
times the trial's training time).
"""

from __future__ import annotations

import hashlib
import logging
import time
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from nasmlcn._signals import no_interrupts, stops_held
from nasmlcn.search._run.observer import failure_reason
from nasmlcn.search._run.repeats import TrialTraining
from nasmlcn.search._run.trial import RunContext, SearchTimeout, search_deadline
from nasmlcn.search.evaluators._base import (
    CONTINUE,
    EpochDecision,
    EpochReport,
    EvalRequest,
    Evaluation,
)
from nasmlcn.study import (
    Replicate,
    StudyRecord,
    TrialRecord,
    claim_replicate,
    hold,
    noise_estimate,
    release_replicate,
    replicate_taken,
    replicates,
    storage_of,
    store_replicate,
    worker_name,
)
from nasmlcn.training import TrainingStopped

if TYPE_CHECKING:
    import optuna
    from optuna.trial import FrozenTrial

logger = logging.getLogger(__name__)

STALE_TRIALS = 4
"""A replicate claim is stale after ``--grace`` plus this many times the original
trial's training time (the replicate trains the same model as long)."""


@dataclass
class Replicator:
    """Makes the study's replicate once it is due; the runner asks after each trial.

    Attributes:
        run: What the run's trials share.
        accuracy: The index of the accuracy objective among the study's values.
        looked_at: The run's trials when it last looked (it looks once per trial).
        done: This run tried, or the study has its replicate: no more looks.
    """

    run: RunContext
    accuracy: int
    looked_at: int = 0
    done: bool = False

    @classmethod
    def of(cls, run: RunContext) -> Replicator | None:
        """The run's replicator; None where nothing replicates (``--replicate-after
        0``, an evaluator that measures nothing, no accuracy objective)."""
        names = [o.name for o in run.setup.objectives]
        if not run.setup.config.replicate_after or not run.evaluator.measured:
            return None
        return cls(run, names.index("accuracy")) if "accuracy" in names else None

    def after(self, trials: int) -> bool:
        """Looks once after each of the run's ``trials``; whether it trained a
        replicate (time passed: the caller looks at its deadline again).

        Raises:
            KeyboardInterrupt: Ctrl-C or SIGTERM stopped the replicate.
            SearchTimeout: The search's ``--timeout`` stopped it.
        """
        if self.done or trials <= self.looked_at:
            return False
        self.looked_at = trials
        info = StudyRecord.read(self.run.study)
        if replicate_taken(info):
            self.done = bool(replicates(info))  # another worker's live claim may die
            return False
        original = self._claim()
        if original is None:
            return False
        self.done = True
        self._replicate(original)
        return True

    def _claim(self) -> FrozenTrial | None:
        """The best model so far, claimed for this worker's replicate (None: not due,
        or another worker claimed it first)."""
        study, config = self.run.study, self.run.setup.config
        with stops_held(), hold(storage_of(study)):  # a claim is never cut in half
            original = best_so_far(study, config.replicate_after, self.accuracy)
            if original is None:
                return None
            seconds = float(TrialRecord.of(original).training.get("seconds") or 0.0)
            stale = config.grace + STALE_TRIALS * seconds
            return (
                original if claim_replicate(study, original.number, worker_name(), stale) else None
            )

    def _replicate(self, original: FrozenTrial) -> None:
        """Trains ``original``'s model again and stores the pair; the claim is let go
        where it stops or fails."""
        run, record = self.run, TrialRecord.of(original)
        began = time.perf_counter()
        try:
            request = replicate_request(run, record)
            run.observer.on_replicate_start(original.number, record.lanes or "", request.epochs)
            evaluation = train_replicate(run, request)
        except BaseException as err:
            _let_go(run.study)  # a stop, or a failure: the claim goes back
            if not isinstance(err, Exception):
                raise
            run.stop_lost()  # a Ctrl-C or SIGTERM a library turned into its error is a stop
            if isinstance(err, SearchTimeout):
                raise
            logger.warning(
                "the replicate of trial %d failed: %s", original.number, failure_reason(err)
            )
            return
        assert original.values is not None
        replicate = Replicate(
            number=original.number,
            accuracy=float(original.values[self.accuracy]),
            replicate_accuracy=float(evaluation.accuracy),
            seed=original_seed(record),
            replicate_seed=request.training_seed,
            epochs=len(evaluation.val_accuracy_per_epoch),
            evaluator=run.evaluator.name,
            seconds=time.perf_counter() - began,
            worker=worker_name(),
            made_at=datetime.now().isoformat(timespec="seconds"),
        )
        with stops_held():
            store_replicate(run.study, replicate)
        noise = noise_estimate(StudyRecord.read(run.study))
        assert noise is not None  # the replicate is stored
        run.observer.on_replicate_end(replicate, noise)


def _let_go(study: optuna.Study) -> None:
    """Drops this worker's claim, whatever arrives meanwhile; a storage that fails
    here leaves it to go stale (another worker takes it over then)."""
    with no_interrupts():
        try:
            release_replicate(study, worker_name())
        except Exception as err:
            logger.warning("the replicate's claim stays until it is stale: %s", err)


def best_so_far(study: optuna.Study, after: int, accuracy: int) -> FrozenTrial | None:
    """The most accurate of the study's completed models once there are ``after`` of
    them (COMPLETE and feasible; a repeat or a warm start's trial is not one), the
    lower number first among equals; None before. A trial stored before its training
    seed was recorded is passed over (its replicate could not say which seed it
    differs from)."""
    from optuna.trial import TrialState

    models = []
    for trial in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)):
        record = TrialRecord.of(trial)
        new = record.repeat_of is None and record.transferred_from is None
        if record.values and record.feasible and new:
            models.append((record.values[accuracy], -trial.number, trial, record))
    if len(models) < after:
        return None
    seeded = [m for m in models if "training_seed" in m[3].training]
    return max(seeded, key=lambda m: m[:2])[2] if seeded else None


def original_seed(record: TrialRecord) -> int:
    """The training seed of the trial's own run (``EvalRequest.training_seed``)."""
    return int(record.training["training_seed"])


def replicate_model_seed(seed: int, index: int = 1) -> int:
    """The ``model_seed`` of replicate ``index`` of a run trained with training seed
    ``seed``: drawn from both (a hash, not ``hash()``: the same in every process), so
    a replicate is reproducible and differs from the run it replicates."""
    text = f"replicate {index} of training seed {seed}"
    return int(hashlib.sha256(text.encode()).hexdigest()[:8], 16)


def replicate_request(run: RunContext, record: TrialRecord) -> EvalRequest:
    """The request that trains ``record``'s model again: its stored architecture,
    placement and training settings, the search's epochs and data split, another
    seed; no checkpoint (nothing resumes a replicate)."""
    from nasmlcn.specs import MLCNSpec, arch_from_dict

    config = run.setup.config
    spec = arch_from_dict(record.arch)
    assert isinstance(spec, MLCNSpec), f"trial {record.number} stored no MLCN: {record.arch}"
    training = TrialTraining.of(record.params, config.batch_size)
    return EvalRequest(
        spec=spec,
        trial=record.number,
        seed=config.seed,
        epochs=config.epochs,
        batch_size=training.batch_size,
        lr=training.lr,
        lr_policy=training.lr_policy,
        batch_policy=training.batch_policy,
        assignment=tuple(int(d) for d in record.plan.get("assignment") or ()),
        should_stop=search_deadline(config, run.deadline),
        model_seed=replicate_model_seed(original_seed(record)),
    )


def train_replicate(run: RunContext, request: EvalRequest) -> Evaluation:
    """Trains ``request`` to its last epoch (no pruner, no trial timeout: a replicate
    is worth only whole); the search's ``--timeout`` stops it with
    :class:`SearchTimeout`, a lost Ctrl-C or SIGTERM with :class:`KeyboardInterrupt`."""
    stopped: list[str] = []

    def on_epoch(report: EpochReport) -> EpochDecision:
        run.stop_lost()
        why = request.should_stop() if request.should_stop is not None else None
        if why is None:
            return CONTINUE
        stopped.append(f"{why} (after epoch {report.epoch} of a replicate)")
        return EpochDecision("stop", stopped[-1])

    try:
        evaluation = run.evaluator.evaluate(request, on_epoch)
    except TrainingStopped as stop:  # the search's --timeout, between two batches
        raise SearchTimeout(str(stop)) from None
    if stopped:
        raise SearchTimeout(stopped[-1])
    return evaluation
