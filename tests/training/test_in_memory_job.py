"""``train`` is the one public verb that trains: an ``InMemoryJob`` (data the caller
holds, as the search's trials and the reproduce engines have it) goes through it too,
and the old ``run_job`` still works for one release, with a warning."""

from __future__ import annotations

import pytest
import torch

from nasmlcn.errors import SpecError
from nasmlcn.specs import MLCNSpec
from nasmlcn.training import (
    Callback,
    EpochResult,
    InMemoryJob,
    JobRun,
    RunOptions,
    TrainConfig,
    train,
)


@pytest.fixture(scope="module")
def splits():  # type: ignore[no-untyped-def]
    from nasmlcn.data import load_splits

    return load_splits("synthetic", train_limit=40, val_limit=20, test_limit=20)


SPEC = MLCNSpec.from_lanes("2*mlcn2:1x1", decoder="none")
CONFIG = TrainConfig(epochs=1, batch_size=20, seed=3)


class _Epochs(Callback):
    def __init__(self) -> None:
        self.seen: list[int] = []

    def on_epoch_end(self, result: EpochResult) -> None:
        self.seen.append(result.epoch)


def test_an_in_memory_job_trains_tests_and_hands_back_the_trained_module(splits) -> None:  # type: ignore[no-untyped-def]
    placed: list[torch.nn.Module] = []

    def place(model: torch.nn.Module) -> torch.nn.Module:
        placed.append(model)
        return model

    epochs = _Epochs()
    run = train(InMemoryJob(SPEC, splits, CONFIG, place=place), [epochs])
    assert isinstance(run, JobRun)
    assert placed == [run.model]
    assert run.module is run.model
    assert epochs.seen == [1]
    assert [h.epoch for h in run.history] == [1]
    assert run.test is not None
    assert 0.0 <= run.test[1] <= 1.0
    assert run.train_images == 40
    assert run.test_images == 20
    # the module it hands back is the trained one: its weights are not the seeded start
    torch.manual_seed(CONFIG.seed)
    from nasmlcn.models import build_model

    start = build_model(SPEC).state_dict()
    trained = run.module.state_dict()
    assert any(not torch.equal(start[k], trained[k]) for k in start)


def test_an_untested_in_memory_job_leaves_the_test_split_alone(splits) -> None:  # type: ignore[no-untyped-def]
    run = train(InMemoryJob(SPEC, splits, CONFIG, RunOptions(test=False)))
    assert run.test is None
    assert run.selection is None


@pytest.mark.parametrize(
    "option",
    [
        {"devices": "2xK80"},
        {"processes": 2},
        {"parallelism": "data"},
        {"timeout_s": 5},
        {"placement": "optimal"},
        {"device": "cpu"},
    ],
)
def test_a_train_job_option_on_an_in_memory_job_is_refused(splits, option) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(
        SpecError,
        match=f"an InMemoryJob trains where its place puts it; {next(iter(option))} apply",
    ):
        train(InMemoryJob(SPEC, splits, CONFIG), **option)


def test_the_old_run_job_warns_and_trains_the_same(splits) -> None:  # type: ignore[no-untyped-def]
    import nasmlcn.training

    assert "run_job" not in nasmlcn.training.__all__
    with pytest.warns(DeprecationWarning, match="now train\\(InMemoryJob"):
        old = nasmlcn.training.run_job(SPEC, splits, CONFIG, options=RunOptions(test=False))
    new = train(InMemoryJob(SPEC, splits, CONFIG, RunOptions(test=False)))
    assert old.history[-1].train_loss == pytest.approx(new.history[-1].train_loss, rel=1e-6)
