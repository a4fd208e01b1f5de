"""The typed study record (:class:`nasmlcn.study.StudyRecord`): what a search writes
reads back field by field, through a real SQLite storage; a study stored in an older
form (no dataset record, no seed, a password in its URL) and a foreign one still read,
with the answers the raw readers gave."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import optuna
import pytest

from nasmlcn.data import open_dataset
from nasmlcn.errors import DatasetError, SearchError
from nasmlcn.search import SearchConfig, run_search
from nasmlcn.study import (
    RetrainedModel,
    StudyRecord,
    load_existing_study,
    noise_estimate,
    retrained_by_trial,
    retrained_models,
    search_data,
    study_info,
    write_study_info,
)


def _record(**overrides: Any) -> StudyRecord:
    fields: dict[str, Any] = {
        "made_by_nasmlcn": True,
        "identity": {"dataset": "synthetic", "epochs": 2},
        "config": {"dataset": "synthetic", "seed": 7, "evaluator": "proxy", "devices": "2xK80"},
        "data_record": open_dataset("synthetic").identity.to_dict(),
        "objectives": ("accuracy", "latency"),
        "metric_names": ("accuracy", "latency_s"),
        "accuracy_is_proxy": True,
        "space": {"kind": "lanes", "name": "default"},
        "devices": ({"name": "K80", "kind": "K80", "memory_bytes": 12},),
        "cost_model": "analytic",
        "time_unit": "s",
        "versions": {"nasmlcn": "0"},
        "created": "2026-01-01T00:00:00+0000",
    }
    return StudyRecord(**{**fields, **overrides})


def _sqlite_study(tmp_path: Path, name: str = "s") -> tuple[optuna.Study, str]:
    url = f"sqlite:///{tmp_path / 'r.db'}"
    return optuna.create_study(study_name=name, storage=url), url


def test_a_record_round_trips_through_a_sqlite_storage(tmp_path: Path) -> None:
    written = _record()
    study, url = _sqlite_study(tmp_path)
    written.write(study)
    again = optuna.load_study(study_name="s", storage=url)
    assert StudyRecord.read(again) == written
    # the frozen study the storage lists reads the same
    [frozen] = optuna.storages.RDBStorage(url).get_all_studies()
    assert StudyRecord.read(frozen) == written
    assert (written.evaluator, written.seed, written.dataset) == ("proxy", 7, "synthetic")


def test_the_stored_form_is_the_one_earlier_readers_read(tmp_path: Path) -> None:
    """The keys and values a search always stored, in its order: the data identity
    both as the configuration's name and as the dataset record."""
    study, _ = _sqlite_study(tmp_path)
    _record().write(study)
    info = study_info(study)
    assert list(info) == [
        "identity", "config", "dataset", "objectives", "metric_names", "evaluator",
        "accuracy_is_proxy", "space", "devices", "cost_model", "time_unit", "versions",
        "created",
    ]  # fmt: skip
    assert info["config"]["dataset"] == "synthetic"
    assert info["dataset"]["name"] == "synthetic"
    assert info["evaluator"] == "proxy"
    assert info["objectives"] == ["accuracy", "latency"]
    assert search_data(info) == open_dataset("synthetic").identity


def test_what_later_runs_added_is_kept_by_a_round_trip() -> None:
    model = _retrained(3)
    info = {**_record().to_dict(), "retrained": {"version": 1, "models": [model.to_dict()]}}
    record = StudyRecord.read(info)
    assert StudyRecord.read(record.to_dict()) == record
    assert record.to_dict()["retrained"] == info["retrained"]
    assert retrained_models(record) == retrained_models(info) == [model]
    assert retrained_by_trial(record) == {3: model}
    assert noise_estimate(record) is None


def test_a_search_writes_a_record_that_reads_back(tmp_path: Path) -> None:
    config, _ = _searched(tmp_path, seed=3)
    study = load_existing_study(None, config.storage)
    record = StudyRecord.read(study)
    assert record.to_dict() == study_info(study)  # every stored key, read and written back
    assert record.made_by_nasmlcn
    assert record.identity == config.identity()
    assert record.config == config.to_dict()
    assert (record.dataset, record.seed, record.evaluator) == ("synthetic", 3, "proxy")
    assert record.data == open_dataset("synthetic").identity
    assert record.same_data(open_dataset("synthetic").identity)
    assert not record.same_data(open_dataset("fashion-mnist").identity)
    assert record.accuracy_is_proxy
    assert record.objectives == tuple(config.objectives)
    assert record.metric_names == tuple(study.metric_names or ())
    assert [d["kind"] for d in record.devices or ()] == ["K80", "K80"]


def test_an_old_study_without_a_dataset_record_reads_its_configuration_s_name() -> None:
    """Studies made before datasets were recorded: the data is the registered dataset
    the configuration names, and it is never the same data by content."""
    old = {"identity": {"dataset": "synthetic"}, "config": {"dataset": "synthetic"}}
    record = StudyRecord.read(old)
    assert record.data_record is None
    assert record.data == search_data(old) == open_dataset("synthetic").identity
    assert not record.same_data(open_dataset("synthetic").identity)
    assert (record.seed, record.search_seed) == (None, 0)


def test_an_old_study_without_a_dataset_searched_fashion_mnist() -> None:
    record = StudyRecord.read({"identity": {}, "config": {}})
    assert record.dataset is None
    assert record.data == open_dataset("fashion-mnist").identity


def test_a_damaged_dataset_record_is_refused_and_is_never_the_same_data() -> None:
    record = StudyRecord.read({"config": {"dataset": "synthetic"}, "dataset": {"kind": "x"}})
    with pytest.raises(DatasetError, match="not a dataset record"):
        _ = record.data
    assert not record.same_data(open_dataset("synthetic").identity)


def test_an_old_study_s_password_is_not_read_back(tmp_path: Path) -> None:
    study, _ = _sqlite_study(tmp_path)
    write_study_info(study, {"identity": {}, "config": {"storage": "postgresql://u:pw@h/db"}})
    assert "pw" not in StudyRecord.read(study).config["storage"]


def test_a_seed_that_is_no_integer_is_not_recorded() -> None:
    assert StudyRecord.read({"config": {"seed": True}}).seed is None
    assert StudyRecord.read({"config": {"seed": 5}}).search_seed == 5


def test_a_foreign_study_reads_as_an_empty_record(tmp_path: Path) -> None:
    study, url = _sqlite_study(tmp_path)
    study.set_user_attr("other", 1)
    record = StudyRecord.read(study)
    assert record == StudyRecord()
    assert not record.made_by_nasmlcn
    [frozen] = optuna.storages.RDBStorage(url).get_all_studies()
    assert not StudyRecord.read(frozen).made_by_nasmlcn
    assert (record.identity, record.config, record.devices, record.evaluator) == (
        None,
        {},
        None,
        None,
    )


def _retrained(number: int) -> RetrainedModel:
    return RetrainedModel(
        number=number, dataset="synthetic", lanes="2*mlcn1:1x1", test_accuracy=0.5,
        test_loss=1.0, test_images=10, params=100, epochs=1, batch_size=10, lr=0.001,
        train_images=20, train_images_per_second=1.0, inference_images_per_second=1.0,
        inference_batch_size=10, device="cpu", seconds=1.0, search_accuracy=0.4,
        search_epochs=1,
    )  # fmt: skip


def _searched(tmp_path: Path, **options: Any) -> tuple[SearchConfig, optuna.Study]:
    """A one-trial proxy search on synthetic data (``options`` add to its settings),
    and its study."""
    config = SearchConfig(
        evaluator="proxy",
        storage=f"sqlite:///{tmp_path / 'r.db'}",
        trials=1,
        epochs=2,
        dataset="synthetic",
        devices="2xK80",
        **options,
    )
    run_search(config)
    name = load_existing_study(None, config.storage).study_name  # (opened read-only)
    return config, optuna.load_study(study_name=name, storage=config.storage)


def test_a_study_stored_before_dataset_records_goes_on(tmp_path: Path) -> None:
    """The old form (the configuration's name alone) is still this search's data:
    the study goes on, and is not rewritten."""
    config, study = _searched(tmp_path)
    write_study_info(study, {k: v for k, v in study_info(study).items() if k != "dataset"})
    run_search(replace(config, trials=2))
    again = load_existing_study(None, config.storage)
    assert len(again.trials) == 2
    assert StudyRecord.read(again).data_record is None
    assert StudyRecord.read(again).data == open_dataset("synthetic").identity


def test_a_study_recorded_on_other_data_is_refused(tmp_path: Path) -> None:
    config, study = _searched(tmp_path)
    other = open_dataset("fashion-mnist").identity.to_dict()
    write_study_info(study, {**study_info(study), "dataset": other})
    with pytest.raises(SearchError, match="was made on other data: fashion-mnist"):
        run_search(replace(config, trials=2))
