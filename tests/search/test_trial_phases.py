"""Where a trial's time goes: the train evaluator records its
split, which ``benchmarks/trial_time.py`` prints per trial."""

from __future__ import annotations

from pathlib import Path

import pytest

from nasmlcn.search import SearchConfig, run_search
from nasmlcn.study import TrialRecord, load_existing_study


def test_a_trained_trial_records_where_its_seconds_went(tmp_path: Path) -> None:
    config = SearchConfig(
        evaluator="train",
        dataset="synthetic",
        epochs=2,
        train_limit=100,
        val_limit=50,
        batch_size=50,
        run_on="cpu",
        devices="2xK80",
        mem="12GB",
        flops="0.05x",
        trials=1,
        prune=False,
        storage=f"sqlite:///{tmp_path / 's.db'}",
        study="s",
    )
    run_search(config)
    (trial,) = load_existing_study("s", config.storage).trials
    training = TrialRecord.of(trial).training
    phases = training["extra"]["phases"]
    assert set(phases) == {"setup", "training", "validation", "job_other", "inference"}
    assert all(v >= 0 for v in phases.values())
    epochs = training["extra"]["per_epoch"]
    assert phases["training"] == pytest.approx(sum(e["seconds"] for e in epochs))
    assert phases["validation"] == pytest.approx(sum(e["eval_seconds"] for e in epochs))
    assert phases["inference"] > 0  # the measured latency's timed passes
    # the phases after setup are the evaluation's own time, split: no more than it
    assert sum(phases.values()) - phases["setup"] <= training["seconds"] + 1e-3
