"""MLflow tracking of real searches, read back with MLflow's own client: one parent
run per study, one child run per trial (a retried trial included), the values
each run holds, from one process and from a ``--workers`` pool."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from optuna.storages import RetryHeartbeatStaleTrialCallback
from optuna.trial import FrozenTrial

from nasmlcn.hardware import format_bytes, parse_size
from nasmlcn.search import (
    EpochCallback,
    EpochDecision,
    EpochReport,
    EvalRequest,
    Evaluation,
    ProxyEvaluator,
    SearchConfig,
)
from nasmlcn.specs import arch_from_dict, load_arch
from nasmlcn.study import load_existing_study
from tests.conftest import run_cli
from tests.search._worker_script import config as worker_config
from tests.tracking._tracked import tracked_search, tracked_workers

if TYPE_CHECKING:  # MLflow takes 0.9 s to import: only where a test reads a store
    from mlflow.entities import Run
    from mlflow.tracking import MlflowClient

ROOT = Path(__file__).resolve().parents[2]


def _client(uri: str) -> MlflowClient:
    """MLflow's client on ``uri``, as a user reads a store back. MLflow 3 opens a
    folder (its file store) only with ``MLFLOW_ALLOW_FILE_STORE=true``, which the
    user sets to read one; the observer sets it itself, only while it opens the
    folder, so the variable is set here only around the client's creation."""
    from mlflow.tracking import MlflowClient

    before = os.environ.get("MLFLOW_ALLOW_FILE_STORE")
    os.environ["MLFLOW_ALLOW_FILE_STORE"] = "true"
    try:
        return MlflowClient(uri)
    finally:
        if before is None:
            del os.environ["MLFLOW_ALLOW_FILE_STORE"]
        else:
            os.environ["MLFLOW_ALLOW_FILE_STORE"] = before


def _config(tmp_path: Path, mlflow: str, **kw: Any) -> SearchConfig:
    base: dict[str, Any] = {
        "devices": "2xK80",
        "mem": "12GB",
        "evaluator": "proxy",
        "objectives": ("accuracy", "latency"),
        "sampler": "random",
        "epochs": 3,
        "trials": 6,
        "storage": f"sqlite:///{tmp_path / 's.db'}",
        "study": "s",
        "seed": 1,
        "mlflow": mlflow,
    }
    base.update(kw)
    return SearchConfig(**base)


def _runs(uri: str) -> tuple[Run, list[Run]]:
    """The one parent run and its children (every run of the experiment is one)."""
    client = _client(uri)
    experiment = client.get_experiment_by_name("nasmlcn")
    assert experiment is not None
    runs = client.search_runs([experiment.experiment_id])
    parents = [r for r in runs if r.data.tags.get("nasmlcn.kind") == "study"]
    assert len(parents) == 1, [r.info.run_name for r in parents]
    (parent,) = parents
    children = [r for r in runs if r is not parent]
    assert all(r.data.tags["mlflow.parentRunId"] == parent.info.run_id for r in children)
    return parent, children


def _check_trial_runs(uri: str, config: SearchConfig) -> list[Run]:
    """Each trial's run holds the values of the trial's latest attempt (a retry is
    a new Optuna trial that continues the run of the trial it retries); returns
    the children."""
    client = _client(uri)
    parent, children = _runs(uri)
    study = load_existing_study("s", config.storage)
    finished = [t for t in study.trials if t.state.is_finished()]
    latest: dict[int, FrozenTrial] = {}  # the original trial's number -> last attempt
    for trial in finished:
        retried = RetryHeartbeatStaleTrialCallback.retried_trial_number(trial)
        latest[trial.number if retried is None else retried] = trial
    by_number = {int(r.data.tags["nasmlcn.trial"]): r for r in children}
    assert len(by_number) == len(children)  # one run per trial, whatever its attempts
    assert sorted(by_number) == sorted(latest)
    memory = format_bytes(parse_size("12GB"))
    assert parent.data.params["devices"] == config.devices
    assert parent.info.status == "FINISHED"
    for number, trial in latest.items():
        run = by_number[number]
        assert run.data.tags["nasmlcn.optuna_trial"] == str(trial.number)
        assert run.data.tags["state"] == trial.state.name
        assert run.data.params["lane_mix"] == trial.user_attrs["lane_mix"]
        assert run.data.params["device_pool"] == f"{config.devices} ({memory})"  # 11.2 GiB
        assert {k: run.data.params[k] for k in trial.params} == {
            k: str(v) for k, v in trial.params.items()
        }
        predicted = trial.user_attrs["predicted"]
        assert run.data.metrics["predicted.latency"] == predicted["latency"]
        assert run.data.metrics["predicted.peak_memory_bytes"] == predicted["peak_memory_bytes"]
        if trial.state.name == "COMPLETE":
            assert [run.data.metrics[n] for n in study.metric_names or []] == trial.values
        else:  # a pruned trial has no final objectives (Optuna keeps its last epoch's)
            assert not set(study.metric_names or []) & set(run.data.metrics)
        per_epoch = trial.user_attrs.get("training", {}).get("val_accuracy_per_epoch", [])
        history = client.get_metric_history(run.info.run_id, "val_accuracy")
        assert [(m.step, m.value) for m in history] == list(enumerate(per_epoch, start=1))
        arch = Path(client.download_artifacts(run.info.run_id, "arch.json"))
        assert load_arch(arch) == arch_from_dict(trial.user_attrs["arch"])
    return children


def test_a_search_logs_one_parent_run_and_one_child_run_per_trial(tmp_path: Path) -> None:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    # pruning on after 3 trials: PRUNED trials, with fewer epochs, among them
    # (seed 3 samples trials 3-5 below the median of the first ones; seed 1 none)
    config = _config(
        tmp_path,
        uri,
        objectives=("accuracy",),
        trials=8,
        seed=3,
        prune_min_trials=3,
        prune_threshold=-1.0,
    )
    result = tracked_search(config)
    children = _check_trial_runs(uri, config)
    assert len(children) == len(result.run_trials) == 8
    states = {r.data.tags["state"] for r in children}
    assert "PRUNED" in states
    assert "COMPLETE" in states
    parent, _ = _runs(uri)
    assert parent.data.metrics["best.accuracy"] == result.best[0]["values"]["accuracy"]
    # the artifacts lie beside the database, not in the working directory
    assert (tmp_path / "mlartifacts").is_dir()
    assert not Path("mlruns").exists()


class _Interrupting(ProxyEvaluator):
    """Ctrl-C after trial 2's second epoch, the first time it runs."""

    def __init__(self) -> None:
        super().__init__()
        self.stopped = False

    def evaluate(self, job: EvalRequest, on_epoch: EpochCallback) -> Evaluation:
        def relay(report: EpochReport) -> EpochDecision:
            decision = on_epoch(report)
            if job.trial == 2 and report.epoch == 2 and not self.stopped:
                self.stopped = True
                raise KeyboardInterrupt
            return decision

        return super().evaluate(job, relay)


def test_a_retried_trial_continues_its_run_instead_of_adding_one(tmp_path: Path) -> None:
    uri = str(tmp_path / "mlruns")  # a folder: MLflow's file store
    config = _config(tmp_path, uri, trials=4, prune=False)
    assert tracked_search(config, evaluator=_Interrupting()).stopped == "interrupted"
    _, children = _runs(uri)
    (stopped,) = [r for r in children if r.data.tags["nasmlcn.trial"] == "2"]
    assert stopped.data.tags["state"] == "FAIL"
    assert stopped.info.status == "FAILED"
    resumed = tracked_search(config)  # runs the queued copy (trial 3) first
    assert resumed.run_trials[0].number == 3
    children = _check_trial_runs(uri, config)
    assert len(children) == 4  # trials 0, 1, 2 (retried as 3) and 4
    (retried,) = [r for r in children if r.data.tags["nasmlcn.trial"] == "2"]
    assert retried.info.run_id == stopped.info.run_id
    assert retried.data.tags["nasmlcn.optuna_trial"] == "3"
    assert retried.data.tags["state"] == "COMPLETE"
    history = _client(uri).get_metric_history(retried.info.run_id, "val_accuracy")
    assert [m.step for m in history] == [1, 2, 3]  # epochs 1-2 were not logged twice


def test_a_real_training_search_logs_loss_and_accuracy_per_epoch(tmp_path: Path) -> None:
    uri = str(tmp_path / "mlruns")
    config = _config(
        tmp_path,
        uri,
        devices="1xK80",
        flops="0.05x",
        evaluator="train",
        objectives=("accuracy",),
        dataset="synthetic",
        epochs=2,
        train_limit=50,
        val_limit=30,
        trials=2,
        run_on="cpu",
        prune=False,
    )
    tracked_search(config)
    client = _client(uri)
    children = _check_trial_runs(uri, config)
    study = load_existing_study("s", config.storage)
    for run in children:
        trial = study.trials[int(run.data.tags["nasmlcn.trial"])]
        losses = client.get_metric_history(run.info.run_id, "val_loss")
        assert [m.step for m in losses] == [1, 2]
        assert all(m.value > 0 for m in losses)
        assert run.data.metrics["training.images_per_second"] == pytest.approx(
            trial.user_attrs["training"]["images_per_second"]
        )


def test_each_worker_logs_its_trials_under_the_one_parent_run(tmp_path: Path) -> None:
    uri = str(tmp_path / "mlruns")
    config = _config(tmp_path, uri, trials=6, prune=False)
    result = tracked_workers(config, workers=2)
    assert result.errors == []
    children = _check_trial_runs(uri, config)
    assert len(children) == 6


def test_the_cli_option_and_the_recipe_key(tmp_path: Path) -> None:
    uri = str(tmp_path / "mlruns")
    recipe = tmp_path / "r.toml"
    recipe.write_text(f'mlflow = "{uri}"\nevaluator = "proxy"\n')
    done = run_cli(
        "search", "--config", str(recipe), "--devices", "2xK80", "--mem", "12GB",
        "--objectives", "accuracy,latency", "--sampler", "random", "--epochs", "3",
        "--trials", "3", "--storage", f"sqlite:///{tmp_path / 's.db'}", "--study", "s",
        "--seed", "1", "--json", "--quiet", "--dataset", "fashion-mnist",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout)["config"]["mlflow"] == uri
    assert done.stderr == ""  # neither MLflow nor Optuna said anything
    config = _config(tmp_path, uri)
    assert len(_check_trial_runs(uri, config)) == 3
    # continuing with --mlflow on the command line logs to the same parent run
    again = run_cli(
        "search", "--mlflow", uri, "--evaluator", "proxy", "--devices", "2xK80", "--mem",
        "12GB", "--objectives", "accuracy,latency", "--sampler", "random", "--epochs", "3",
        "--trials", "4", "--storage", f"sqlite:///{tmp_path / 's.db'}", "--study", "s",
        "--seed", "1", "--json", "--quiet",
    )  # fmt: skip
    assert again.returncode == 0, again.stderr[-2000:]
    assert len(_check_trial_runs(uri, config)) == 4


def test_a_killed_worker_s_trial_retried_by_a_pool_continues_its_run(tmp_path: Path) -> None:
    """A worker killed with -9 mid-trial leaves a RUNNING trial and its run; a pool
    fails the trial once its heartbeat is stale and retries it as a new Optuna
    trial, which continues the dead worker's run: one run per trial. On MLflow's SQLite
    store, as docs/tracking.md recommends: its writes are transactions, while a kill
    during a write to MLflow's file store can leave an empty metric file that MLflow
    then refuses to read (the run is lost to every reader; this test failed so once)."""
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    url = f"sqlite:///{tmp_path / 'kill.db'}"
    worker = subprocess.Popen(
        [sys.executable, "-m", "tests.tracking._mlflow_worker", url, "s", "3", "1", "2", uri],
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    assert worker.stdout is not None
    assert worker.stdout.readline().startswith("trial 0 epoch 1")  # mid-trial
    os.kill(worker.pid, signal.SIGKILL)
    worker.wait()
    _, children = _runs(uri)
    (killed,) = children
    assert killed.info.status == "RUNNING"  # nobody closed it
    assert "state" not in killed.data.tags

    config = replace(worker_config(url, "s", 3, 1.0), mlflow=uri)
    result = tracked_workers(config, workers=2)
    assert result.errors == []
    study = load_existing_study("s", url)
    retries = [t for t in study.trials if t.system_attrs.get("failed_trial") == 0]
    assert len(retries) == 1
    children = _check_trial_runs(uri, config)
    assert len(children) == 3  # trials 0 (retried), and two more: no duplicate
    (continued,) = [r for r in children if r.data.tags["nasmlcn.trial"] == "0"]
    assert continued.info.run_id == killed.info.run_id
    assert continued.data.tags["nasmlcn.optuna_trial"] == str(retries[0].number)
    assert continued.info.status == "FINISHED"
    history = _client(uri).get_metric_history(continued.info.run_id, "val_accuracy")
    assert [m.step for m in history] == [1, 2, 3]  # epoch 1 not logged twice
