"""One real search: the train evaluator on a Fashion-MNIST subset."""

from __future__ import annotations

import json
import re
from pathlib import Path

import optuna
import optuna_dashboard
import pytest

import nasmlcn.hardware
from nasmlcn.dashboard import DashboardObserver
from nasmlcn.search import SearchConfig, run_search
from nasmlcn.study import load_existing_study, trial_id_of
from tests.conftest import run_cli


def test_real_search_trains_measures_and_stores(data_dir: Path, tmp_path: Path) -> None:
    config = SearchConfig(
        devices="2xK80",
        mem="12GB",
        flops="0.1x",  # 6 s on one thread (0.25x: 13 s, and the best trial learned less)
        evaluator="train",
        dataset="fashion-mnist",
        data_dir=str(data_dir),
        epochs=2,
        train_limit=800,
        val_limit=300,
        trials=2,
        sampler="random",
        storage=f"sqlite:///{tmp_path / 'real.db'}",
        run_on="cpu",
        seed=1,
    )
    result = run_search(config)
    assert [t.state for t in result.run_trials] == ["COMPLETE", "COMPLETE"]
    study = load_existing_study(result.study, config.storage)
    assert study.user_attrs["nasmlcn"]["accuracy_is_proxy"] is False
    best = max(study.trials, key=lambda t: t.value or 0.0)
    assert best.value is not None
    assert best.value > 0.3  # chance is 0.1
    training = best.user_attrs["training"]
    assert training["evaluator"] == "train"
    assert training["device"] == "cpu"
    assert training["mode"] == "single-device"
    assert len(training["val_accuracy_per_epoch"]) == 2
    assert training["val_accuracy_per_epoch"][-1] == best.value
    assert training["step_seconds"] > 0
    assert training["images_per_second"] > 0
    assert training["peak_memory_bytes"] > 0
    assert training["extra"]["train_images"] == 800
    assert training["extra"]["val_images"] == 300
    assert "torch" in training["versions"]
    assert "optuna" in training["versions"]
    assert best.intermediate_values == {1: training["val_accuracy_per_epoch"][0], 2: best.value}


def test_a_model_too_large_for_the_run_on_device_fails_its_trial_with_the_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the target devices hold the model; this machine (as far as it says) does not
    monkeypatch.setattr(nasmlcn.hardware, "available_memory", lambda device: 2**20)
    config = SearchConfig(
        devices="2xK80",
        mem="12GB",
        evaluator="train",
        dataset="synthetic",
        epochs=1,
        train_limit=20,
        val_limit=20,
        trials=1,
        storage=f"sqlite:///{tmp_path / 's.db'}",
        run_on="cpu",
    )
    result = run_search(config)
    # failures do not count toward --trials; a worker gives up after 10 in a row
    assert result.stopped == "failures"
    assert len(result.run_trials) == 10
    for trial in result.run_trials:
        assert trial.state == "FAIL"
        assert trial.reason is not None
        assert "to train at batch 20; this machine (cpu) has 1 MiB available" in trial.reason


def test_a_trained_trial_measures_its_inference_latency(tmp_path: Path) -> None:
    config = SearchConfig(
        devices="2xK80",
        mem="12GB",
        flops="0.25x",
        objectives=("accuracy", "inference"),
        evaluator="train",
        dataset="synthetic",
        epochs=1,
        train_limit=200,
        batch_size=10,  # enough steps to learn: a model at chance is no best trial
        val_limit=8,  # fewer than the passes: the images are cycled
        trials=1,
        storage=f"sqlite:///{tmp_path / 's.db'}",
        run_on="cpu",
    )
    result = run_search(config, [DashboardObserver(figures=False)])  # the trial's note
    assert [t.state for t in result.run_trials] == ["COMPLETE"]
    study = load_existing_study(result.study, config.storage)
    (trial,) = study.trials
    training, predicted = trial.user_attrs["training"], trial.user_attrs["predicted"]
    measured = training["measured_inference_latency_s"]
    assert 0 < measured < training["step_seconds"]  # one image, forward only
    assert training["measured_inference_device"] == training["device"] == "cpu"
    assert training["measured_inference_batch_size"] == 1
    assert training["extra"]["measured_inference"]["passes"] == 20
    assert trial.values is not None
    assert trial.values[1] == predicted["inference_latency_s"] > 0

    best = run_cli("best", "--storage", config.storage, "--json")
    assert best.returncode == 0, best.stderr
    (row,) = json.loads(best.stdout)["best"]
    assert row["predicted"]["inference_latency_s"] == trial.values[1]
    assert row["measured"] == {
        "measured_inference_latency_s": measured,
        "measured_inference_device": "cpu",
        "measured_inference_batch_size": 1,
        # the spread over the timed passes
        "measured_inference_p25_s": training["measured_inference_p25_s"],
        "measured_inference_p75_s": training["measured_inference_p75_s"],
        # what other processes held meanwhile (unknown: the test run does not look)
        "machine_load": training["extra"]["machine_load"],
    }
    note = optuna_dashboard.get_note(optuna.trial.Trial(study, trial_id_of(trial)))
    assert "predicted inference" in note
    assert re.search(
        r"measured on cpu \(where it trained\): .* inference [0-9.]+ ms "
        r"\(IQR [0-9.]+-[0-9.]+ ms\)/image at batch 1",
        note,
    ), note
