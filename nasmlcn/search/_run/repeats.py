"""Repeats: a trial that proposes a model already trained takes the earlier result.

Samplers propose one model more than once: bucket filling rounds many parameter
vectors to the same lanes, and a Bayesian sampler proposes its best point again.
Trained again at the same fidelity, a repeat costs a whole training and buys only
another draw of the noise, which a best-of-N then chases (a winner's curse). So a
trial whose model and training settings (:func:`model_key`) equal those of a
completed trial takes that trial's result: it is recorded as a repeat of it
(``repeat_of``), trains nothing, and the sampler sees its values like any trial's.
A trial's training seed follows from its model and the study's seed
(:func:`training_seed`), not from its number, so the repeat would have trained to
exactly that result.

- A COMPLETE original is taken. A model whose trial was pruned is not trained
  again to be pruned again: its stored curve goes back to the pruner (which knows
  more trials now), epoch by epoch; if the pruner stops it at an epoch, the trial
  is a PRUNED repeat of it, else it trains the model anew (the same seed: the same
  curve, then the epochs the pruner had cut). A model whose trial failed is trained
  again.
- Repeats do not count toward ``--trials`` by default: ``--trials`` counts models,
  each trained (or pruned) once, and a run asks again after a repeat, the sampler
  first (the repeat's values told, it proposes anew), then, after
  :data:`FALLBACK_AFTER` repeats in a row, a random candidate of the space
  (``--count-repeats`` counts every proposal). A run that gets only repeats for
  :data:`REPEATS_IN_A_ROW` proposals in a row stops, and says so.
- A model that another worker is training at that moment (an earlier trial,
  RUNNING) is waited for (:func:`wait_for_twin`): once that trial completes, this
  one is its repeat; if it is pruned or fails, or its worker dies, or the search's
  time is up, this one trains the model itself. Two workers that still train one
  model at once (both looked before either wrote its model) end alike: whichever
  finishes second becomes a repeat of the first (the same seed: the same result).

How a worker waits (:func:`waits`): for the last running trials once the target is
claimed, or for another worker's trial that trains the same model.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from nasmlcn._defaults import LEARNING_RATE

if TYPE_CHECKING:
    import optuna
    from optuna.trial import FrozenTrial

    from nasmlcn.search._config import SearchConfig
    from nasmlcn.specs import ArchSpec


logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class TrialTraining:
    """How one trial trains: the search's batch size and the defaults, with what the
    trial's space sampled (``lr``, ``batch_size``, ``lr_policy``, ``batch_policy``)
    in their place. The one reader of a trial's training settings: the trial trains
    with them (and keys its model by them), ``retrain`` trains it again with them."""

    batch_size: int
    lr: float = LEARNING_RATE
    lr_policy: str | None = None  # None: the batch policy's own
    batch_policy: str = "fixed"

    @classmethod
    def of(cls, params: Mapping[str, Any], batch_size: int) -> TrialTraining:
        """The settings of a trial with parameters ``params`` in a search of
        ``batch_size``."""
        return cls(
            batch_size=int(params.get("batch_size", batch_size)),
            lr=float(params.get("lr", LEARNING_RATE)),
            lr_policy=params.get("lr_policy"),
            batch_policy=str(params.get("batch_policy", "fixed")),
        )

    def key_settings(self, config: SearchConfig) -> dict[str, Any]:
        """What the trained result depends on besides the model: these settings and
        the search's data, seed and epochs (the rest of :func:`model_key`'s key)."""
        return {
            "evaluator": config.evaluator,
            "dataset": config.dataset,
            "train_limit": config.train_limit,
            "val_limit": config.val_limit,
            "seed": config.seed,
            "epochs": config.epochs,
            **asdict(self),
        }


@contextmanager
def random_proposal(study: optuna.Study, active: bool) -> Iterator[None]:
    """While ``active``, the study's sampler is a random one (the claim seeds it as
    the trial's own sampler), so the next trial is a random candidate of the space;
    the study's own sampler is back afterwards, with all it had learned."""
    if not active:
        yield
        return
    import optuna

    own = study.sampler
    study.sampler = optuna.samplers.RandomSampler()
    try:
        yield
    finally:
        study.sampler = own


def model_key(
    spec: ArchSpec, training: Mapping[str, Any], assignment: Sequence[int] | None = None
) -> str:
    """The model and everything its training depends on, hashed (16 hex digits).

    The search builds every model with its lanes in canonical order
    (:meth:`~nasmlcn.search.spaces.Candidate.canonical`), so reorderings of one
    model have one key. ``assignment`` (lane -> device, where the space places the
    lanes itself) makes the key the placed model's: the same lanes on the devices
    another way have other cost values, so they are not a repeat, though they
    train with the same seed (:func:`training_seed` of the key without it).
    """
    data: dict[str, Any] = {"arch": spec.to_dict(), "training": dict(training)}
    if assignment is not None:
        data["assignment"] = list(assignment)
    text = json.dumps(data, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def training_seed(key: str) -> int:
    """What seeds a trial's training together with the study's seed: its model's
    key, so that one model trains identically in every trial that proposes it."""
    return int(key[:8], 16)


def trained_original(study: optuna.Study, key: str) -> FrozenTrial | None:
    """The first COMPLETE trial of the study that trained model ``key`` itself."""
    from optuna.trial import TrialState

    from nasmlcn.study import TrialRecord, trials_by_attr

    for trial in trials_by_attr(study, "model_key", key, (TrialState.COMPLETE,)):
        if TrialRecord.of(trial).repeat_of is None and trial.values:
            return trial
    return None


def originals(study: optuna.Study, key: str) -> tuple[FrozenTrial | None, FrozenTrial | None]:
    """In one read of the study: the first COMPLETE trial that trained model ``key``
    itself (:func:`trained_original`), and the first PRUNED one that did and
    recorded the epochs it ran (its curve goes back to the pruner)."""
    from optuna.trial import TrialState

    from nasmlcn.study import TrialRecord, trials_by_attr

    complete = pruned = None
    states = (TrialState.COMPLETE, TrialState.PRUNED)
    for trial in trials_by_attr(study, "model_key", key, states):
        if TrialRecord.of(trial).repeat_of is not None:
            continue
        if trial.state == TrialState.COMPLETE and complete is None and trial.values:
            complete = trial
        elif trial.state == TrialState.PRUNED and pruned is None and pruned_curve(trial):
            pruned = trial
    return complete, pruned


def unfit_original(study: optuna.Study, key: str) -> FrozenTrial | None:
    """The first PRUNED trial of model ``key`` that found it does not fit the devices
    (not a repeat): a later proposal of that model is a repeat of it."""
    from optuna.trial import TrialState

    from nasmlcn.study import TrialRecord, trials_by_attr

    for trial in trials_by_attr(study, "model_key", key, (TrialState.PRUNED,)):
        record = TrialRecord.of(trial)
        if record.repeat_of is None and not record.fits:
            return trial
    return None


def pruned_curve(trial: FrozenTrial) -> list[float]:
    """The validation accuracy of every epoch a pruned trial ran."""
    from nasmlcn.study import TrialRecord

    curve = (TrialRecord.of(trial).training or {}).get("val_accuracy_per_epoch") or []
    return [float(v) for v in curve]


def replay_pruned(
    trial: optuna.Trial,
    original: FrozenTrial,
    decide: Callable[[int, float], str | None],
    *,
    epochs: int,
    report: bool,
    evaluator: str,
    costs: Mapping[str, float],
) -> str | None:
    """Tells ``decide`` (the pruner, as it stands now) the pruned ``original``'s
    curve, epoch by epoch, up to the search's last but one of ``epochs``. Where it
    stops the model, ``trial`` is recorded as a PRUNED repeat of ``original``
    (nothing trained; its curve that far, ``report``-ed to Optuna for a
    single-objective study) and the reason is returned; None where the pruner lets
    the model go on (nothing written: the trial trains it)."""
    from nasmlcn.study import write_ended_early, write_pruning_costs, write_repeat

    curve = pruned_curve(original)
    for epoch, accuracy in enumerate(curve[: epochs - 1], 1):
        reason = decide(epoch, accuracy)
        if reason is None:
            continue
        if report:
            for e, value in enumerate(curve[:epoch], 1):
                trial.report(value, e)
        if costs:
            write_pruning_costs(trial, costs)
        write_repeat(trial, original)
        why = f"{reason} (trial {original.number}'s curve of this model, replayed)"
        training = {
            "val_accuracy_per_epoch": curve[:epoch],
            "evaluator": evaluator,
            "epochs_run": epoch,
            "seconds": 0.0,
            "repeat_of": original.number,
        }
        write_ended_early(trial, pruned=True, reason=why, training=training, seconds_saved=0.0)
        return why
    return None


def running_twin(study: optuna.Study, key: str, number: int) -> FrozenTrial | None:
    """An earlier trial than ``number`` that is training model ``key`` now (RUNNING)."""
    from optuna.trial import TrialState

    from nasmlcn.study import trials_by_attr

    for trial in trials_by_attr(study, "model_key", key, (TrialState.RUNNING,)):
        if trial.number < number:
            return trial
    return None


def wait_for_twin(
    study: optuna.Study,
    key: str,
    number: int,
    *,
    poll: float,
    grace: float,
    max_retries: int,
    deadline: float | None = None,
) -> FrozenTrial | None:
    """Waits while an earlier trial (another worker's) trains model ``key``; the
    trial that trained it once it has completed, else None (none was training it,
    it ended pruned or failed, or ``deadline``, on ``time.perf_counter``'s clock,
    passed). A twin whose worker died (no heartbeat for ``grace`` seconds) is failed
    and queued again, as taking a trial does (:mod:`nasmlcn.study._recovery`), so a
    dead worker is never waited for longer than that. It looks again after a short
    pause, doubling up to ``poll`` seconds (:func:`~nasmlcn.search._run.repeats.waits`)."""
    from nasmlcn._optuna_compat import storage_of
    from nasmlcn.study import fail_stale_trials, hold

    twin = running_twin(study, key, number)
    if twin is None:
        return None
    logger.info(
        "trial %d: waiting for trial %d, which trains the same model on another worker",
        number,
        twin.number,
    )
    pauses = waits(poll)
    while twin is not None:
        if deadline is not None and time.perf_counter() >= deadline:
            return None
        time.sleep(next(pauses))
        with hold(storage_of(study)):
            fail_stale_trials(study, grace, max_retries)
        twin = running_twin(study, key, number)
    return trained_original(study, key)


FIRST_WAIT = 0.25
"""Seconds a worker that has to wait (for the last running trials, for a twin)
waits before it first looks again."""


def waits(longest: float) -> Iterator[float]:
    """The pauses of a waiting worker: :data:`FIRST_WAIT`, doubling up to ``longest``
    (``poll_seconds``), so that a run ends soon after the trial it waited for, and a
    long wait costs few queries."""
    wait = min(FIRST_WAIT, longest)
    while True:
        yield wait
        wait = min(2 * wait, longest)
