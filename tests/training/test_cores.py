"""Training and timing beside a busy process: fewer threads, one warning, and the
figures marked as measured on a crowded machine (``share_cores``). Measured here:
``2*mlcn2:4x1`` trained 3,858 images/s idle and 108 beside other trainings, and
the figures said nothing of it."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator

import pytest
import torch

import nasmlcn.training._cores as _cores
from nasmlcn.hardware import crowded_record, look_at_load
from nasmlcn.specs import MLCNSpec
from nasmlcn.training import Callback, EpochResult, TrainConfig, TrainJob, share_cores, train
from tests._busy import spinning_elsewhere


@pytest.fixture(autouse=True)
def _looking(monkeypatch: pytest.MonkeyPatch) -> None:
    """The look the test run turns off (tests/conftest.py), on."""
    monkeypatch.delenv("NASMLCN_IGNORE_LOAD", raising=False)


@pytest.fixture
def busy_beside() -> Iterator[None]:
    """Another session's process spinning on a core, as another user's training."""
    with spinning_elsewhere(0.3):
        look_at_load()  # the next look counts from here
        time.sleep(0.3)
        yield


@pytest.fixture
def own_threads(monkeypatch: pytest.MonkeyPatch) -> Iterator[int]:
    """Torch at two threads, as a command starts on two cores with no
    ``OMP_NUM_THREADS`` (the test run sets one per worker), and a process that has
    neither warned nor lowered its threads yet."""
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr(_cores, "_said", set())
    monkeypatch.setattr(_cores, "_lowered_from", [])
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    yield 2
    torch.set_num_threads(before)


class _Threads(Callback):
    def __init__(self) -> None:
        self.seen: list[int] = []

    def on_epoch_end(self, result: EpochResult) -> None:
        self.seen.append(torch.get_num_threads())


def test_training_beside_a_busy_process_takes_the_free_cores_and_is_marked(
    busy_beside: None, own_threads: int, tmp_path: object, caplog: pytest.LogCaptureFixture
) -> None:
    threads = _Threads()
    job = TrainJob(
        MLCNSpec("mlcn1:1x1"),
        dataset="synthetic",
        train_limit=40,
        val_limit=20,
        test_limit=20,
        config=TrainConfig(epochs=1, batch_size=20, seed=0),
    )
    with caplog.at_level(logging.WARNING, logger="nasmlcn"):
        report = train(job, [threads])
    held = crowded_record(report.machine_load)
    assert held is not None, report.machine_load
    assert held >= 0.5
    assert report.to_dict()["machine_load"] == report.machine_load  # result.json keeps it
    cores = report.machine_load["cores"] if report.machine_load else 0
    assert threads.seen == [min(own_threads, max(1, round(cores - held)))]
    [warning] = [r.getMessage() for r in caplog.records if "other processes held" in r.message]
    assert "unreliable" in warning
    assert "thread" in warning


def test_the_threads_come_back_once_the_machine_is_free(
    own_threads: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    from nasmlcn.hardware import MachineLoad

    looks = iter([MachineLoad(2, 1.0, 1.0), MachineLoad(2, 0.0, 1.0)])
    monkeypatch.setattr(_cores, "look_at_load", lambda: next(looks))
    share_cores("training")
    assert torch.get_num_threads() == 1
    share_cores("training")
    assert torch.get_num_threads() == own_threads


def test_a_user_s_own_thread_count_is_kept(
    own_threads: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    from nasmlcn.hardware import MachineLoad

    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    monkeypatch.setattr(_cores, "look_at_load", lambda: MachineLoad(2, 1.0, 1.0))
    assert share_cores("training").crowded
    assert torch.get_num_threads() == own_threads
