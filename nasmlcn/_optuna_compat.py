"""Every use of Optuna's internals in nasmlcn, in one place.

Optuna's public API has no way to reach a study's storage and ids, to list the
stale trials that :func:`optuna.storages.fail_stale_trials` would fail, or to
record a heartbeat from a thread of one's own; the functions here do, and are
the one place to change when Optuna does. It also has Optuna's exact hypervolume
(:func:`compute_hypervolume`), which no public module offers. A module of
``nasmlcn`` itself, so that every package may use it. The batching storage
(:mod:`nasmlcn.study._buffered_storage`) builds on Optuna's cached RDB storage
and its SQLAlchemy models through :func:`rdb_internals`.
"""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import optuna
    from optuna.artifacts._protocol import ArtifactStore  # noqa: F401  (for importers' types)
    from optuna.storages import BaseStorage
    from optuna.storages._cached_storage import _CachedStorage as CachedStorage  # noqa: F401


def storage_of(study: optuna.Study) -> BaseStorage:
    """The storage object a study reads and writes through."""
    return study._storage


def study_id_of(study: optuna.Study) -> int:
    """The storage's id of ``study`` (what a storage's own calls take)."""
    return int(study._study_id)


def trial_id_of(trial: optuna.Trial | optuna.trial.FrozenTrial) -> int:
    """The storage's id of ``trial`` (not its number in the study)."""
    return int(trial._trial_id)


def frozen_study_id(study: Any) -> int:
    """The id of a ``FrozenStudy`` (``storage.get_all_studies()``)."""
    return int(study._study_id)


def unbuffered(storage: Any) -> Any:
    """The RDB storage under a cached one (Optuna's ``_CachedStorage``, which
    :class:`~nasmlcn.study.BufferedStorage` is): what reads every attribute, the
    dashboard's notes and figures included; any other storage as it is."""
    return getattr(storage, "_backend", storage)


def compute_hypervolume(points: Any, reference_point: Any, *, assume_pareto: bool = False) -> float:
    """The hypervolume of ``points`` (minimised, an (n, m) array) against
    ``reference_point``: Optuna's exact WFG implementation (no public API has it)."""
    from optuna._hypervolume import compute_hypervolume as wfg

    return float(wfg(points, reference_point, assume_pareto=assume_pareto))


def rdb_internals() -> SimpleNamespace:
    """Optuna's RDB storage internals: ``models`` (SQLAlchemy tables),
    ``scoped_session`` (its session context manager) and ``CachedStorage``."""
    from optuna.storages._cached_storage import _CachedStorage
    from optuna.storages._rdb import models
    from optuna.storages._rdb.storage import _create_scoped_session

    return SimpleNamespace(
        models=models, scoped_session=_create_scoped_session, CachedStorage=_CachedStorage
    )


def record_heartbeat(storage: Any, trial_id: int) -> bool:
    """Records a heartbeat of ``trial_id``; False when the storage keeps none."""
    if not hasattr(storage, "record_heartbeat") or storage.get_heartbeat_interval() is None:
        return False
    storage.record_heartbeat(trial_id)
    return True


def stale_trial_ids(storage: Any, study_id: int, grace: float) -> list[int]:
    """RUNNING trials whose worker is gone: no heartbeat for ``grace`` seconds (as
    Optuna's ``fail_stale_trials`` sees them), and trials started over ``grace``
    seconds ago that never recorded a heartbeat (made by a worker that died while
    creating them, or by a nasmlcn before every trial had heartbeats)."""
    if not hasattr(storage, "_get_stale_trial_ids") or storage.get_heartbeat_interval() is None:
        return []
    stale = list(storage._get_stale_trial_ids(study_id))
    rdb = rdb_internals()
    backend = unbuffered(storage)
    trial, beat = rdb.models.TrialModel, rdb.models.TrialHeartbeatModel
    from optuna.trial import TrialState

    # Optuna 5 stores naive UTC start times (column ``_datetime_start_utc``);
    # earlier versions naive local time (``datetime_start``).
    utc = hasattr(trial, "_datetime_start_utc")
    started = trial._datetime_start_utc if utc else trial.datetime_start
    with rdb.scoped_session(backend.scoped_session) as session:
        rows = (
            session.query(trial.trial_id, started)
            .outerjoin(beat, beat.trial_id == trial.trial_id)
            .filter(trial.study_id == study_id)
            .filter(trial.state == TrialState.RUNNING)
            .filter(beat.trial_heartbeat_id.is_(None))
            .all()
        )
    now = (
        datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
        if utc
        else datetime.datetime.now()
    )
    cutoff = now - datetime.timedelta(seconds=grace)
    stale += [int(tid) for tid, start in rows if start is not None and start < cutoff]
    return sorted(set(stale))


def record_trial_artifact(trial: Any, artifact_id: str, filename: str) -> None:
    """Records a file already in the trial's artifact store under ``artifact_id`` as
    one of the trial's artifacts, as :func:`optuna.artifacts.upload_artifact` records
    the files it copies in (optuna-dashboard lists it; the store holds one copy)."""
    import json
    import mimetypes

    from optuna.artifacts._upload import ARTIFACTS_ATTR_PREFIX, DEFAULT_MIME_TYPE

    mimetype, encoding = mimetypes.guess_type(filename)
    meta = {
        "artifact_id": artifact_id,
        "filename": filename,
        "mimetype": mimetype or DEFAULT_MIME_TYPE,
        "encoding": encoding,
    }
    trial.storage.set_trial_system_attr(
        trial_id_of(trial), ARTIFACTS_ATTR_PREFIX + artifact_id, json.dumps(meta)
    )


def forget_trial_artifact(storage: Any, trial_id: int, artifact_id: str) -> None:
    """Deletes the record of artifact ``artifact_id`` from a finished trial (whose
    attributes Optuna no longer lets anyone change), after its file was removed, so
    optuna-dashboard does not list a file that is gone."""
    from optuna.artifacts._upload import ARTIFACTS_ATTR_PREFIX

    rdb = rdb_internals()
    backend = unbuffered(storage)
    model = rdb.models.TrialSystemAttributeModel
    with rdb.scoped_session(backend.scoped_session) as session:
        session.query(model).filter(model.trial_id == trial_id).filter(
            model.key == f"{ARTIFACTS_ATTR_PREFIX}{artifact_id}"
        ).delete()
    reread = getattr(storage, "reread_trial", None)
    if reread is not None:  # a cached copy of the trial would still list it
        reread(trial_id)


def reseed_sampler(sampler: Any, seed: int) -> bool:
    """Seeds ``sampler``'s random state (and its inner random sampler's) with
    ``seed``, keeping everything else it has learned and cached (TPE's search-space
    intersection, computed incrementally: a new sampler per trial would recompute it
    over every trial, tens of milliseconds at a few hundred trials). False when the
    sampler keeps its random state elsewhere (then make a new one)."""
    states = []
    inner = sampler
    depth = 0
    while inner is not None and depth < 4:
        state = getattr(inner, "_rng", None)
        if state is None or not hasattr(state, "rng"):
            return False
        states.append(state)
        # TPE and NSGA-II keep their random start in _random_sampler, GP in _independent_sampler
        inner = getattr(inner, "_random_sampler", None) or getattr(
            inner, "_independent_sampler", None
        )
        depth += 1
    for state in states:  # as a fresh sampler: its inner random sampler gets the same seed
        state.rng.seed(seed % 2**32)
    return True


def set_study_system_attrs(storage: Any, study_id: int, items: Sequence[tuple[str, Any]]) -> None:
    """Sets several study system attributes: upsert statements in one transaction
    on SQLite and PostgreSQL (a note costs one commit, not three), one
    ``set_study_system_attr`` each elsewhere."""
    if not items:
        return
    backend = unbuffered(storage)
    engine = getattr(backend, "engine", None)
    dialect = getattr(engine, "name", None)
    if dialect not in ("sqlite", "postgresql") or not hasattr(backend, "scoped_session"):
        for key, value in items:
            storage.set_study_system_attr(study_id, key, value)
        return
    import json

    rdb = rdb_internals()
    models, _create_scoped_session = rdb.models, rdb.scoped_session
    from sqlalchemy.dialects import postgresql, sqlite

    model = models.StudySystemAttributeModel
    insert = sqlite.insert if dialect == "sqlite" else postgresql.insert
    rows = [{"study_id": study_id, "key": k, "value_json": json.dumps(v)} for k, v in items]
    with _create_scoped_session(backend.scoped_session, True) as session:
        # batches keep each statement under SQLite's limit of bound parameters
        for start in range(0, len(rows), 500):
            statement = insert(model).values(rows[start : start + 500])
            session.execute(
                statement.on_conflict_do_update(
                    index_elements=[model.study_id, model.key],
                    set_={"value_json": statement.excluded.value_json},
                )
            )


def read_schema_scripts_once() -> None:
    """Optuna's RDB storages read the installed Optuna's schema migration scripts
    (alembic's, about 30 Python files, executed) each time one opens, to learn the
    newest schema version: 0.04 to 0.1 s an open, most of opening an SQLite study.
    The scripts are the same for the whole process, so after this each storage reads
    them from the first one's copy. Idempotent."""
    from optuna.storages._rdb.storage import _VersionManager

    if getattr(_VersionManager._create_alembic_script, "read_once", False):
        return
    read = _VersionManager._create_alembic_script
    scripts: dict[str, Any] = {}

    def read_once(self: Any) -> Any:
        where = self._create_alembic_config().get_main_option("script_location")
        if where not in scripts:
            scripts[where] = read(self)
        return scripts[where]

    read_once.read_once = True  # type: ignore[attr-defined]
    _VersionManager._create_alembic_script = read_once  # type: ignore[method-assign]
