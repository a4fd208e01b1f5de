"""Multi-process lanes on 2 gloo processes: equivalence with one process, DDP, a
whole training job, and failing ranks that end with a clear error, not a hang."""

from __future__ import annotations

import json
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import torch

from nasmlcn.errors import SpecError
from nasmlcn.models import build_model, per_lane_tensors
from nasmlcn.parallel import DistributedError, launch
from nasmlcn.specs import MLCNSpec
from nasmlcn.training import (
    Callback,
    EpochResult,
    ParallelReport,
    TrainConfig,
    TrainJob,
    TrainStart,
    train,
)
from tests.conftest import run_cli
from tests.parallel import _ranks

TOL = 1e-5


def _job(out: Path) -> TrainJob:
    return TrainJob(
        MLCNSpec.from_lanes("4*mlcn2:1x1", lane_dropout=0.2),
        dataset="synthetic",
        config=TrainConfig(epochs=2, batch_size=32, seed=3),
        train_limit=96,
        val_limit=40,
        test_limit=40,
        out_dir=str(out),
    )


def _close(a: torch.Tensor, b: torch.Tensor, what: str) -> None:
    assert torch.allclose(a, b, atol=TOL, rtol=TOL), f"{what}: max diff {(a - b).abs().max()}"


@pytest.fixture(scope="module")
def two_ranks(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One launch of 2 gloo ranks doing everything the equivalence tests check."""
    out = tmp_path_factory.mktemp("mp") / "run"
    events: list[Any] = []
    ranks = launch(
        _ranks.equivalence_rank, 2, _job(out), threads=1, timeout_s=60, on_event=events.append
    )
    return {"ranks": ranks, "events": events, "out": out}


def test_lane_parallel_steps_equal_one_process(two_ranks: dict[str, Any]) -> None:
    torch.manual_seed(0)
    single = _ranks.run_steps(build_model(_ranks.spec()))
    for rank, result in enumerate(two_ranks["ranks"]):
        assert result["threads"] == 1
        for got, want in zip(result["losses"], single["losses"], strict=True):
            assert abs(got - want) <= TOL, (rank, result["losses"], single["losses"])
        # Every parameter this rank holds got the one-process gradient: lane
        # gradients are not scaled by the world size, head gradients not summed.
        for name, grad in result["grads"].items():
            _close(grad, single["grads"][name], f"rank {rank} grad {name}")
        for name, value in result["state"].items():
            _close(value, single["state"][name], f"rank {rank} after {_ranks.STEPS} steps: {name}")
        assert result["gather_calls"] == _ranks.STEPS  # one collective per step, none in backward


def test_each_rank_holds_exactly_its_lanes(two_ranks: dict[str, Any]) -> None:
    owned = [r["owned"] for r in two_ranks["ranks"]]
    assert owned == [(1,), (0, 2)]  # ASSIGNMENT = (1, 0, 1)
    assert [r["lane_params"] for r in two_ranks["ranks"]] == [["1"], ["0", "2"]]


def test_ddp_gradients_equal_the_full_batch(two_ranks: dict[str, Any]) -> None:
    from nasmlcn.models import capsule_loss

    torch.manual_seed(0)
    model = build_model(_ranks.spec(0.0))
    x, y = _ranks.batches(1)[0]
    out = model(x, y)
    capsule_loss(out.lengths, out.reconstruction, x, y).total.backward()
    for rank, result in enumerate(two_ranks["ranks"]):
        grads = per_lane_tensors(model, lambda p: p.grad)
        assert grads.keys() == result["ddp_grads"].keys()
        for name, grad in grads.items():
            _close(result["ddp_grads"][name], grad, f"DDP rank {rank} {name}")


def test_two_process_job_equals_one_process_job(two_ranks: dict[str, Any], tmp_path: Path) -> None:
    report = two_ranks["ranks"][0]["report"]
    assert isinstance(report, ParallelReport)
    other = two_ranks["ranks"][1]["report"]  # every rank reports; rank 0 writes the files
    assert isinstance(other, ParallelReport)
    assert (other.params, other.test_accuracy) == (report.params, report.test_accuracy)
    single = train(_job(tmp_path / "single"))
    got, want = report.history, single.history
    for a, b in zip(got, want, strict=True):
        assert abs(a.train_loss - b.train_loss) <= TOL
        assert abs(a.val_loss - b.val_loss) <= TOL
        assert a.val_accuracy == b.val_accuracy
    assert abs(report.test_loss - single.test_loss) <= TOL
    assert report.params == single.params
    # The checkpoint holds every rank's lanes: it equals the one-process model.
    from nasmlcn.training import load_checkpoint

    merged = load_checkpoint(two_ranks["out"] / "checkpoint.pt")["model"]
    ref = load_checkpoint(tmp_path / "single" / "checkpoint.pt")["model"]
    assert merged.keys() == ref.keys()
    for name in ref:
        _close(merged[name], ref[name], f"checkpoint {name}")
    result = json.loads((two_ranks["out"] / "result.json").read_text())
    assert result["parallel"]["mode"] == "lane-parallel"
    assert result["parallel"]["processes"] == 2
    assert result["parallel"]["lanes_per_rank"] == [2, 2]


def test_rank0_events_reach_the_launcher(two_ranks: dict[str, Any]) -> None:
    events = two_ranks["events"]
    assert sum(isinstance(event, EpochResult) for event in events) == 2
    start = events[0]
    assert isinstance(start, TrainStart)
    assert start.params == two_ranks["ranks"][0]["report"].params
    assert isinstance(events[-1], EpochResult)


class _StopAfter(Callback):
    """A launcher-side callback that stops the job after ``epoch``."""

    def __init__(self, epoch: int) -> None:
        self.epoch = epoch
        self.heard: list[int] = []

    def on_epoch_end(self, result: EpochResult) -> str | None:
        self.heard.append(result.epoch)
        return "enough" if result.epoch >= self.epoch else None


def test_a_launcher_callback_stops_every_rank_after_its_epoch(tmp_path: Path) -> None:
    """A reason to stop from a callback in the launching process reaches the ranks:
    all of them stop after that epoch (none trains on alone until the timeout)."""
    job = replace(_job(tmp_path / "run"), config=TrainConfig(epochs=3, batch_size=32, seed=3))
    stop = _StopAfter(1)
    start = time.perf_counter()
    report = train(job, [stop], processes=2, device="cpu", timeout_s=60)
    assert stop.heard == [1]
    assert [h.epoch for h in report.history] == [1]
    result = json.loads((tmp_path / "run" / "result.json").read_text())
    assert result["epochs"] == 1
    assert time.perf_counter() - start < 60  # not a rank waiting out the timeout


def test_a_dead_rank_ends_the_job_with_a_clear_error() -> None:
    start = time.perf_counter()
    with pytest.raises(DistributedError, match=r"rank 1 exited with code 3") as info:
        launch(_ranks.dying_rank, 2, threads=1, timeout_s=20)
    elapsed = time.perf_counter() - start
    assert "\n" not in str(info.value)
    # Process start-up included; the failure itself is noticed at once.
    assert elapsed < 60, elapsed


@pytest.mark.slow
def test_a_silent_rank_times_out() -> None:
    start = time.perf_counter()
    with pytest.raises(DistributedError, match=r"rank 0:.*all-gather"):
        launch(_ranks.hanging_rank, 2, threads=1, timeout_s=5)
    assert time.perf_counter() - start < 60


@pytest.mark.slow
def test_a_rank_user_error_is_reraised_as_is() -> None:
    with pytest.raises(SpecError, match="rank 1 found a bad spec"):
        launch(_ranks.failing_rank, 2, threads=1, timeout_s=20)


@pytest.mark.slow
def test_cli_processes_and_torchrun(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    args = [
        "train",
        "--lanes",
        "4*mlcn2:1x1",
        "--dataset",
        "synthetic",
        "--train-limit",
        "64",
        "--val-limit",
        "32",
        "--test-limit",
        "32",
        "--lr-policy",
        "exponential",
        "--epochs",
        "1",
        "--json",
    ]
    spawned = run_cli(*args, "--processes", "2", "--out", str(tmp_path / "a"), timeout=300)
    assert spawned.returncode == 0, spawned.stderr
    a = json.loads(spawned.stdout)
    assert a["parallel"]["launcher"] == "spawn"
    assert a["parallel"]["processes"] == 2
    # their checkpoint holds no optimizer state: one process cannot go on from it
    more = [*args[: args.index("--epochs")], "--epochs", "2", "--json"]
    on = run_cli(*more, "--out", str(tmp_path / "a"), "--resume")
    assert on.returncode == 2
    assert "holds the model after epoch 1 but not its optimizer and scheduler state" in on.stderr
    torchrun = Path(sys.executable).with_name("torchrun")
    run = subprocess.run(
        [
            str(torchrun),
            "--nproc-per-node",
            "2",
            "-m",
            "nasmlcn",
            *args,
            "--out",
            str(tmp_path / "b"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ},
    )
    assert run.returncode == 0, run.stderr
    b = json.loads(run.stdout.strip().splitlines()[-1])
    assert b["parallel"]["launcher"] == "torchrun"
    assert abs(a["test_loss"] - b["test_loss"]) <= TOL
