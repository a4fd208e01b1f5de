"""Finding a study's trials by a user attribute without reading them all.

A trial looks up its model's earlier trials (``model_key``) and a claim counts the
repeats (``repeat_of``) on every trial; reading every trial of the study for that
grows with the study and, on a database, builds each trial from its rows. On
nasmlcn's storage (:class:`~nasmlcn.study.BufferedStorage`) these are one query
each; any other storage is read whole, with the same answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from nasmlcn._optuna_compat import storage_of, study_id_of

if TYPE_CHECKING:
    import optuna
    from optuna.trial import FrozenTrial, TrialState


def trials_by_attr(
    study: optuna.Study, key: str, value: Any, states: Sequence[TrialState]
) -> list[FrozenTrial]:
    """The trials of ``study`` in ``states`` whose user attribute ``key`` is
    ``value``, in number order."""
    storage = storage_of(study)
    if hasattr(storage, "trial_ids_with_user_attr"):
        ids = storage.trial_ids_with_user_attr(study_id_of(study), key, value, states)
        found = [storage.get_trial(trial_id) for trial_id in ids]
        return [t for t in found if t.state in states]  # one may have finished since
    trials = study.get_trials(deepcopy=False, states=tuple(states))
    return [t for t in trials if key in t.user_attrs and t.user_attrs[key] == value]


def count_by_attr(study: optuna.Study, key: str, states: Sequence[TrialState]) -> int:
    """Trials of ``study`` in ``states`` whose user attribute ``key`` is set (not None)."""
    storage = storage_of(study)
    if hasattr(storage, "count_with_user_attr"):
        return int(storage.count_with_user_attr(study_id_of(study), key, states))
    trials = study.get_trials(deepcopy=False, states=tuple(states))
    return sum(t.user_attrs.get(key) is not None for t in trials)
