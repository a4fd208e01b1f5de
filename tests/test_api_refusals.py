"""The library refuses arguments of the wrong kind in one clear nasmlcn error,
before it writes anything (what a script calling the API gets wrong first)."""

from __future__ import annotations

import math
import sqlite3
from pathlib import Path

import pytest

from nasmlcn import MLCNSpec, TrainConfig, TrainJob, train
from nasmlcn.errors import DeviceError, SearchError, SpecError
from nasmlcn.hardware import parse_devices, parse_size
from nasmlcn.search import SearchConfig, best_trials, run_search
from nasmlcn.specs import format_lanes, parse_lanes


def _config(tmp_path: Path, **kw: object) -> SearchConfig:
    base: dict[str, object] = {
        "devices": "2xK80",
        "mem": "12GB",
        "evaluator": "proxy",
        "trials": 2,
        "epochs": 1,
        "storage": f"sqlite:///{tmp_path / 's.db'}",
        "study": "x",
    }
    base.update(kw)
    return SearchConfig(**base)  # type: ignore[arg-type]


def _studies(tmp_path: Path) -> list[str]:
    db = tmp_path / "s.db"
    if not db.exists():
        return []
    with sqlite3.connect(db) as con:
        return [row[0] for row in con.execute("SELECT study_name FROM studies")]


def test_an_evaluator_name_is_refused_not_run_as_failing_trials(tmp_path: Path) -> None:
    with pytest.raises(SearchError, match="evaluator must be an Evaluator"):
        run_search(_config(tmp_path), evaluator="proxy")  # type: ignore[arg-type]
    with pytest.raises(SearchError, match=r"workers must be an integer >= 1, got 1\.5"):
        run_search(_config(tmp_path), workers=1.5)  # type: ignore[arg-type]
    with pytest.raises(SearchError, match="observers must be a sequence"):
        run_search(_config(tmp_path), observers=None)  # type: ignore[arg-type]
    assert _studies(tmp_path) == []


def test_an_evaluator_that_does_not_say_what_it_keeps_is_refused(tmp_path: Path) -> None:
    """The search reads ``measured`` and ``checkpoints`` (the Evaluator protocol): an
    object without them is refused in one line that names them, before any study."""
    from nasmlcn.search import ProxyEvaluator

    class Bare:
        name = "bare"

        def evaluate(self, request: object, on_epoch: object) -> object:
            return ProxyEvaluator().evaluate(request, on_epoch)  # type: ignore[arg-type]

    with pytest.raises(SearchError, match=r"Bare object .*, which lacks measured, checkpoints;"):
        run_search(_config(tmp_path), evaluator=Bare())  # type: ignore[arg-type]
    assert _studies(tmp_path) == []


def test_an_artifact_folder_that_cannot_be_made_is_refused_before_the_study(
    tmp_path: Path,
) -> None:
    (tmp_path / "af").write_text("a file")
    config = _config(
        tmp_path, evaluator="train", dataset="synthetic", artifacts=str(tmp_path / "af")
    )
    with pytest.raises(SearchError, match="is a file"):
        run_search(config)
    assert _studies(tmp_path) == []


def test_a_config_is_rebuilt_from_what_it_stores(tmp_path: Path) -> None:
    config = _config(tmp_path, objectives=("accuracy", "latency"), sampler="nsga2")
    assert SearchConfig.from_dict(config.to_dict()) == config
    with pytest.raises(SearchError, match="newer than this nasmlcn reads"):
        SearchConfig.from_dict({**config.to_dict(), "schema_version": 99})
    with pytest.raises(SearchError, match="unknown SearchConfig keys: colour"):
        SearchConfig.from_dict({**config.to_dict(), "colour": 1})


def test_best_trials_refuses_a_top_below_one(tmp_path: Path) -> None:
    import optuna

    study = optuna.create_study()
    with pytest.raises(SearchError, match="top must be an integer >= 1, got -1"):
        best_trials(study, top=-1)  # a slice [:-1] dropped the last ranked trial


def test_lanes_and_devices_take_ascii_digits_and_lanes_only() -> None:
    with pytest.raises(SpecError, match="invalid lane 'mlcn1:٣x2'"):
        parse_lanes("mlcn1:٣x2")
    with pytest.raises(DeviceError, match="invalid device '٢xK80'"):
        parse_devices("٢xK80")
    with pytest.raises(DeviceError, match="invalid memory size"):
        parse_size("١٢GB")
    with pytest.raises(SpecError, match="format_lanes takes LaneSpec lanes"):
        format_lanes("mlcn1:2x2")  # type: ignore[arg-type]


def _job(**kw: object) -> TrainJob:
    args: dict[str, object] = {
        "arch": MLCNSpec.from_lanes("2*mlcn2:1x1"),
        "dataset": "synthetic",
        "config": TrainConfig(epochs=1, batch_size=20),
        "train_limit": 60,
        "val_limit": 20,
        "test_limit": 20,
    }
    args.update(kw)
    return TrainJob(**args)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"train_limit": 0}, "train_limit must be an integer >= 1 (or None: all), got 0"),
        ({"test_limit": 2.5}, "test_limit must be an integer >= 1 (or None: all), got 2.5"),
        ({"arch": "mlcn2:1x1"}, "arch must be an architecture"),
        ({"config": None}, "config must be a TrainConfig, got None"),
    ],
)
def test_a_train_job_names_its_bad_field(kw: dict[str, object], message: str) -> None:
    with pytest.raises(SpecError, match=message.replace("(", r"\(").replace(")", r"\)")):
        _job(**kw)


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"processes": 0}, "processes must be an integer >= 1, got 0"),
        ({"devices": ""}, "devices must name target devices"),
        ({"processes": 2, "timeout_s": -1}, "timeout_s must be a number of seconds > 0"),
        ({"processes": 2, "timeout_s": math.nan}, "timeout_s must be a number of seconds > 0"),
    ],
)
def test_where_a_job_trains_is_checked_before_it_trains(
    tmp_path: Path, kw: dict[str, object], message: str
) -> None:
    out = tmp_path / "run"
    with pytest.raises(SpecError, match=message):
        train(_job(out_dir=str(out)), **kw)  # type: ignore[call-overload]
    assert not out.exists()


def test_an_infinite_reconstruction_weight_is_refused() -> None:
    with pytest.raises(SpecError, match="reconstruction_weight must be a finite number"):
        TrainConfig(reconstruction_weight=math.inf)
