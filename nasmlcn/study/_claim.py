"""Taking the next trial: many workers on one study, no overshoot, no twins.

A worker takes its next trial holding the storage's lock (:mod:`nasmlcn.study._lock`):

1. it fails the stale trials of dead workers and queues them again
   (:mod:`nasmlcn.study._recovery`);
2. a queued (WAITING) trial is taken first;
3. otherwise a new trial is started only while the finished (COMPLETE, PRUNED)
   plus running trials are fewer than ``--trials``. At the target with trials
   still running elsewhere, the worker waits (one of them may die and need a
   retry); with none running, the study is done. So the study ends with exactly
   ``--trials`` finished trials, however many workers start at once. Repeats
   (trials that took an earlier trial's result) count only with ``count_repeats``:
   without it (the default), ``--trials`` counts models.

The sampler of a new trial is seeded from ``--seed`` and the trial's index among the
study's new trials (its number less the retried copies before it), which is unique:
workers given the same command never replay each other's proposals, one worker
with one ``--seed`` is reproducible, and an interrupted and retried trial does not
shift the trials after it (a seeded random search draws the same models however
often it was stopped; by the number, a retry skipped one draw). The seed is stored
on the trial (``sampler_seed``), with the worker (``host:pid``) that ran it.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from nasmlcn._optuna_compat import (
    record_heartbeat,
    reseed_sampler,
    storage_of,
    study_id_of,
    trial_id_of,
)
from nasmlcn.study._lock import hold
from nasmlcn.study._lookup import count_by_attr
from nasmlcn.study._recovery import fail_stale_trials
from nasmlcn.study._trial import TrialRecord, write_claimed

if TYPE_CHECKING:
    import optuna
    from optuna.trial import FrozenTrial


class ClaimSettings(Protocol):
    """What taking a trial needs of a search's configuration (a
    :class:`~nasmlcn.search.SearchConfig` has it)."""

    @property
    def trials(self) -> int: ...
    @property
    def seed(self) -> int: ...
    @property
    def grace(self) -> float: ...
    @property
    def max_retries(self) -> int: ...
    @property
    def count_repeats(self) -> bool: ...


def worker_name() -> str:
    """``host:pid``: which process ran a trial."""
    return f"{socket.gethostname()}:{os.getpid()}"


def trial_seed(seed: int, number: int) -> int:
    """The sampler seed of trial ``number`` in a search seeded ``seed``."""
    return (seed * 1_000_003 + number * 7_919 + 17) % 2**32


def count(study: optuna.Study, *states: str) -> int:
    """Trials of ``study`` in ``states`` (``COMPLETE``...), counted by the database."""
    from optuna.trial import TrialState

    wanted = [TrialState[s] for s in states] if states else list(TrialState)
    storage = storage_of(study)
    if hasattr(storage, "count_trials"):
        return int(storage.count_trials(study_id_of(study), wanted))
    return len(study.get_trials(deepcopy=False, states=tuple(wanted)))


def counts(study: optuna.Study) -> dict[str, int]:
    """The study's trials per state name (``COMPLETE``: 12, ...), in one query."""
    storage = storage_of(study)
    if hasattr(storage, "count_by_state"):
        return {s.name: n for s, n in storage.count_by_state(study_id_of(study)).items()}
    found: dict[str, int] = {}
    for trial in study.get_trials(deepcopy=False):
        found[trial.state.name] = found.get(trial.state.name, 0) + 1
    return found


def finished(study: optuna.Study, count_repeats: bool = False) -> int:
    """Trials that count toward ``--trials``: COMPLETE and PRUNED, repeats (trials
    that took an earlier trial's result) only with ``count_repeats``."""
    done = count(study, "COMPLETE", "PRUNED")
    return done if count_repeats else done - repeat_count(study)


def repeat_count(study: optuna.Study) -> int:
    """COMPLETE and PRUNED trials that are repeats: they took an earlier trial's
    result or curve (:func:`~nasmlcn.study.write_repeat`) and trained nothing."""
    from optuna.trial import TrialState

    return count_by_attr(study, "repeat_of", (TrialState.COMPLETE, TrialState.PRUNED))


@dataclass(frozen=True)
class Claim:
    """What a worker may do next.

    Attributes:
        action: ``run`` (``trial`` is its own, RUNNING, heartbeat recorded),
            ``wait`` (the target is claimed but trials still run elsewhere) or
            ``done``.
        trial: The trial to run.
        retried: The trial is a queued retry (its parameters are fixed).
        failed_stale: Numbers of the dead workers' trials this claim failed.
    """

    action: str
    trial: optuna.Trial | None = None
    retried: bool = False
    failed_stale: tuple[int, ...] = ()


def claim(study: optuna.Study, config: ClaimSettings, make_sampler: Any, sample: Any) -> Claim:
    """Takes the next trial of ``study`` (see the module docstring).

    Args:
        study: The study (its storage opened by ``open_storage``).
        config: The search (``trials``, ``seed``, ``grace``, ``max_retries``).
        make_sampler: ``make_sampler(seed)`` -> an Optuna sampler.
        sample: ``sample(trial)`` suggests every parameter of a new trial.
    """
    storage = storage_of(study)
    with hold(storage):
        now = counts(study)
        stale: tuple[int, ...] = ()
        if now.get("RUNNING"):  # only a running trial can have gone stale
            stale = tuple(fail_stale_trials(study, config.grace, config.max_retries))
            if stale:
                now = counts(study)
        waiting = now.get("WAITING", 0)
        running = now.get("RUNNING", 0)
        claimed = now.get("COMPLETE", 0) + now.get("PRUNED", 0) + running
        if not config.count_repeats and (now.get("COMPLETE") or now.get("PRUNED")):  # models
            claimed -= repeat_count(study)
        if not waiting and claimed >= config.trials:
            return Claim("wait" if running else "done", failed_stale=stale)
        number = sum(now.values())  # the number a new trial gets
        # its index among new trials: retried copies take numbers, not draws
        index = number - (retried_copies(study) if now.get("FAIL") else 0)
        seed = trial_seed(config.seed, index)
        if not waiting and not reseed_sampler(study.sampler, seed):
            study.sampler = make_sampler(seed)
        trial = study.ask()
        # a queued trial is a retry only if it copies a failed one (a warm start
        # queues new trials with fixed parameters too)
        retried = trial.number != number and is_retry(study, trial)
        write_claimed(trial, worker_name(), None if retried else seed)
        sample(trial)
        # visible and alive before the lock is let go: a worker that dies from here
        # on leaves a trial the others see go stale
        record_heartbeat(storage, trial_id_of(trial))
        if hasattr(storage, "flush"):
            storage.flush()
        return Claim("run", trial, retried, stale)


def _copies_a_failed_trial(frozen: FrozenTrial) -> bool:
    """Optuna's retry mark (read by :class:`TrialRecord`): ``frozen`` is a queued
    copy of a failed trial."""
    return TrialRecord.of(frozen).retry_of is not None


def retried_copies(study: optuna.Study) -> int:
    """How many trials of ``study`` are queued copies of failed ones (any state)."""
    trials = storage_of(study).get_all_trials(study_id_of(study), deepcopy=False)
    return sum(_copies_a_failed_trial(t) for t in trials)


def is_retry(study: optuna.Study, trial: optuna.Trial) -> bool:
    """Whether ``trial`` is a queued copy of a failed trial (Optuna's retry mark)."""
    return _copies_a_failed_trial(storage_of(study).get_trial(trial_id_of(trial)))
