"""Refusing a model too large for this machine before it is built."""

from __future__ import annotations

import pytest

import nasmlcn.hardware
from nasmlcn.costs import get_cost_model
from nasmlcn.errors import TrainingError
from nasmlcn.hardware import available_memory, format_bytes
from nasmlcn.specs import MLCNSpec
from nasmlcn.training import check_training_memory

GiB = 2**30


@pytest.fixture
def one_gib_free(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(nasmlcn.hardware, "available_memory", lambda device: GiB)


def _need(lanes: str, batch: int = 100) -> int:
    return get_cost_model("analytic").model_cost(MLCNSpec.from_lanes(lanes), batch).memory_bytes


def test_a_model_that_fits_passes(one_gib_free: None) -> None:
    assert _need("2*mlcn1:4x1") < GiB
    check_training_memory(MLCNSpec.from_lanes("2*mlcn1:4x1"), 100, "cpu")


def test_the_lane_too_large_is_named_with_both_sizes(one_gib_free: None) -> None:
    lane = get_cost_model("analytic").model_cost(MLCNSpec.from_lanes("mlcn1:60x1"), 100).lanes[0]
    assert lane.memory_bytes > GiB
    with pytest.raises(TrainingError) as info:
        check_training_memory(MLCNSpec.from_lanes("mlcn1:1x1,mlcn1:60x1"), 100, "cpu")
    assert str(info.value) == (
        f"lane 2 (mlcn1:60x1) needs about {format_bytes(lane.memory_bytes)} to train at "
        f"batch 100; this machine (cpu) has 1 GiB available; use fewer or narrower lanes "
        "or a smaller --batch-size"
    )


def test_many_small_lanes_are_refused_together(one_gib_free: None) -> None:
    lanes = "30*mlcn1:4x1"
    assert _need(lanes) > GiB
    with pytest.raises(TrainingError, match=r"^the 30 lanes on cpu need about .* \(the largest"):
        check_training_memory(MLCNSpec.from_lanes(lanes), 100, "cpu")
    # at a smaller batch the same lanes fit
    assert _need(lanes, 10) < GiB
    check_training_memory(MLCNSpec.from_lanes(lanes), 10, "cpu")


def test_lane_parallel_training_counts_each_device(one_gib_free: None) -> None:
    spec = MLCNSpec.from_lanes("30*mlcn1:4x1")
    half = ("cuda:0",) * 15 + ("cuda:1",) * 15
    assert _need("15*mlcn1:4x1") < GiB  # each device holds half the lanes
    check_training_memory(spec, 100, "cuda:0", lane_devices=half)
    with pytest.raises(TrainingError, match="the 30 lanes on cuda:0"):
        check_training_memory(spec, 100, "cuda:0", lane_devices=("cuda:0",) * 30)


def test_cpu_memory_is_what_the_kernel_reports_available() -> None:
    with open("/proc/meminfo", encoding="ascii") as f:
        fields = {line.split(":")[0]: int(line.split()[1]) * 1024 for line in f}
    free = available_memory("cpu")
    assert free is not None
    # MemAvailable moves a little between two reads; a cgroup may lower it
    assert 0 < free <= fields["MemAvailable"] * 1.1 + 64 * 2**20
    assert free <= fields["MemTotal"]
