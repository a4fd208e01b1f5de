"""Search spaces: fixed parameters, models that always fit, balanced buckets."""

from __future__ import annotations

import random
import statistics
from pathlib import Path
from typing import Any

import optuna
import pytest
from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

from nasmlcn.costs import CostContext, get_cost_model
from nasmlcn.errors import SearchError
from nasmlcn.hardware import parse_devices
from nasmlcn.planning import parse_flops, plan_model
from nasmlcn.search.spaces import SpaceContext, available_spaces, load_space

DEVICE_MIXES = [
    ("8xK80", "12GB"),
    ("1xK80,1xM40,1xP100,1xV100", "12GB"),
    ("4xcpu", "2GiB"),
    ("2xT4,2xA100", None),
]


def _context(
    devices: str, mem: str | None, flops: str = "1x", cost: str = "analytic"
) -> SpaceContext:
    model = get_cost_model(cost)
    ctx = CostContext()
    head = model.head_cost(256, ctx).memory_bytes
    return SpaceContext(parse_devices(devices, mem=mem), model, ctx, parse_flops(flops), (head,))


def _sample(distributions: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    params: dict[str, Any] = {}
    for name, d in distributions.items():
        if isinstance(d, CategoricalDistribution):
            params[name] = rng.choice(d.choices)
        elif isinstance(d, IntDistribution):
            params[name] = rng.randint(d.low, d.high)
        else:
            assert isinstance(d, FloatDistribution)
            params[name] = rng.uniform(d.low, d.high)
    return params


def test_the_three_spaces_ship() -> None:
    assert {"mlcn-buckets", "mlcn-homogeneous", "mlcn-table"} <= set(available_spaces())


@pytest.mark.parametrize("name", ["mlcn-buckets", "mlcn-homogeneous", "mlcn-table"])
@pytest.mark.parametrize(("devices", "mem"), DEVICE_MIXES)
def test_every_sampled_model_fits_every_device(name: str, devices: str, mem: str | None) -> None:
    space = load_space(name)
    ctx = _context(devices, mem)
    rng = random.Random(hash((name, devices)) % 1000)
    for _ in range(40):
        params = _sample(space.distributions(), rng)
        candidate = space.build(params, ctx)
        if not candidate.feasible:
            assert name == "mlcn-table" and "needs" in candidate.reason
            continue
        plan = plan_model(
            candidate.spec, ctx.devices, cost_model=ctx.cost_model, assignment=candidate.assignment
        )
        for device in plan.per_device:
            assert device.memory_bytes <= device.device.memory_bytes, (params, device)


def test_parameters_are_the_same_whatever_the_devices() -> None:
    for name in ("mlcn-buckets", "mlcn-homogeneous", "mlcn-table"):
        space = load_space(name)
        assert load_space(name).distributions() == space.distributions()
    buckets = load_space("mlcn-buckets").distributions()
    assert list(buckets)[:4] == ["lane0_type", "lane0_width", "lane0_depth", "lane0_share"]
    assert len(buckets) == 12


def test_distributions_are_stable_across_trials_of_a_study() -> None:
    space = load_space("mlcn-buckets")
    study = optuna.create_study(sampler=optuna.samplers.TPESampler(seed=0, n_startup_trials=3))
    seen = []
    for _ in range(8):
        trial = study.ask(space.distributions())
        seen.append(trial.distributions)
        study.tell(trial, random.random())
    assert all(d == seen[0] for d in seen)
    assert all(set(t.params) == set(space.distributions()) for t in study.trials)


@pytest.mark.parametrize(("devices", "flops"), [("8xK80", "1x"), ("8xK80", "4x"), ("4xcpu", "2x")])
def test_bucket_models_are_balanced(devices: str, flops: str) -> None:
    space = load_space("mlcn-buckets")
    ctx = _context(devices, "12GB", flops)
    rng = random.Random(7)
    imbalance = []
    for _ in range(60):
        candidate = space.build(_sample(space.distributions(), rng), ctx)
        plan = plan_model(
            candidate.spec, ctx.devices, cost_model=ctx.cost_model, assignment=candidate.assignment
        )
        imbalance.append(plan.imbalance)
    assert statistics.fmean(imbalance) <= 0.10


def test_heterogeneous_buckets_take_load_by_speed() -> None:
    space = load_space("mlcn-buckets")
    ctx = _context("1xK80,1xM40,1xP100,1xV100", "12GB", "1x")
    rng = random.Random(3)
    imbalance = []
    for _ in range(60):
        candidate = space.build(_sample(space.distributions(), rng), ctx)
        plan = plan_model(
            candidate.spec, ctx.devices, cost_model=ctx.cost_model, assignment=candidate.assignment
        )
        imbalance.append(plan.imbalance)
        loads = [d.load for d in plan.per_device]
        assert loads[3] > loads[0]  # the V100 holds more load than the K80
    assert statistics.fmean(imbalance) <= 0.10


def test_bucket_filling_follows_algorithm_4() -> None:
    """With the thesis cost model a 12 GB K80 holds at most 5 lanes (eq. 6.1 >= 2088 MiB
    each), and at 1x its load never exceeds one baseline model (4 x 2^2 x 4 = 64)."""
    space = load_space("mlcn-buckets")
    ctx = _context("2xK80", "12GB", "1x", cost="thesis")
    rng = random.Random(11)
    for _ in range(30):
        candidate = space.build(_sample(space.distributions(), rng), ctx)
        assert candidate.assignment is not None
        for device in (0, 1):
            lanes = [
                candidate.spec.lanes[i] for i, d in enumerate(candidate.assignment) if d == device
            ]
            assert len(lanes) <= 5
            assert sum(lane.width**2 * lane.depth for lane in lanes) <= 64


def test_repairs_are_recorded() -> None:
    buckets = load_space("mlcn-buckets")
    ctx = _context("2xK80", "12GB", "1x", cost="thesis")
    params = {
        f"lane{k}_{f}": v
        for k in range(3)
        for f, v in (("type", "mlcn1"), ("width", 5), ("depth", 5), ("share", 1.0))
    }
    candidate = buckets.build(params, ctx)
    assert any("shrunk" in r for r in candidate.repairs)
    homogeneous = load_space("mlcn-homogeneous")
    small = _context("2xK80", "1GiB")
    candidate = homogeneous.build({"type": "mlcn1", "width": 5, "depth": 5, "lanes": 32}, small)
    assert candidate.feasible and candidate.spec.num_lanes < 32
    assert candidate.repairs and "lowered" in candidate.repairs[0]
    table = load_space("mlcn-table")
    tiny = _context("1xK80", "200MiB")
    candidate = table.build({"model": "mlcn1-32x2"}, tiny)
    assert not candidate.feasible and "largest free memory" in candidate.reason


def test_user_space_files_and_errors(tmp_path: Path) -> None:
    path = tmp_path / "mine.toml"
    path.write_text(
        'kind = "buckets"\nwidth = [2, 3]\ndepth = [1, 2]\nkinds = 2\n[training]\nlr = [1e-4, 1e-2]\nbatch_size = [50, 100]\n'
    )
    space = load_space(str(path))
    assert space.name == "mine" and set(space.distributions()) >= {
        "lr",
        "batch_size",
        "lane1_share",
    }
    with pytest.raises(SearchError, match="did you mean 'mlcn-buckets'"):
        load_space("mlcn-bucket")
    bad = tmp_path / "bad.toml"
    bad.write_text('kind = "buckets"\nwidth = [0, 3]\n')
    with pytest.raises(SearchError, match="width must be"):
        load_space(str(bad))
    bad.write_text('kind = "bukets"\n')
    with pytest.raises(SearchError, match="did you mean 'buckets'"):
        load_space(str(bad))
