"""MLflow tracking of a search: one parent run per study, one child run per trial.

:class:`MlflowObserver` is a :class:`~nasmlcn.search.SearchObserver`:
the CLI makes one when ``SearchConfig.mlflow`` (``nasmlcn search --mlflow URI``, or
``mlflow = "..."`` in a recipe) names a tracking URI and hands it to the search
among its observers; the search itself knows nothing of MLflow. It opens the
store in ``on_checked``, once the search's configuration is checked. The URI is any that MLflow opens: a folder
(its file store), ``sqlite:///mlflow.db``, or a tracking server's ``http(s)://``
address.

What lands where (experiment ``nasmlcn``, or ``$MLFLOW_EXPERIMENT_NAME``):

- the study's **parent run** (named after the study): the identity's settings as
  params (devices, mem, space, objectives, evaluator, epochs, ...), the device
  pool, the other settings as tags; at the end, the completed trials and the
  best values (single objective) or the size of the Pareto front;
- one **child run per trial** (``mlflow.parentRunId`` is the parent's): the
  sampled parameters, the lane mix and the device pool as params; the predicted
  latency, inference latency and memory (``predicted.*``) when it starts; the
  validation accuracy and loss of every epoch (``val_accuracy``, ``val_loss``,
  one step per epoch) as it trains; the final objectives under the study's
  metric names (``accuracy``, ``latency_s``, ...); the trial's state as the tag
  ``state`` (COMPLETE, PRUNED or FAIL) and ``arch.json`` as an artifact.

A retried trial (its worker died, or Ctrl-C stopped it) is a new Optuna trial
with a new number. Its runs are keyed by the tags ``nasmlcn.study_key`` (the
study's name and creation time) and ``nasmlcn.trial`` (the number of the trial
it retries, which Optuna's retry callback records), so the retry finds the run
of the failed attempt and continues it: one run per trial, whatever the number
of attempts, and an epoch already logged is not logged twice. In a
``--workers`` pool, the parent process opens the parent run (and closes it when
every worker has stopped); each worker logs its own trials under it.

Why not optuna-integration's ``MLflowCallback`` (checked in
optuna-integration 5.0): it is deprecated since 4.9 (to be removed in 6.0); it
drives MLflow's global fluent API (``mlflow.set_tracking_uri``,
``set_experiment``, ``start_run``), changing the caller's MLflow state from
inside a library call; it nests only under a fluent run active in the same
thread; it creates a trial's run when the trial has ended, too late for per-epoch
metrics; and it names runs by the trial's own number, so a retried trial gets a
second run (reusing a run needs ``mlflow_run_id`` in the trial's system
attributes, which nasmlcn would have to write through Optuna's storage
internals). MLflow's own client (:class:`mlflow.tracking.MlflowClient`) does all
of it with no global state. W&B's callback in optuna-integration has the same
shape and the same deprecation, so ``--wandb`` is left out.

MLflow is imported only when an observer is made (seconds); without it the
observer refuses in one line naming the extra (``pip install
'nasmlcn[tracking]'``). MLflow 3 refuses its file store unless
``MLFLOW_ALLOW_FILE_STORE`` is set; a folder given as the URI is the user's
explicit choice, so the observer allows it while it opens the store. A SQLite
store's artifacts go to ``mlartifacts/`` beside the database file (MLflow's
default, ``./mlruns`` under the working directory, would write where nobody
asked).
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nasmlcn._storage_url import redact_url
from nasmlcn._tracking_uri import check_tracking_uri
from nasmlcn.errors import TrackingError, option
from nasmlcn.search import IDENTITY_FIELDS, SearchObserver, SearchResult, SearchStart, TrialOutcome
from nasmlcn.study import TrialRecord
from nasmlcn.tracking._store import artifact_location, open_error, opening, quiet_mlflow

if TYPE_CHECKING:
    import optuna
    from optuna.trial import FrozenTrial

    from nasmlcn.planning import Plan
    from nasmlcn.search import EpochReport

logger = logging.getLogger(__name__)

EXTRA = "tracking"
DEFAULT_EXPERIMENT = "nasmlcn"

KIND_TAG = "nasmlcn.kind"  # "study" (the parent run) or "trial"
STUDY_KEY_TAG = "nasmlcn.study_key"
STUDY_TAG = "nasmlcn.study"
TRIAL_TAG = "nasmlcn.trial"  # the trial's number (the original's, for a retry)
ATTEMPT_TAG = "nasmlcn.optuna_trial"  # the Optuna trial of the latest attempt
STATE_TAG = "state"
PARENT_TAG = "mlflow.parentRunId"

_FIND_WAITS = (0.05, 0.1, 0.2, 0.4, 0.8)
"""Seconds between tries of a run search that met another worker's half-written file."""

_STATUS = {"COMPLETE": "FINISHED", "PRUNED": "KILLED", "FAIL": "FAILED"}
"""A trial's state -> its run's MLflow status (the tag ``state`` keeps the state)."""

_STUDY_PARAMS = IDENTITY_FIELDS
"""The study's params: its identity, which never changes (an MLflow param cannot)."""
_STUDY_TAGS = ("sampler", "seed", "trials", "prune", "storage")
"""Settings a continued study may change: tags, set again by every run."""


def missing_mlflow() -> str:
    """The one line that says MLflow is missing and which extra brings it."""
    return (
        f"--mlflow needs MLflow, which is not installed: pip install 'nasmlcn[{EXTRA}]' "
        "(or pip install mlflow)"
    )


@dataclass
class _Run:
    """A trial's MLflow run, and the epochs it has already logged per metric."""

    run_id: str
    logged: dict[str, set[int]] = field(default_factory=dict)


class MlflowObserver(SearchObserver):
    """Logs a search to MLflow (see the module docstring).

    Args:
        uri: MLflow tracking URI: a folder, ``sqlite:///FILE``, ``http(s)://HOST``.
        experiment: Experiment name (None: ``$MLFLOW_EXPERIMENT_NAME``, else
            ``nasmlcn``); created when missing.
        trials: Log each trial as a child run (False: a ``--workers`` pool's
            parent process, whose workers log their own trials).
        end_parent: Close the parent run at the end of the run (False: a pool's
            worker, whose parent process closes it when every worker has stopped).

    Raises:
        TrackingError: MLflow is not installed, or cannot open the URI or the
            experiment.
    """

    def __init__(
        self,
        uri: str,
        *,
        experiment: str | None = None,
        trials: bool = True,
        end_parent: bool = True,
    ) -> None:
        uri = check_tracking_uri(uri)
        try:
            import mlflow.tracking  # noqa: F401  (missing: say so now)
        except ImportError:
            raise TrackingError(missing_mlflow()) from None
        self.uri = self.tracking_uri = uri
        self.shown = redact_url(uri)
        self.trials = trials
        self.end_parent = end_parent
        self.experiment = experiment
        self.client: Any = None
        self.experiment_id = ""
        self.study: optuna.Study | None = None
        self.study_key = ""
        self.parent_id: str | None = None
        self.runs: dict[int, _Run] = {}

    def for_workers(self) -> tuple[SearchObserver | None, Callable[[], SearchObserver] | None]:
        """With workers: this process opens and closes the study's parent run, and
        each worker logs its own trials under it."""
        here = MlflowObserver(self.uri, experiment=self.experiment, trials=False)
        made = functools.partial(
            MlflowObserver, self.uri, experiment=self.experiment, end_parent=False
        )
        return here, made

    def on_checked(self, setup: Any = None) -> None:
        """Opens the tracking store and the experiment (once the search's
        configuration is checked: a bad one opens nothing)."""
        from mlflow.tracking import MlflowClient

        if self.client is not None:
            return
        name = self.experiment or os.environ.get("MLFLOW_EXPERIMENT_NAME") or DEFAULT_EXPERIMENT
        try:
            with quiet_mlflow(), opening(self.uri):
                self.client = MlflowClient(tracking_uri=self.uri)
                self.experiment_id = self._experiment(name)
        except TrackingError:
            raise
        except Exception as err:
            raise TrackingError(open_error(self.shown, self.uri, err)) from None

    # -- the study's parent run ------------------------------------------------

    def _experiment(self, name: str) -> str:
        found = self.client.get_experiment_by_name(name)
        if found is None:
            try:
                return str(self.client.create_experiment(name, artifact_location(self.uri)))
            except Exception:
                found = self.client.get_experiment_by_name(name)  # made at the same moment
                if found is None:
                    raise
        if found.lifecycle_stage == "deleted":
            raise TrackingError(
                f"{option('mlflow')} {self.shown!r}: experiment {name!r} is deleted; restore it "
                "(mlflow experiments restore) or set MLFLOW_EXPERIMENT_NAME to another name"
            )
        return str(found.experiment_id)

    def on_study(self, study: optuna.Study) -> None:
        from nasmlcn.study import StudyRecord, hold, storage_of

        self.study = study
        record = StudyRecord.read(study)
        created = record.created or ""
        self.study_key = hashlib.sha256(f"{study.study_name}\0{created}".encode()).hexdigest()[:16]
        with hold(storage_of(study)):  # workers started together make one parent run
            found = self._find({KIND_TAG: "study"})
            if found is not None:
                self.parent_id = found
                self.client.update_run(found, status="RUNNING")
                return
            run = self.client.create_run(
                self.experiment_id,
                run_name=study.study_name,
                tags={
                    KIND_TAG: "study",
                    STUDY_KEY_TAG: self.study_key,
                    STUDY_TAG: study.study_name,
                },
            )
        self.parent_id = run.info.run_id
        config = record.config
        params = {k: _text(config[k]) for k in _STUDY_PARAMS if config.get(k) is not None}
        params["device_pool"] = _pool(
            (d.get("kind", "?"), d.get("memory_bytes", 0)) for d in record.devices or ()
        )
        self._log(self.parent_id, params=params)

    def on_start(self, start: SearchStart) -> None:
        if self.parent_id is None or self.study is None:
            return
        from nasmlcn.study import StudyRecord

        config = StudyRecord.read(self.study).config
        tags = {k: _text(config.get(k)) for k in _STUDY_TAGS if k in config}
        tags |= {"target_trials": str(start.target), "sampler": start.sampler}
        self.client.set_tag(self.parent_id, "directions", ",".join(start.directions))
        for key, value in tags.items():
            self.client.set_tag(self.parent_id, key, value)

    def on_end(self, result: SearchResult) -> None:
        if self.parent_id is None or not self.end_parent:
            return
        metrics: dict[str, float] = {
            "completed_trials": float(result.completed),
            "trials": float(result.n_trials),
        }
        if len(result.metric_names) == 1 and result.best and result.best[0].get("values"):
            for name, value in result.best[0]["values"].items():
                metrics[f"best.{name}"] = float(value)
        elif len(result.metric_names) > 1:
            metrics["pareto_front_size"] = float(len(result.best))
        self._log(self.parent_id, metrics=metrics)
        self.client.set_tag(self.parent_id, "stopped", result.stopped)
        status = "KILLED" if result.stopped in ("interrupted", "terminated") else "FINISHED"
        self.client.set_terminated(self.parent_id, status=status)

    # -- one child run per trial -------------------------------------------------

    def on_trial_start(self, number: int, index: int, lanes: str, plan: Plan) -> None:
        if not self.trials or self.study is None:
            return
        run = self._trial_run(number)
        self._log(
            run.run_id,
            params={
                "device_pool": _pool(
                    (d.device.kind, d.device.memory_bytes) for d in plan.per_device
                ),
                "assignment": _text(list(plan.placement.assignment)),
            },
            metrics={
                "predicted.latency": plan.makespan,
                "predicted.step_time": plan.step_time,
                "predicted.inference_latency_s": plan.inference_latency,
                "predicted.peak_memory_bytes": float(plan.peak_memory_bytes),
                "predicted.imbalance": plan.imbalance,
                "predicted.params": float(plan.costs.params),
            },
        )

    def on_epoch(self, number: int, report: EpochReport, epochs: int) -> None:
        # The runner lets an epoch hook's exception end the trial (a pruner's
        # stop); tracking must never do that, so it is caught here.
        run = self.runs.get(number)
        if run is None:
            return
        try:
            values = {"val_accuracy": report.val_accuracy, "val_loss": report.val_loss}
            for key, value in values.items():
                steps = run.logged.setdefault(key, set())
                if value is not None and report.epoch not in steps:
                    self.client.log_metric(run.run_id, key, float(value), step=report.epoch)
                    steps.add(report.epoch)
        except Exception:
            logger.warning("MLflow: epoch %d of trial %d not logged", report.epoch, number)

    def on_trial_end(self, outcome: TrialOutcome) -> None:
        if not self.trials or self.study is None:
            return
        # not started (its on_trial_start failed): the run it may have made is looked for
        run = self.runs.pop(outcome.number, None) or self._trial_run(outcome.number, look=True)
        frozen = self._frozen(outcome.number)
        metrics: dict[str, float] = {}
        if outcome.values is not None:
            names = self.study.metric_names or [f"value_{i}" for i in range(len(outcome.values))]
            metrics |= {name: float(v) for name, v in zip(names, outcome.values, strict=True)}
        record = TrialRecord.of(frozen)
        training = record.training
        for key in ("seconds", "step_seconds", "images_per_second", "epochs_run"):
            value = training.get(key) if isinstance(training, dict) else None
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                metrics[f"training.{key}"] = float(value)
        metrics["trial_seconds"] = outcome.seconds
        self._log(run.run_id, metrics=metrics)
        self.client.set_tag(run.run_id, STATE_TAG, outcome.state)
        if outcome.reason:
            self.client.set_tag(run.run_id, "reason", _text(outcome.reason))
        if record.arch:
            self._log_arch(run.run_id, record.arch)
        self.client.set_terminated(run.run_id, status=_STATUS.get(outcome.state, "FINISHED"))

    # -- helpers -----------------------------------------------------------------

    def _trial_run(self, number: int, *, look: bool = False) -> _Run:
        """The run of trial ``number``: the one its earlier attempts logged to (a
        retry), else a new child run of the study's. A first attempt's number is
        new, so only a retry's run is looked for in the store, or any trial's with
        ``look``."""
        frozen = self._frozen(number)
        record = TrialRecord.of(frozen)
        original = record.retry_of if record.retry_of is not None else number
        found = None
        if look or record.retry_of is not None:
            found = self._find({KIND_TAG: "trial", TRIAL_TAG: str(original)})
        if found is not None:
            run = _Run(found)
            for key in ("val_accuracy", "val_loss"):
                history = self.client.get_metric_history(found, key)
                run.logged[key] = {m.step for m in history}
            self.client.update_run(found, status="RUNNING")
        else:
            tags = {
                KIND_TAG: "trial",
                STUDY_KEY_TAG: self.study_key,
                STUDY_TAG: self.study.study_name if self.study is not None else "",
                TRIAL_TAG: str(original),
            }
            if self.parent_id is not None:
                tags[PARENT_TAG] = self.parent_id
            created = self.client.create_run(
                self.experiment_id, run_name=f"trial {original}", tags=tags
            )
            run = _Run(created.info.run_id)
            params = {k: _text(v) for k, v in frozen.params.items()}
            for key in ("lanes", "lane_mix", "num_lanes"):
                if getattr(record, key) is not None:
                    params[key] = _text(getattr(record, key))
            self._log(run.run_id, params=params)
        self.client.set_tag(run.run_id, ATTEMPT_TAG, str(number))
        self.runs[number] = run
        return run

    def _find(self, tags: dict[str, str]) -> str | None:
        """The oldest active run of this study with ``tags``, or None.

        MLflow's file store reads every run of the experiment to search, and
        another worker may be writing one at that moment: MLflow then raises
        ``Metric '...' is malformed. No data found.`` for the file it caught
        half-written. The search is tried again after a short wait
        (:data:`_FIND_WAITS`); an error that outlasts them is raised."""
        wanted = {STUDY_KEY_TAG: self.study_key, **tags}
        query = " and ".join(f"tags.`{k}` = '{v}'" for k, v in wanted.items())
        for wait in (*_FIND_WAITS, None):
            try:
                runs = self.client.search_runs(
                    [self.experiment_id],
                    filter_string=query,
                    order_by=["attributes.start_time ASC"],
                )
                break
            except Exception:
                if wait is None:
                    raise
                time.sleep(wait)
        return str(runs[0].info.run_id) if runs else None

    def _frozen(self, number: int) -> FrozenTrial:
        from nasmlcn.study import storage_of, study_id_of

        assert self.study is not None
        storage = storage_of(self.study)
        trial_id = storage.get_trial_id_from_study_id_trial_number(study_id_of(self.study), number)
        return storage.get_trial(trial_id)

    def _log(
        self,
        run_id: str,
        *,
        params: dict[str, str] | None = None,
        metrics: dict[str, float] | None = None,
    ) -> None:
        from mlflow.entities import Metric, Param

        now = int(time.time() * 1000)
        self.client.log_batch(
            run_id,
            metrics=[Metric(k, float(v), now, 0) for k, v in (metrics or {}).items()],
            params=[Param(k, v) for k, v in (params or {}).items()],
        )

    def _log_arch(self, run_id: str, arch: dict[str, Any]) -> None:
        from nasmlcn.specs import arch_from_dict, save_arch

        with tempfile.TemporaryDirectory(prefix="nasmlcn-mlflow-") as folder:
            path = Path(folder) / "arch.json"
            save_arch(arch_from_dict(arch), path)
            self.client.log_artifact(run_id, str(path))


def _pool(devices: Iterable[tuple[str, int]]) -> str:
    """``8xK80 (12.0 GiB)`` for eight K80s of 12 GiB: devices by kind and memory."""
    from nasmlcn.hardware import format_bytes

    counts = Counter((str(name), int(memory)) for name, memory in devices)
    return ", ".join(f"{n}x{name} ({format_bytes(memory)})" for (name, memory), n in counts.items())


def _text(value: Any, limit: int = 500) -> str:
    """A param or tag value: text, JSON for lists, cut to ``limit`` characters."""
    text = json.dumps(value) if isinstance(value, (list, dict)) else str(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
