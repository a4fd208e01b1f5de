"""In-process lane placement: same numbers as the plain model, parameters where
the placement says, and whole training jobs through ``train()``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from nasmlcn.models import MLCN, build_model, per_lane_tensors
from nasmlcn.parallel import PlacedMLCN
from nasmlcn.specs import MLCNSpec
from nasmlcn.training import (
    ParallelReport,
    TrainConfig,
    TrainJob,
    TrainReport,
    load_checkpoint,
    train,
)
from tests.parallel import _ranks

TOL = 1e-5


def _mlcn(lane_dropout: float = 0.2) -> MLCN:
    torch.manual_seed(0)
    model = build_model(_ranks.spec(lane_dropout))
    assert isinstance(model, MLCN)
    return model


def test_placed_on_a_cpu_device_list_equals_the_plain_model() -> None:
    plain = _ranks.run_steps(_mlcn())
    placed = _ranks.run_steps(PlacedMLCN(_mlcn(), ["cpu", "cpu", "cpu"]))
    assert placed["losses"] == pytest.approx(plain["losses"], abs=TOL)
    assert placed["state"].keys() == plain["state"].keys()  # checkpoints interchangeable
    for name, grad in plain["grads"].items():
        assert torch.allclose(placed["grads"][name], grad, atol=TOL), name
    for name, value in plain["state"].items():
        assert torch.allclose(placed["state"][name], value, atol=TOL), name


def test_placed_model_reports_its_placement() -> None:
    placed = PlacedMLCN(_mlcn(), ["cpu", "cpu", "cpu"], "cpu")
    assert placed.input_device == torch.device("cpu")
    assert placed.placement() == {"cpu": [0, 1, 2]}
    assert placed.streams is False  # no CUDA lane, no streams
    for name, tensor in per_lane_tensors(placed).items():
        if name.startswith("lanes."):
            assert tensor.device == placed.lane_devices[int(name.split(".")[1])], name
    with pytest.raises(ValueError, match="2 lane devices given for 3 lanes"):
        PlacedMLCN(_mlcn(), ["cpu", "cpu"])


def _job(out: Path, *, resume: bool = False) -> TrainJob:
    return TrainJob(
        MLCNSpec.from_lanes("4*mlcn2:1x1"),
        dataset="synthetic",
        config=TrainConfig(epochs=1, batch_size=32, seed=3, lr_policy="exponential"),
        train_limit=64,
        val_limit=32,
        test_limit=32,
        out_dir=str(out),
        resume=resume,
    )


def test_placed_job_equals_the_plain_job_and_resumes(tmp_path: Path) -> None:
    plain = train(_job(tmp_path / "plain"))
    assert isinstance(plain, TrainReport)
    placed = train(_job(tmp_path / "placed"), devices="2xcpu", device="cpu")
    assert isinstance(placed, ParallelReport)
    assert placed.mode == "lane-parallel"
    assert placed.launcher == "in-process"
    assert placed.devices == ("cpu",) * 4
    assert sorted(set(placed.assignment)) == [0, 1]
    assert placed.history[0].val_loss == pytest.approx(plain.history[0].val_loss, abs=TOL)
    assert placed.test_loss == pytest.approx(plain.test_loss, abs=TOL)
    saved = json.loads((tmp_path / "placed" / "result.json").read_text())
    assert saved["parallel"]["mode"] == "lane-parallel"
    # A placed checkpoint loads into the plain model, and a placed run resumes.
    state = load_checkpoint(tmp_path / "placed" / "checkpoint.pt")["model"]
    build_model(MLCNSpec.from_lanes("4*mlcn2:1x1")).load_state_dict(state)
    from dataclasses import replace

    more = replace(
        _job(tmp_path / "placed", resume=True),
        config=TrainConfig(epochs=2, batch_size=32, seed=3, lr_policy="exponential"),
    )
    resumed = train(more, devices="2xcpu", device="cpu")
    assert isinstance(resumed, ParallelReport)
    assert [h.epoch for h in resumed.history] == [1, 2]


def test_absent_target_devices_are_a_clear_error(tmp_path: Path) -> None:
    from nasmlcn.errors import DeviceError

    with pytest.raises(DeviceError, match="not on this machine"):
        train(_job(tmp_path / "x"), devices="2xK80", device="auto")


def test_option_combinations_that_cannot_work(tmp_path: Path) -> None:
    from nasmlcn.errors import SpecError

    with pytest.raises(SpecError, match="data parallelism needs several processes"):
        train(_job(tmp_path / "x"), parallelism="data")
    with pytest.raises(SpecError, match="resume is not supported"):
        train(_job(tmp_path / "y", resume=True), processes=2)
    with pytest.raises(SpecError, match="with several processes use auto, cpu or cuda"):
        train(_job(tmp_path / "z"), processes=2, device="cuda:0,cuda:1")


@pytest.mark.gpu
@pytest.mark.parametrize("streams", [False, True])
def test_lanes_on_cuda_equal_cpu(streams: bool) -> None:
    placed = PlacedMLCN(_mlcn(0.0), ["cuda:0"] * 3, streams=streams)
    assert placed.streams is streams
    assert all(p.device == torch.device("cuda:0") for p in placed.lanes.parameters())
    assert placed.input_device == torch.device("cuda:0")
    want = _run_on(_mlcn(0.0), torch.device("cpu"))
    assert _run_on(placed, placed.input_device) == pytest.approx(want, abs=1e-4)


def _run_on(model: torch.nn.Module, device: torch.device) -> list[float]:
    from nasmlcn.models import capsule_loss

    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    losses = []
    for x, y in _ranks.batches():
        x, y = x.to(device), y.to(device)
        out = model(x, y)
        loss = capsule_loss(out.lengths, out.reconstruction, x, y).total
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(float(loss))
    return losses


@pytest.mark.gpu
def test_cpu_and_cuda_lanes_with_the_head_on_cpu() -> None:
    placed = PlacedMLCN(_mlcn(0.0), ["cuda:0", "cpu", "cuda:0"], head_device="cpu")
    lanes = per_lane_tensors(placed)
    assert lanes["lanes.0.weight"].device.type == "cuda"
    assert lanes["lanes.1.weight"].device.type == "cpu"
    want = _run_on(_mlcn(0.0), torch.device("cpu"))
    assert _run_on(placed, torch.device("cpu")) == pytest.approx(want, abs=1e-4)


def test_train_runs_in_process_unless_parallel_is_asked(tmp_path: Path) -> None:
    plain = train(_job(tmp_path / "plain"), device="cpu")
    assert isinstance(plain, TrainReport)
    placed = train(_job(tmp_path / "placed"), devices="2xcpu", device="cpu")
    assert isinstance(placed, ParallelReport)
    assert placed.mode == "lane-parallel"
    assert placed.test_accuracy == pytest.approx(plain.test_accuracy, abs=1e-6)
