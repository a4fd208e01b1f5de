"""Trials whose worker died, or that Ctrl-C stopped, are failed with the reason
and queued again.

Every trial heartbeats while it runs (:mod:`nasmlcn.study._heartbeat`). Before it
takes each new trial, a worker fails the trials whose heartbeat stopped more than
the grace period ago (``--grace``, 2 minutes by default): each is marked FAIL with
``fail_reason`` and ``failure: crash`` on it, and is queued again as a WAITING copy
(same parameters, attributes and reported epochs) by Optuna's
:class:`~optuna.storages.RetryHeartbeatStaleTrialCallback`, up to ``--max-retries``
times. The next free worker takes the copy; the train evaluator resumes it from
the failed trial's last checkpoint. A trial failed by a crash never counts toward
``--trials``.
"""

from __future__ import annotations

import copy
import logging
import warnings
from typing import TYPE_CHECKING

from nasmlcn._optuna_compat import stale_trial_ids, storage_of, study_id_of
from nasmlcn.study._trial import FAILURE_ATTRS

if TYPE_CHECKING:
    import optuna
    from optuna.trial import FrozenTrial

logger = logging.getLogger(__name__)

MAX_RETRIES = 3
"""How many times a crashed trial is queued again by default (``--max-retries``)."""

"""Attributes of how a trial ended: a retried copy starts without them."""


def retry(study: optuna.Study, trial: FrozenTrial, max_retries: int | None) -> int | None:
    """Queues a WAITING copy of the failed ``trial`` (Optuna's retry callback) unless
    it was retried ``max_retries`` times already (None: no limit); the copy's number,
    or None."""
    from optuna.exceptions import ExperimentalWarning
    from optuna.storages import RetryHeartbeatStaleTrialCallback
    from optuna.trial import TrialState

    again = copy.deepcopy(trial)
    again.user_attrs = {k: v for k, v in trial.user_attrs.items() if k not in FAILURE_ATTRS}
    before = len(study.get_trials(deepcopy=False))
    with warnings.catch_warnings():  # "experimental" in Optuna; nasmlcn relies on it
        warnings.simplefilter("ignore", ExperimentalWarning)
        callback = RetryHeartbeatStaleTrialCallback(max_retries, inherit_intermediate_values=True)
    callback(study, again)
    waiting = study.get_trials(deepcopy=False, states=(TrialState.WAITING,))
    made = [t.number for t in waiting if t.number >= before]
    return made[-1] if made else None


def fail_stale_trials(study: optuna.Study, grace: float, max_retries: int) -> list[int]:
    """Fails every stale trial of ``study`` with its reason and retries it; the
    numbers of the trials failed. Call it holding the storage's lock."""
    from optuna.exceptions import UpdateFinishedTrialError
    from optuna.trial import TrialState

    storage = storage_of(study)
    failed = []
    for trial_id in stale_trial_ids(storage, study_id_of(study), grace):
        trial = storage.get_trial(trial_id)
        reason = f"its worker stopped: no heartbeat for over {grace:g} s"
        try:
            storage.set_trial_user_attr(trial_id, "fail_reason", reason)
            storage.set_trial_user_attr(trial_id, "failure", "crash")
            if not storage.set_trial_state_values(trial_id, TrialState.FAIL):
                continue
        except UpdateFinishedTrialError:  # a worker outside nasmlcn failed it first
            continue
        failed.append(trial.number)
        again = retry(study, storage.get_trial(trial_id), max_retries)
        logger.warning(
            "trial %d failed: %s; %s",
            trial.number,
            reason,
            f"queued again as trial {again}" if again is not None else "retried too often",
        )
    return failed
