"""The typed trial record: what the runner writes reads back through one schema,
and trials written before the schema had a version still read."""

from __future__ import annotations

import os
from pathlib import Path

import optuna
from optuna.trial import TrialState

from nasmlcn.search import SearchConfig, run_search
from nasmlcn.study import TrialRecord, load_existing_study
from nasmlcn.study._claim import trial_seed
from nasmlcn.study._trial import RECORD_VERSION


def test_the_runner_writes_every_field_of_the_current_record(tmp_path: Path) -> None:
    config = SearchConfig(
        evaluator="proxy",
        storage=f"sqlite:///{tmp_path / 'r.db'}",
        trials=2,
        epochs=2,
        devices="4xK80",
        mem="12GB",
        latency_budget=1.0,
    )
    run_search(config)
    for trial in load_existing_study(None, config.storage).trials:
        record = TrialRecord.of(trial)
        assert record.version == RECORD_VERSION
        assert record.state == "COMPLETE"
        assert record.values == (trial.value,)
        assert record.lanes
        assert record.num_lanes
        assert record.arch["lanes"]
        assert record.plan["devices"]
        assert "latency" in record.predicted
        assert len(record.accuracy_per_epoch) == 2
        assert set(record.constraints) == {"memory", "latency", "learning"}
        assert record.learned
        assert record.feasible
        assert record.sampler_seed == trial_seed(0, trial.number)
        assert record.worker
        assert record.worker.endswith(f":{os.getpid()}")
        assert record.reason is None
        assert not record.crashed


def test_a_trial_written_before_the_record_had_a_version_reads_as_version_0(
    tmp_path: Path,
) -> None:
    study = optuna.create_study(storage=f"sqlite:///{tmp_path / 'old.db'}")
    trial = optuna.trial.create_trial(
        params={"num_lanes": 2},
        distributions={"num_lanes": optuna.distributions.IntDistribution(1, 4)},
        value=0.5,
        user_attrs={"lanes": "2*mlcn2:4x1", "training": {"val_accuracy_per_epoch": [0.4, 0.5]}},
        state=TrialState.COMPLETE,
    )
    study.add_trial(trial)
    record = TrialRecord.of(study.trials[0])
    assert record.version == 0
    assert record.lanes == "2*mlcn2:4x1"
    assert record.constraints == {}  # nasmlcn then wrote none: feasible
    assert record.feasible
    assert record.accuracy_per_epoch == [0.4, 0.5]
    assert record.worker is None
    assert record.weights is None
    assert not record.weights_kept
