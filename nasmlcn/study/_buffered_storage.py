"""Batching a trial's writes into one database transaction.

Optuna commits every ``suggest``, ``set_user_attr`` and ``set_constraint`` on its
own: about 25 transactions per trial here (12 parameters, the plan's attributes,
constraints, the result), which makes bookkeeping, not sampling, the cost of a
trial (``benchmarks/search_overhead.py``). :class:`BufferedStorage` is Optuna's
own cached RDB storage with one change: writes of a trial's parameters and
attributes wait in a buffer, and the buffer is written in a single transaction
before anything reads the storage or changes a trial's state. Every read
therefore sees exactly what unbuffered writes would have produced; a crash can
only lose the writes of a trial that never finished, which is then failed as
stale.

It uses two private helpers of Optuna's RDB storage (the ``_without_commit``
writers that Optuna's own batch paths use); if a future Optuna lacks them, writes
go straight through as before.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Container, Sequence
from typing import TYPE_CHECKING, Any

from optuna.distributions import BaseDistribution
from optuna.storages import RDBStorage
from optuna.trial import FrozenTrial, TrialState

from nasmlcn._optuna_compat import rdb_internals

_rdb = rdb_internals()
if TYPE_CHECKING:
    from nasmlcn._optuna_compat import CachedStorage as _CachedStorage
else:
    _CachedStorage = _rdb.CachedStorage

_Op = tuple[str, int, str, Any, Any]


DASHBOARD_PREFIX = "dashboard:"
"""optuna-dashboard's study system attributes (notes, saved figures)."""


class BufferedStorage(_CachedStorage):
    """``_CachedStorage(RDBStorage)`` whose trial writes are committed in batches.

    Args:
        backend: The RDB storage.

    Attributes:
        hide_dashboard: Leave optuna-dashboard's notes and figures out of
            :meth:`get_study_system_attrs` (the search runner turns this on).
            NSGA-II reads a study's system attributes whole on every trial; a note
            per trial and the saved figures would make that read grow to
            megabytes, and samplers never need them.
    """

    hide_dashboard = False
    lock: Any = None
    """The database's :class:`~nasmlcn.study._lock.StorageLock` (set by ``open_storage``)."""

    def __init__(self, backend: RDBStorage) -> None:
        super().__init__(backend)
        self._buffer: list[_Op] = []
        self._buffer_lock = threading.RLock()
        # trials known to accept writes (made or started here, or checked once), so a
        # write to a missing or finished trial raises at once, as Optuna's own does
        self._writable: set[int] = set()
        self._batching = all(
            hasattr(backend, name)
            for name in ("_set_trial_param_without_commit", "_set_trial_attr_without_commit")
        )

    def __getstate__(self) -> dict[str, Any]:
        self.flush()
        state = super().__getstate__()
        state.pop("_buffer_lock", None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        self._buffer_lock = threading.RLock()

    def _check_writable(self, trial_id: int) -> None:
        """Raises now what the write would raise at flush: KeyError for a trial that
        does not exist, UpdateFinishedTrialError for a finished one."""
        if trial_id in self._writable:
            return
        trial = self._backend.get_trial(trial_id)
        self._backend.check_trial_is_updatable(trial_id, trial.state)
        self._writable.add(trial_id)

    # -- buffered writes -------------------------------------------------------

    def set_trial_param(
        self,
        trial_id: int,
        param_name: str,
        param_value_internal: float,
        distribution: BaseDistribution,
    ) -> None:
        if not self._batching:
            super().set_trial_param(trial_id, param_name, param_value_internal, distribution)
            return
        from optuna.distributions import check_distribution_compatibility

        self._check_writable(trial_id)
        with self._lock:
            ids = self._trial_id_to_study_id_and_number.get(trial_id)
            known = self._studies[ids[0]].param_distribution.get(param_name) if ids else None
        if known is None:
            # A name this storage has not seen yet: written through, where Optuna
            # checks it against the study's earlier trials (once per name).
            self.flush()
            super().set_trial_param(trial_id, param_name, param_value_internal, distribution)
            return
        check_distribution_compatibility(known, distribution)  # ValueError now, as Optuna
        with self._buffer_lock:
            self._buffer.append(("param", trial_id, param_name, param_value_internal, distribution))

    def set_trial_user_attr(self, trial_id: int, key: str, value: Any) -> None:
        if not self._batching:
            super().set_trial_user_attr(trial_id, key, value)
            return
        self._check_writable(trial_id)
        with self._buffer_lock:
            self._buffer.append(("user", trial_id, key, value, None))

    def set_trial_system_attr(self, trial_id: int, key: str, value: Any) -> None:
        if not self._batching:
            super().set_trial_system_attr(trial_id, key, value)
            return
        self._check_writable(trial_id)
        with self._buffer_lock:
            self._buffer.append(("system", trial_id, key, value, None))

    def flush(self) -> None:
        """Writes the buffered writes in one transaction.

        Each trial is looked up and checked once; parameters are added together;
        attributes (last write wins, as with separate writes) become one upsert
        statement per table on SQLite and PostgreSQL.
        """
        with self._buffer_lock:
            if not self._buffer:
                return
            ops, self._buffer = self._buffer, []
            from optuna.distributions import check_distribution_compatibility, distribution_to_json

            models, _create_scoped_session = _rdb.models, _rdb.scoped_session
            backend = self._backend
            attrs: dict[tuple[str, int, str], Any] = {}
            with _create_scoped_session(backend.scoped_session, True) as session:
                for trial_id in dict.fromkeys(op[1] for op in ops):
                    trial = models.TrialModel.find_or_raise_by_id(trial_id, session)
                    backend.check_trial_is_updatable(trial_id, trial.state)
                for kind, trial_id, key, value, distribution in ops:
                    if kind != "param":
                        attrs[(kind, trial_id, key)] = value
                        continue
                    with self._lock:
                        study_id, _ = self._trial_id_to_study_id_and_number[trial_id]
                        known = self._studies[study_id].param_distribution.get(key)
                    if known is None:
                        # The first time this name is seen: Optuna's own path checks it
                        # against the study's earlier trials.
                        backend._set_trial_param_without_commit(
                            session, trial_id, key, value, distribution, None
                        )
                        with self._lock:
                            self._studies[study_id].param_distribution[key] = distribution
                        continue
                    check_distribution_compatibility(known, distribution)
                    session.add(
                        models.TrialParamModel(
                            trial_id=trial_id,
                            param_name=key,
                            param_value=value,
                            distribution_json=distribution_to_json(distribution),
                        )
                    )
                self._write_attrs(session, attrs)

    def _write_attrs(self, session: Any, attrs: dict[tuple[str, int, str], Any]) -> None:
        import json

        models = _rdb.models

        backend = self._backend
        for kind, model in (
            ("user", models.TrialUserAttributeModel),
            ("system", models.TrialSystemAttributeModel),
        ):
            mine = [
                (trial_id, key, value) for (k, trial_id, key), value in attrs.items() if k == kind
            ]
            if not mine:
                continue
            dialect = backend.engine.name
            if dialect in ("sqlite", "postgresql"):
                from sqlalchemy.dialects import postgresql, sqlite

                insert = sqlite.insert if dialect == "sqlite" else postgresql.insert
                rows = [{"trial_id": t, "key": k, "value_json": json.dumps(v)} for t, k, v in mine]
                statement = insert(model).values(rows)
                session.execute(
                    statement.on_conflict_do_update(
                        index_elements=[model.trial_id, model.key],
                        set_={"value_json": statement.excluded.value_json},
                    )
                )
            else:
                for trial_id, key, value in mine:
                    backend._set_trial_attr_without_commit(session, model, trial_id, key, value)

    def drop_connections(self) -> None:
        """Closes this thread's session and the pooled connections; the next query
        opens new ones. For after a Ctrl-C or SIGTERM: one that lands inside a query
        leaves that query's statement open on a pooled connection (its traceback
        holds the cursor). On SQLite in WAL mode the statement pins the snapshot it
        read, so the connection's next write fails at once, "database is locked",
        once another worker has committed since: the stopped trial could not be
        written down and stayed RUNNING."""
        self._backend.scoped_session.remove()
        self._backend.engine.dispose()

    def count_trials(self, study_id: int, states: Sequence[TrialState]) -> int:
        """Trials of the study in ``states``, counted by the database (one cheap
        query, where ``get_n_trials`` would load every unfinished trial)."""
        self.flush()
        models, _create_scoped_session = _rdb.models, _rdb.scoped_session
        from sqlalchemy import func

        with _create_scoped_session(self._backend.scoped_session) as session:
            return int(
                session.query(func.count(models.TrialModel.trial_id))
                .filter(models.TrialModel.study_id == study_id)
                .filter(models.TrialModel.state.in_(list(states)))
                .scalar()
            )

    def trial_ids_with_user_attr(
        self, study_id: int, key: str, value: Any, states: Sequence[TrialState]
    ) -> list[int]:
        """The trials of the study in ``states`` whose user attribute ``key`` is
        ``value``, in number order: one query, where reading the study's trials
        would build every one of them (a trial's repeat lookups, on every trial)."""
        import json

        self.flush()
        models, _create_scoped_session = _rdb.models, _rdb.scoped_session
        trial, attr = models.TrialModel, models.TrialUserAttributeModel
        with _create_scoped_session(self._backend.scoped_session) as session:
            rows = (
                session.query(trial.trial_id)
                .join(attr, attr.trial_id == trial.trial_id)
                .filter(trial.study_id == study_id)
                .filter(trial.state.in_(list(states)))
                .filter(attr.key == key)
                .filter(attr.value_json == json.dumps(value))
                .order_by(trial.number)
                .all()
            )
        return [int(row[0]) for row in rows]

    def count_with_user_attr(self, study_id: int, key: str, states: Sequence[TrialState]) -> int:
        """Trials of the study in ``states`` with a user attribute ``key`` that is not
        null, counted by the database."""
        self.flush()
        models, _create_scoped_session = _rdb.models, _rdb.scoped_session
        from sqlalchemy import func

        trial, attr = models.TrialModel, models.TrialUserAttributeModel
        with _create_scoped_session(self._backend.scoped_session) as session:
            return int(
                session.query(func.count(trial.trial_id))
                .join(attr, attr.trial_id == trial.trial_id)
                .filter(trial.study_id == study_id)
                .filter(trial.state.in_(list(states)))
                .filter(attr.key == key)
                .filter(attr.value_json != "null")
                .scalar()
            )

    def count_by_state(self, study_id: int) -> dict[TrialState, int]:
        """The study's trials per state, in one query (a worker's claim needs them all)."""
        self.flush()
        models, _create_scoped_session = _rdb.models, _rdb.scoped_session
        from sqlalchemy import func

        model = models.TrialModel
        with _create_scoped_session(self._backend.scoped_session) as session:
            rows = (
                session.query(model.state, func.count(model.trial_id))
                .filter(model.study_id == study_id)
                .group_by(model.state)
                .all()
            )
        return {TrialState(state): int(n) for state, n in rows}

    def get_study_system_attrs(self, study_id: int) -> dict[str, Any]:
        if not self.hide_dashboard:
            return super().get_study_system_attrs(study_id)
        import json

        models, _create_scoped_session = _rdb.models, _rdb.scoped_session

        model = models.StudySystemAttributeModel
        with _create_scoped_session(self._backend.scoped_session) as session:
            models.StudyModel.find_or_raise_by_id(study_id, session)
            rows = (
                session.query(model.key, model.value_json)
                .filter(model.study_id == study_id)
                .filter(~model.key.startswith(DASHBOARD_PREFIX, autoescape=True))
                .all()
            )
        return {key: json.loads(value) for key, value in rows}

    # -- everything that reads or changes state sees the buffer first ---------

    def get_trial(self, trial_id: int) -> FrozenTrial:
        """The trial, from the cache where it finished; a finished trial read from the
        database is kept there. Optuna caches only what ``get_all_trials`` read, where
        the trial this process made still stands as it was while it ran, so the
        dashboard note and the repeat lookups read the trial just finished whole
        again (six queries each). A finished trial does not change (Optuna refuses
        writes to it; :meth:`reread_trial` after a change made past Optuna)."""
        self.flush()
        with self._lock:
            cached = self._get_cached_trial(trial_id)
        if cached is not None:
            return cached
        trial = self._backend.get_trial(trial_id)
        if trial.state.is_finished():
            self._keep(trial)
        return trial

    def _keep(self, trial: FrozenTrial) -> None:
        """``trial`` in the cache, in the place of the copy it has there (if any)."""
        with self._lock:
            place = self._trial_id_to_study_id_and_number.get(trial._trial_id)
            if place is not None:
                self._studies[place[0]].trials[place[1]] = trial

    def reread_trial(self, trial_id: int) -> None:
        """Reads a trial again into the cache after a change made past Optuna (an
        artifact record removed from a finished trial): the cached copy is replaced."""
        with self._lock:
            known = trial_id in self._trial_id_to_study_id_and_number
        if known:
            self._keep(self._backend.get_trial(trial_id))

    def get_trial_system_attrs(self, trial_id: int) -> dict[str, Any]:
        """The stored attributes with the buffered ones over them, without writing
        the buffer first: Optuna reads a trial's system attributes before each
        ``set_constraint``, and a flush there would cost a transaction each. One
        query of the attributes' table, where reading the whole trial took six."""
        import json

        with self._buffer_lock:  # the buffer first: a flush meanwhile only stores it
            pending = [(op[2], op[3]) for op in self._buffer if op[:2] == ("system", trial_id)]
        models, _create_scoped_session = _rdb.models, _rdb.scoped_session
        model = models.TrialSystemAttributeModel
        with _create_scoped_session(self._backend.scoped_session) as session:
            rows = session.query(model.key, model.value_json).filter(model.trial_id == trial_id)
            attrs = {key: json.loads(value) for key, value in rows.all()}
            if not attrs:
                models.TrialModel.find_or_raise_by_id(trial_id, session)  # KeyError if none
        attrs.update(pending)
        return attrs

    def get_all_trials(
        self,
        study_id: int,
        deepcopy: bool = True,
        states: Container[TrialState] | None = None,
    ) -> list[FrozenTrial]:
        self.flush()
        return super().get_all_trials(study_id, deepcopy=deepcopy, states=states)

    def get_best_trial(self, study_id: int) -> FrozenTrial:
        self.flush()
        return super().get_best_trial(study_id)

    def set_trial_state_values(
        self, trial_id: int, state: TrialState, values: Sequence[float] | None = None
    ) -> bool:
        self.flush()
        changed = super().set_trial_state_values(trial_id, state, values)
        if changed and state.is_finished():
            self._writable.discard(trial_id)
        elif changed:
            self._writable.add(trial_id)
        return changed

    def set_trial_intermediate_value(
        self, trial_id: int, step: int, intermediate_value: float
    ) -> None:
        self.flush()
        super().set_trial_intermediate_value(trial_id, step, intermediate_value)

    def create_new_trial(self, study_id: int, template_trial: FrozenTrial | None = None) -> int:
        self.flush()
        trial_id = super().create_new_trial(study_id, template_trial)
        if template_trial is None or not template_trial.state.is_finished():
            self._writable.add(trial_id)
        return trial_id

    def delete_study(self, study_id: int) -> None:
        self.flush()
        super().delete_study(study_id)

    def _get_stale_trial_ids(self, study_id: int) -> list[int]:
        self.flush()
        return super()._get_stale_trial_ids(study_id)

    def get_heartbeat_stale_trial_callback(self) -> Callable[[Any, FrozenTrial], None] | None:
        return super().get_heartbeat_stale_trial_callback()
