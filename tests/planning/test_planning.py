"""Buckets (Algorithm 4), the --flops limit, and plans."""

from __future__ import annotations

from dataclasses import replace

import pytest

from nasmlcn.costs import AnalyticCostModel, CostContext, HeadCost, get_cost_model
from nasmlcn.errors import DeviceError, PlacementError
from nasmlcn.hardware import parse_devices
from nasmlcn.planning import (
    BASELINE_LANES,
    Bucket,
    baseline_load,
    load_limits,
    make_buckets,
    parse_flops,
    plan_model,
)
from nasmlcn.specs import MLCNSpec, parse_lane, parse_lanes


@pytest.mark.parametrize(
    ("text", "multiple", "flops"),
    [
        ("4x", 4.0, None),
        ("1X", 1.0, None),
        ("0.5x", 0.5, None),
        ("2.4G", None, 2.4e9),
        ("3e9", None, 3e9),
    ],
)
def test_parse_flops(text: str, multiple: float | None, flops: float | None) -> None:
    limit = parse_flops(text)
    assert limit.multiple == multiple
    assert limit.flops == flops


@pytest.mark.parametrize("text", ["0x", "x", "4y", "-2x", "lots"])
def test_bad_flops(text: str) -> None:
    with pytest.raises(DeviceError, match=r"^invalid flops ") as err:
        parse_flops(text)
    assert err.value.for_cli().startswith(f"invalid --flops {text!r}")


def test_bucket_arithmetic() -> None:
    ctx = CostContext()
    model = get_cost_model("thesis")
    device = parse_devices("K80")[0]
    bucket = Bucket(device, memory_limit=6000 * 2**20, load_limit=20.0)
    lane = model.lane_cost(parse_lane("mlcn1:2x4"), ctx)  # 16 w2d, 2856 MiB
    small = model.lane_cost(parse_lane("mlcn1:1x1"), ctx)  # 1 w2d, 2088 MiB
    assert bucket.fits(lane)
    bucket.add(0, lane)
    assert bucket.free_load == 4.0
    assert bucket.free_memory == (6000 - 2856) * 2**20
    assert not bucket.fits(lane)  # load left 4 < 16
    assert bucket.fits(small)
    assert not bucket.is_full([lane, small])
    bucket.add(1, small)
    assert bucket.lanes == [0, 1]
    assert bucket.load == 17.0
    assert bucket.is_full([lane, small])  # 1056 MiB left < 2088 MiB
    with pytest.raises(ValueError, match="does not fit"):
        bucket.add(2, small)


def test_load_limits_follow_the_baseline_and_device_speed() -> None:
    ctx = CostContext()
    model = get_cost_model("thesis")
    load, _ = baseline_load(model, ctx)
    assert load == 4 * 16  # 4 lanes of width 2, depth 4
    limits = load_limits(parse_devices("1xK80,1xV100"), parse_flops("2x"), model, ctx)
    assert limits == [2 * 64, 2 * 64 * 6.0]  # the V100 takes 6x the load in the same time
    analytic = get_cost_model("analytic")
    a_load, a_flops = baseline_load(analytic, ctx)
    absolute = load_limits(parse_devices("K80"), parse_flops(f"{3 * a_flops}"), analytic, ctx)
    assert absolute[0] == pytest.approx(3 * a_load)  # 3 baselines' FLOPs == 3x
    buckets = make_buckets(
        parse_devices("2xK80"), parse_flops("1x"), model, ctx, reserved_memory=[100]
    )
    assert buckets[0].memory_limit == 12 * 2**30 - 100
    assert buckets[1].memory_limit == 12 * 2**30
    assert BASELINE_LANES == "4*mlcn1:2x4"
    assert len(parse_lanes(BASELINE_LANES)) == 4


@pytest.mark.parametrize(
    ("lanes", "devices", "expected"),
    [
        # eq. 5.1 loads 16, 16, 1 on two K80s: 17 against an ideal 33/2
        ("2*mlcn1:2x4,mlcn1:1x1", "2xK80", 17 / 16.5 - 1),
        # four loads of 16 on a K80 and a V100 (6x): all four fit the V100 best
        # (64/6 = 32/3, against 16 for a lane on the K80); ideal 64/7
        ("4*mlcn1:2x4", "1xK80,1xV100", (32 / 3) / (64 / 7) - 1),
        # four equal lanes on two equal devices: perfectly balanced
        ("4*mlcn2:3x2", "2xK80", 0.0),
    ],
)
def test_plan_imbalance_of_known_cases(lanes: str, devices: str, expected: float) -> None:
    plan = plan_model(
        MLCNSpec.from_lanes(lanes), parse_devices(devices, mem="32GB"), cost_model="thesis"
    )
    assert plan.imbalance == pytest.approx(expected, abs=1e-12)


def test_plan_is_consistent_and_recomputable() -> None:
    spec = MLCNSpec.from_lanes("mlcn1:4x2,mlcn2:2x1,mlcn2:2x3,3*mlcn1:2x4,mlcn1:5x5")
    devices = parse_devices("1xK80,1xM40,1xP100,1xV100")
    plan = plan_model(spec, devices, compare=True)
    data = plan.to_dict()
    lane_costs = data["lane_costs"]
    spans = [sum(lane_costs[i] for i in d["lanes"]) / d["speed"] for d in data["devices"]]
    assert data["makespan"] == pytest.approx(max(spans))
    assert sorted(i for d in data["devices"] for i in d["lanes"]) == list(range(spec.num_lanes))
    ideal = sum(lane_costs) / sum(d["speed"] for d in data["devices"])
    assert data["ideal_makespan"] == pytest.approx(ideal, rel=1e-12)
    # makespan / ideal - 1, recomputed from the per-device loads: 0.42 here, since
    # mlcn1:5x5 alone is more than a K80's share; no placement does better.
    assert data["imbalance"] == pytest.approx(max(spans) / ideal - 1, rel=1e-9)
    assert data["imbalance"] == pytest.approx(
        data["comparison"]["optimal"]["makespan"] / ideal - 1, rel=1e-9
    )
    assert data["step_time"] > data["makespan"]
    assert data["devices"][0]["head"]
    assert data["devices"][0]["memory_used_bytes"] > sum(
        data["lane_memory_bytes"][i] for i in data["devices"][0]["lanes"]
    )
    assert data["comparison"]["random"]["makespan"] >= data["makespan"]


def test_plan_names_the_lane_that_does_not_fit() -> None:
    spec = MLCNSpec.from_lanes("mlcn1:1x1,mlcn1:5x5")
    with pytest.raises(PlacementError, match=r"mlcn1:5x5 \(lane 1\) needs .* largest free memory"):
        plan_model(spec, parse_devices("2xK80", mem="100MiB"))


class _ClassifyingHead(AnalyticCostModel):
    """The analytic model with a head that takes 1 ms to classify (the analytic head
    is element-wise work only, 0 FLOPs), so that the test sees it added."""

    def head_cost(self, num_lanes: int, ctx: CostContext) -> HeadCost:
        return replace(super().head_cost(num_lanes, ctx), inference_time=1e-3)


def test_inference_latency_is_the_parallel_lanes_plus_the_head() -> None:
    spec = MLCNSpec.from_lanes("mlcn1:4x2,mlcn2:2x1,mlcn2:2x3,3*mlcn1:2x4,mlcn1:5x5")
    devices = parse_devices("1xK80,1xM40,1xP100,1xV100")
    plan = plan_model(spec, devices, cost_model=_ClassifyingHead())
    data = plan.to_dict()
    forward = data["lane_inference_times"]
    assert forward == [c.inference_time for c in plan.costs.lanes]
    assert min(forward) > 0
    spans = [sum(forward[i] for i in d["lanes"]) / d["speed"] for d in data["devices"]]
    assert [d["inference_time"] for d in data["devices"]] == pytest.approx(spans)
    assert data["inference_makespan"] == pytest.approx(max(spans))
    assert data["inference_latency"] == pytest.approx(max(spans) + 1e-3 / devices[0].speed)
    assert data["inference_batch_size"] == 1
    # the devices run in parallel: far less than all lanes one after the other
    assert data["inference_makespan"] < sum(forward) / max(d.speed for d in devices)
    # the same placement as training, and an image costs less than a training step
    assert data["inference_latency"] < data["makespan"]
