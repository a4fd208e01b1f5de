"""The studies of a storage, to list and to clean up (``nasmlcn studies``).

A study's size on disk is that of its trials' files in the artifact folder (their
checkpoints and weights; Optuna's artifact records name them), the folder the
search wrote them to (its ``artifacts`` setting, else the default beside the
storage). Deleting a study deletes those files and the study itself, and is refused
while any of its trials still has a fresh heartbeat: a worker is training it.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nasmlcn._optuna_compat import stale_trial_ids, storage_of, study_id_of, trial_id_of
from nasmlcn._storage_url import redact_url
from nasmlcn.errors import StorageError
from nasmlcn.study._artifacts import artifacts_dir
from nasmlcn.study._identity import study_info
from nasmlcn.study._storage import open_storage, study_names, unknown_study

if TYPE_CHECKING:
    import optuna

DEFAULT_GRACE = 120.0
"""Seconds without a heartbeat after which a RUNNING trial's worker counts as gone
(the search's ``--grace`` default)."""


@dataclass(frozen=True)
class StudyListing:
    """One study of a storage: its name, its trials by state, the size of its
    trials' files in the artifact folder, when it last changed, and its files."""

    name: str
    trials: dict[str, int]
    artifact_bytes: int
    last_change: str | None  # ISO time of the latest trial start or end, else its making
    artifacts: str  # the artifact folder
    files: tuple[Path, ...] = field(default=(), repr=False, compare=False)

    @property
    def total(self) -> int:
        return sum(self.trials.values())

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "trials": self.total,
            "by_state": self.trials,
            "artifact_bytes": self.artifact_bytes,
            "last_change": self.last_change,
            "artifacts": self.artifacts,
        }


def list_studies(url: str) -> list[StudyListing]:
    """Every study in storage ``url``, by name.

    Raises:
        StorageError: The storage cannot be opened (one line naming it).
    """
    storage = open_storage(url, create=False, heartbeat=False, read_only=True)
    return [_listing(_load(name, storage), url) for name in study_names(storage)]


def _load(name: str, storage: Any) -> optuna.Study:
    import optuna

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return optuna.load_study(study_name=name, storage=storage)


def _listing(study: optuna.Study, url: str) -> StudyListing:
    from optuna.artifacts import get_all_artifact_meta

    trials = study.get_trials(deepcopy=False)
    states: dict[str, int] = {}
    for t in trials:
        states[t.state.name] = states.get(t.state.name, 0) + 1
    info = study_info(study)
    config = info.get("config") or {}
    folder = artifacts_dir(url, config.get("artifacts"))
    files = tuple(
        folder / meta.artifact_id
        for t in trials
        for meta in get_all_artifact_meta(t, storage=storage_of(study))
    )
    size = sum(p.stat().st_size for p in files if p.is_file())
    times = [d for t in trials for d in (t.datetime_start, t.datetime_complete) if d is not None]
    last = max(times).isoformat(timespec="seconds") if times else info.get("created")
    return StudyListing(study.study_name, states, size, last, str(folder), files)


@dataclass(frozen=True)
class DeletedStudy:
    """What :func:`delete_study` removed."""

    name: str
    trials: int
    files: int
    freed_bytes: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "trials": self.trials,
            "files": self.files,
            "freed_bytes": self.freed_bytes,
        }


def find_study(url: str, name: str) -> StudyListing:
    """The listing of study ``name`` in ``url``.

    Raises:
        StorageError: No such study (with the names there), or no storage.
    """
    storage = open_storage(url, create=False, heartbeat=False, read_only=True)
    if name not in study_names(storage):
        raise unknown_study(name, storage, url)
    return _listing(_load(name, storage), url)


def delete_study(url: str, name: str, *, grace: float = DEFAULT_GRACE) -> DeletedStudy:
    """Deletes study ``name`` from ``url`` and its trials' files from the artifact folder.

    Raises:
        StorageError: No such study, or a trial of it has had a heartbeat within the
            last ``grace`` seconds (a worker is training it): nothing is deleted.
    """
    import optuna

    # with heartbeats, so that a RUNNING trial's worker is known alive or gone
    storage = open_storage(url, create=False, heartbeat=True, grace=grace)
    if name not in study_names(storage):
        raise unknown_study(name, storage, url)
    study = _load(name, storage)
    busy = _fresh_trials(study, grace)
    if busy:
        shown = ", ".join(f"#{n}" for n in busy)
        raise StorageError(
            f"study {name!r} in {redact_url(url)} has running trials with a fresh heartbeat "
            f"({shown}): a worker is training them; stop it first (Ctrl-C), or wait "
            f"{grace:g} s after it died; nothing was deleted"
        )
    listing = _listing(study, url)
    removed = [p for p in listing.files if p.is_file()]
    freed = sum(p.stat().st_size for p in removed)
    optuna.delete_study(study_name=name, storage=storage)
    for path in removed:
        path.unlink(missing_ok=True)
    return DeletedStudy(name, listing.total, len(removed), freed)


def _fresh_trials(study: optuna.Study, grace: float) -> list[int]:
    """The study's RUNNING trials whose worker is alive: a heartbeat within ``grace``
    seconds (or, never having beaten, started within it)."""
    from optuna.trial import TrialState

    running = study.get_trials(deepcopy=False, states=(TrialState.RUNNING,))
    stale = set(stale_trial_ids(storage_of(study), study_id_of(study), grace))
    return [t.number for t in running if trial_id_of(t) not in stale]
