"""``nasmlcn dashboard``: optuna-dashboard on a study storage.

It serves optuna-dashboard's own WSGI application (``optuna_dashboard.wsgi``)
with three differences from running ``optuna-dashboard URL``:

- the storage is opened like every nasmlcn command opens it (WAL journaling on
  SQLite, one-line errors for a bad URL or a missing file) and read through
  Optuna's cached storage, so polling a large study re-reads only new trials;
- constraint feasibility shows: Optuna 5 stores each ``trial.set_constraint``
  value under its own ``constraints:<name>`` system attribute, while
  optuna-dashboard 0.21 reads only the older ``constraints`` list, so the trials
  it receives get that list derived from the named values;
- studies written by nasmlcn that lack nasmlcn's figures and notes (written
  before this version, or by a search that was killed) get them before serving.

It binds to 127.0.0.1 unless told otherwise: the dashboard can edit and delete
studies, so it should not listen on a network by accident.
"""

from __future__ import annotations

import copy
import logging
import socket
from collections.abc import Container
from socketserver import ThreadingMixIn
from typing import TYPE_CHECKING, Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from nasmlcn.errors import DashboardError, option
from nasmlcn.study import CONSTRAINT_PREFIX, BufferedStorage

if TYPE_CHECKING:
    from optuna.storages import BaseStorage
    from optuna.trial import FrozenTrial, TrialState

logger = logging.getLogger(__name__)

LOOPBACK = ("127.0.0.1", "localhost", "::1")


class DashboardStorage(BufferedStorage):
    """The storage optuna-dashboard reads: nasmlcn's cached storage whose trials
    also carry the ``constraints`` list that optuna-dashboard shows as feasibility."""

    def get_trial(self, trial_id: int) -> FrozenTrial:
        return _with_constraint_list(super().get_trial(trial_id))

    def get_all_trials(
        self,
        study_id: int,
        deepcopy: bool = True,
        states: Container[TrialState] | None = None,
    ) -> list[FrozenTrial]:
        trials = super().get_all_trials(study_id, deepcopy=deepcopy, states=states)
        return [_with_constraint_list(t) for t in trials]


def _with_constraint_list(trial: FrozenTrial) -> FrozenTrial:
    """``trial`` with ``system_attrs["constraints"]``, the named constraint values in
    name order, when it has named constraints and no such list (a shallow copy:
    the cached trial is left as it is)."""
    system = trial.system_attrs
    if "constraints" in system:
        return trial
    named = sorted((k, v) for k, v in system.items() if k.startswith(CONSTRAINT_PREFIX))
    if not named:
        return trial
    clone = copy.copy(trial)
    clone.system_attrs = {**system, "constraints": [float(v) for _, v in named]}
    return clone


def open_dashboard_storage(url: str) -> DashboardStorage:
    """Opens ``url`` for the dashboard (no heartbeat: it runs no trials).

    Raises:
        StorageError: Bad URL, missing driver, missing SQLite file, or a database
            without Optuna's tables (it is left untouched).
    """
    from nasmlcn.study import open_storage, unbuffered

    opened = open_storage(url, create=False, heartbeat=False)
    return DashboardStorage(unbuffered(opened))


def prepare_studies(storage: BaseStorage, *, refresh: bool = False) -> list[str]:
    """Saves nasmlcn's figures and notes into the nasmlcn studies of ``storage``
    that lack them (all of them with ``refresh``); returns the names done.

    A study that fails is logged and skipped: the dashboard still shows it.
    """
    import warnings

    import optuna

    from nasmlcn.dashboard._refresh import GRAPH_ID_PREFIX, PLOT_DATA_PREFIX, refresh_study
    from nasmlcn.study import StudyRecord, frozen_study_id

    done = []
    for frozen in storage.get_all_studies():
        if not StudyRecord.read(frozen).made_by_nasmlcn:
            continue
        system = storage.get_study_system_attrs(frozen_study_id(frozen))
        has_figures = any(k.startswith(PLOT_DATA_PREFIX + GRAPH_ID_PREFIX) for k in system)
        if has_figures and not refresh:
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                study = optuna.load_study(study_name=frozen.study_name, storage=storage)
                refresh_study(study, notes="all" if refresh else "missing")
            done.append(frozen.study_name)
        except Exception:
            logger.warning("could not write figures into %s", frozen.study_name, exc_info=True)
    return done


class _QuietHandler(WSGIRequestHandler):
    """Request lines go to the log (debug), not to stderr."""

    def log_message(self, format: str, *args: Any) -> None:
        logger.debug("%s - " + format, self.address_string(), *args)


class _ThreadedServer(ThreadingMixIn, WSGIServer):
    daemon_threads = True  # a hung browser request never blocks Ctrl-C


class _ThreadedServer6(_ThreadedServer):
    """On an IPv6 address (``--host ::1``)."""

    address_family = socket.AF_INET6


def make_dashboard_server(
    url: str,
    host: str = "127.0.0.1",
    port: int = 8080,
    *,
    refresh: bool = False,
    artifacts: str | None = None,
) -> WSGIServer:
    """A bound (not yet serving) optuna-dashboard server on ``url``.

    The trials' artifacts (trained weights) are listed and downloadable when the
    search's artifact folder (``artifacts``, or the search's default for ``url``)
    exists.

    ``port`` 0 picks a free port (``server.server_port`` says which). Call
    ``serve_forever()`` on the result; ``shutdown()`` from another thread stops it.

    Raises:
        StorageError: The storage cannot be opened.
        DashboardError: ``host:port`` cannot be bound (in use, unknown host), or
            optuna-dashboard is not installed.
    """
    try:
        import optuna_dashboard
    except ImportError:
        raise DashboardError(
            "nasmlcn dashboard needs optuna-dashboard: pip install 'nasmlcn[dashboard]' "
            "(nasmlcn export writes the figures and an HTML report without it)"
        ) from None

    if not host.strip():  # '' would listen on every interface
        raise DashboardError(
            f"{option('host')} {host!r}: give an address, e.g. 127.0.0.1 (this machine), ::1, or "
            "0.0.0.0 (every interface)"
        )
    from nasmlcn.study import artifacts_dir, open_store

    folder = artifacts_dir(url, artifacts)
    if artifacts is not None and not folder.is_dir():  # the default may well be missing
        raise DashboardError(
            f"{option('artifacts')} {artifacts!r} is not a folder; give the search's"
        )
    storage = open_dashboard_storage(url)
    prepare_studies(storage, refresh=refresh)
    app = optuna_dashboard.wsgi(storage, open_store(folder) if folder.is_dir() else None)
    if host not in LOOPBACK:
        logger.warning(
            "the dashboard listens on %s: anyone who can reach it can edit and delete studies",
            host,
        )
    try:
        server_class = _ThreadedServer6 if ":" in host else _ThreadedServer
        return make_server(host, port, app, server_class=server_class, handler_class=_QuietHandler)
    except OSError as err:
        reason = err.strerror or str(err)
        hint = " (pass another --port)" if port else ""
        raise DashboardError(f"cannot listen on {host}:{port}: {reason}{hint}") from None
