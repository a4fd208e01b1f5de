"""Search spaces: fixed parameters, models that always fit, balanced buckets."""

from __future__ import annotations

import math
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
from nasmlcn.planning import Plan, parse_flops, plan_model
from nasmlcn.search.spaces import SpaceContext, available_spaces, load_space

DEVICE_MIXES = [
    ("8xK80", "12GB"),
    ("1xK80,1xM40,1xP100,1xV100", "12GB"),
    ("4xcpu", "2GiB"),
    ("2xT4,2xA100", None),
]


def _context(
    devices: str,
    mem: str | None,
    flops: str = "1x",
    cost: str = "analytic",
    rewards_cost: bool = True,
) -> SpaceContext:
    model = get_cost_model(cost)
    ctx = CostContext()
    head = model.head_cost(256, ctx).memory_bytes
    return SpaceContext(
        parse_devices(devices, mem=mem), model, ctx, parse_flops(flops), (head,), rewards_cost
    )


def _sample(distributions: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    params: dict[str, Any] = {}
    for name, d in distributions.items():
        if isinstance(d, CategoricalDistribution):
            params[name] = rng.choice(d.choices)
        elif isinstance(d, IntDistribution):
            params[name] = rng.randint(d.low, d.high)
        else:
            assert isinstance(d, FloatDistribution)
            if d.log:
                params[name] = math.exp(rng.uniform(math.log(d.low), math.log(d.high)))
            else:
                params[name] = rng.uniform(d.low, d.high)
    return params


def _prepared(name: str, ctx: SpaceContext) -> Any:
    """The space ``name`` prepared for ``ctx``'s devices, as a search does."""
    space = load_space(name)
    space.prepare(ctx)
    return space


def test_the_three_spaces_ship() -> None:
    assert {"mlcn-buckets", "mlcn-homogeneous", "mlcn-table"} <= set(available_spaces())


@pytest.mark.parametrize("name", ["mlcn-buckets", "mlcn-homogeneous", "mlcn-table"])
@pytest.mark.parametrize(("devices", "mem"), DEVICE_MIXES)
def test_every_sampled_model_fits_every_device(name: str, devices: str, mem: str | None) -> None:
    ctx = _context(devices, mem)
    space = _prepared(name, ctx)
    rng = random.Random(f"{name}|{devices}")
    for _ in range(40):
        params = _sample(space.distributions(), rng)
        candidate = space.build(params, ctx)
        if not candidate.feasible:
            assert name == "mlcn-table"
            assert "needs" in candidate.reason
            continue
        plan = plan_model(
            candidate.spec, ctx.devices, cost_model=ctx.cost_model, assignment=candidate.assignment
        )
        for device in plan.per_device:
            assert device.memory_bytes <= device.device.memory_bytes, (params, device)


@pytest.mark.parametrize("name", sorted(available_spaces()))
def test_builtin_spaces_draw_only_the_thesis_lane_types(name: str) -> None:
    """A registered lane type (mlcn2-72, the -ref types) enters a space only when
    the space file names it in ``lane_types``; the built-in files do not."""
    ctx = _context("2xK80", "12GB")
    space = _prepared(name, ctx)
    rng = random.Random(name)
    types: set[str] = set()
    for _ in range(10):
        candidate = space.build(_sample(space.distributions(), rng), ctx)
        types |= {lane.type for lane in candidate.spec.lanes}
    assert types
    assert types <= {"mlcn1", "mlcn2"}


@pytest.mark.parametrize("name", ["mlcn-buckets", "mlcn-homogeneous", "mlcn-table"])
def test_parameters_are_the_same_whatever_the_devices(name: str) -> None:
    """A study's parameters (names, order, kinds) do not depend on its devices; only
    mlcn-buckets narrows its lane choices, to those that fit the --flops buckets."""
    unprepared = load_space(name).distributions()
    assert load_space(name).distributions() == unprepared
    mixes = [
        ("2xK80", "12GB"),
        ("8xK80", "12GB"),
        ("1xK80,1xM40,1xP100,1xV100", "12GB"),
        ("4xcpu", "2GiB"),
        ("2xT4,2xA100", None),
    ]
    for flops in ("1x", "4x"):
        for devices, mem in mixes:
            distributions = _prepared(name, _context(devices, mem, flops)).distributions()
            assert list(distributions) == list(unprepared), devices
            for key, d in distributions.items():
                reference = unprepared[key]
                assert type(d) is type(reference), (devices, key)
                if isinstance(d, CategoricalDistribution):
                    assert isinstance(reference, CategoricalDistribution)
                    assert set(d.choices) <= set(reference.choices), (devices, key)
                else:
                    assert d == reference, (devices, key)
            if name != "mlcn-buckets":
                assert distributions == unprepared, devices


def test_bucket_lane_choices_follow_the_flops_limit() -> None:
    buckets = load_space("mlcn-buckets").distributions()
    assert list(buckets)[:3] == ["fill", "lane0", "lane0_share"]
    assert len(buckets) == 7
    # prepared for two studies' --flops: the same names, choices that fit each
    small = _prepared("mlcn-buckets", _context("2xK80", "12GB", "0.25x")).distributions()
    large = _prepared("mlcn-buckets", _context("8xK80", "12GB", "4x")).distributions()
    assert list(small) == list(large) == list(buckets)
    assert set(small["lane0"].choices) < set(large["lane0"].choices)


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


def _bucket_plans(ctx: SpaceContext, *, seed: int, n: int = 60) -> list[Plan]:
    """Plans of ``n`` models the bucket space builds from seeded random parameters."""
    space = _prepared("mlcn-buckets", ctx)
    rng = random.Random(seed)
    plans = []
    for _ in range(n):
        candidate = space.build(_sample(space.distributions(), rng), ctx)
        plans.append(
            plan_model(
                candidate.spec,
                ctx.devices,
                cost_model=ctx.cost_model,
                assignment=candidate.assignment,
            )
        )
    return plans


@pytest.mark.parametrize(("devices", "flops"), [("8xK80", "1x"), ("8xK80", "4x"), ("4xcpu", "2x")])
def test_bucket_models_are_balanced(devices: str, flops: str) -> None:
    plans = _bucket_plans(_context(devices, "12GB", flops), seed=7)
    assert max(plan.imbalance for plan in plans) <= 0.05 + 1e-9


def test_heterogeneous_buckets_take_load_by_speed() -> None:
    plans = _bucket_plans(_context("1xK80,1xM40,1xP100,1xV100", "12GB", "1x"), seed=3)
    for plan in plans:
        loads = [d.load for d in plan.per_device]
        assert loads[3] > loads[0]  # the V100 holds more load than the K80
    assert max(plan.imbalance for plan in plans) <= 0.15


def test_bucket_filling_follows_algorithm_4() -> None:
    """With the thesis cost model a 12 GB K80 holds at most 5 lanes (eq. 6.1 >= 2088 MiB
    each), and at 1x its load never exceeds one baseline model (4 x 2^2 x 4 = 64)."""
    ctx = _context("2xK80", "12GB", "1x", cost="thesis")
    space = _prepared("mlcn-buckets", ctx)
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
    ctx = _context("8xK80", "12GB", "1x")
    buckets = _prepared("mlcn-buckets", ctx)
    # a palette lane from another study's devices (too large here) is dropped
    params = {"fill": 1.0, "lane0": "mlcn1:5x5", "lane0_share": 1.0}
    params |= {"lane1": "mlcn2:2x1", "lane1_share": 0.5, "lane2": "mlcn2:3x2", "lane2_share": 0.5}
    candidate = buckets.build(params, ctx)
    assert any("mlcn1:5x5" in r and "dropped" in r for r in candidate.repairs)
    assert "mlcn1:5x5" not in candidate.spec.describe()
    # top-offs: counted, recorded, and exactly the lanes outside the palette
    rng = random.Random(5)
    topped = 0
    for _ in range(200):
        params = _sample(buckets.distributions(), rng)
        candidate = buckets.build(params, ctx)
        palette = {params[f"lane{k}"] for k in range(buckets.kinds)}
        outside = sum(1 for lane in candidate.spec.lanes if str(lane) not in palette)
        assert outside == candidate.repaired_lanes
        if outside:
            topped += 1
            assert any(f"{outside} lane(s) outside the palette" in r for r in candidate.repairs)
    assert topped > 0
    homogeneous = load_space("mlcn-homogeneous")
    small = _context("2xK80", "1GiB")
    candidate = homogeneous.build({"type": "mlcn1", "width": 5, "depth": 5, "lanes": 32}, small)
    assert candidate.feasible
    assert candidate.spec.num_lanes < 32
    assert candidate.repairs
    assert "lowered" in candidate.repairs[0]
    table = load_space("mlcn-table")
    tiny = _context("1xK80", "200MiB")
    candidate = table.build({"model": "mlcn1-32x2"}, tiny)
    assert not candidate.feasible
    assert "largest free memory" in candidate.reason


def test_user_space_files_and_errors(tmp_path: Path) -> None:
    path = tmp_path / "mine.toml"
    path.write_text(
        'kind = "buckets"\nwidth = [2, 3]\ndepth = [1, 2]\nkinds = 2\n[training]\nlr = [1e-4, 1e-2]\nbatch_size = [50, 100]\n'
    )
    space = load_space(str(path))
    assert space.name == "mine"
    assert set(space.distributions()) >= {
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
    # a typo's huge range is refused, not costed lane by lane for minutes
    bad.write_text('kind = "buckets"\nwidth = [1, 100000]\n')
    with pytest.raises(SearchError, match=r"1 <= low <= high <= 1024, got \[1, 100000\]"):
        load_space(str(bad))
    bad.write_text('kind = "buckets"\nwidth = [1, 100]\ndepth = [1, 100]\n')
    with pytest.raises(SearchError, match="span 20,000 lanes; at most 10,000"):
        load_space(str(bad))


def _bucket_models(
    devices: str,
    flops: str,
    n: int,
    seed: int,
    rewards_cost: bool = True,
    space: str = "mlcn-buckets",
) -> list[tuple[Any, Any, Any]]:
    """``n`` (params, candidate, plan) of seeded random parameter vectors."""
    ctx = _context(devices, "12GB", flops, rewards_cost=rewards_cost)
    prepared = _prepared(space, ctx)
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        params = _sample(prepared.distributions(), rng)
        candidate = prepared.build(params, ctx)
        plan = plan_model(
            candidate.spec, ctx.devices, cost_model=ctx.cost_model, assignment=candidate.assignment
        )
        out.append((params, candidate, plan))
    return out


@pytest.mark.parametrize("devices", ["8xK80", "1xK80,1xM40,1xP100,1xV100"])
def test_bucket_models_span_a_trade_off(devices: str) -> None:
    """Small/fast to large/slow on the same devices: predicted step time spans
    >= 5x and memory >= 3x, and it follows ``fill``."""
    models = _bucket_models(devices, "1x", 150, seed=1)
    latency = [plan.makespan for _, _, plan in models]
    memory = [plan.peak_memory_bytes for _, _, plan in models]
    assert max(latency) / min(latency) >= 5
    assert max(memory) / min(memory) >= 3
    fills = [params["fill"] for params, _, _ in models]
    assert statistics.correlation(fills, latency) > 0.7


def test_accuracy_only_studies_fill_every_bucket(tmp_path: Path) -> None:
    """Without a cost objective there is no ``fill`` parameter and every model
    fills its buckets (the thesis's setting); ``accuracy_fill = "searched"`` keeps it."""
    searched = _bucket_models("8xK80", "1x", 60, seed=3)
    full = _bucket_models("8xK80", "1x", 60, seed=3, rewards_cost=False)
    assert all("fill" in params for params, _, _ in searched)
    assert not any("fill" in params for params, _, _ in full)
    top = max(plan.makespan for _, _, plan in searched)
    # small palettes can stop short of the limit (lanes per device are capped)
    full_median = statistics.median(p.makespan for _, _, p in full)
    assert full_median >= 0.9 * top
    assert full_median > 2 * statistics.median(p.makespan for _, _, p in searched)
    space = tmp_path / "s.toml"
    space.write_text('kind = "buckets"\naccuracy_fill = "searched"\n')
    kept = _bucket_models("8xK80", "1x", 5, seed=3, rewards_cost=False, space=str(space))
    assert all("fill" in params for params, _, _ in kept)
    space.write_text('kind = "buckets"\naccuracy_fill = 0\n')
    with pytest.raises(SearchError, match=r"accuracy_fill must be a number in \(0, 1\]"):
        load_space(str(space))


@pytest.mark.parametrize("rewards_cost", [True, False])
def test_bucket_devices_hold_different_lane_groups(rewards_cost: bool) -> None:
    models = _bucket_models("8xK80", "1x", 150, seed=2, rewards_cost=rewards_cost)
    different = 0
    for _, candidate, plan in models:
        names = [str(lane) for lane in candidate.spec.lanes]
        groups = {tuple(sorted(names[i] for i in d.lanes)) for d in plan.per_device}
        different += len(groups) > 1
    assert different / len(models) >= 0.5


@pytest.mark.parametrize(
    ("devices", "flops", "limit"),
    [
        ("8xK80", "1x", 0.05),
        ("8xK80", "4x", 0.05),
        ("2xT4,2xA100", "1x", 0.05),
        ("1xK80,1xM40,1xP100,1xV100", "1x", 0.15),
        ("1xK80,1xM40,1xP100,1xV100", "4x", 0.15),
    ],
)
def test_bucket_models_stay_balanced_and_faithful(devices: str, flops: str, limit: float) -> None:
    """Every model balanced to ``limit``; <= 5 % of all lanes from top-offs; every lane
    within its bucket's memory and load limit; the same parameters, the same model."""
    models = _bucket_models(devices, flops, 120, seed=3)
    ctx = _context(devices, "12GB", flops)
    space = _prepared("mlcn-buckets", ctx)
    lanes = repaired = 0
    for params, candidate, plan in models:
        assert plan.imbalance <= limit + 1e-9, (params, plan.imbalance)
        for device in plan.per_device:
            assert device.memory_bytes <= device.device.memory_bytes
        lanes += candidate.spec.num_lanes
        repaired += candidate.repaired_lanes
        again = space.build(params, ctx)
        assert again.spec == candidate.spec
        assert again.assignment == candidate.assignment
    assert repaired / lanes <= 0.05


def test_accuracy_only_models_stay_balanced() -> None:
    """Filling every bucket can leave one device ahead (a large lane near its limit,
    the others at their lane cap); such models are rebuilt at a lower fill, recorded.
    (Without the rebuild 3 of these 300 vectors ended 7-19 % above the ideal.)"""
    models = _bucket_models("8xK80", "1x", 300, seed=5, rewards_cost=False)
    assert max(plan.imbalance for _, _, plan in models) <= 0.05 + 1e-9
    rebuilt = [c for _, c, _ in models if any("instead of 1" in r for r in c.repairs)]
    assert 0 < len(rebuilt) <= 0.05 * len(models)


def test_palette_choices_fit_every_bucket() -> None:
    from nasmlcn.planning import make_buckets

    ctx = _context("1xK80,1xM40,1xP100,1xV100", "12GB", "0.25x")
    space = _prepared("mlcn-buckets", ctx)
    buckets = make_buckets(
        ctx.devices,
        ctx.flops,
        ctx.cost_model,
        ctx.cost_context,
        reserved_memory=ctx.reserved_memory,
    )
    choices = space.distributions()["lane0"].choices
    assert 0 < len(choices) < len(space.all_lanes)
    for name in choices:
        cost = ctx.cost_model.lane_cost(
            next(lane for lane in space.all_lanes if str(lane) == name), ctx.cost_context
        )
        assert all(b.fits(cost) for b in buckets)
    left_out = [lane for lane in space.all_lanes if str(lane) not in choices]
    for lane in left_out:
        cost = ctx.cost_model.lane_cost(lane, ctx.cost_context)
        assert not all(b.fits(cost) for b in buckets)


def test_a_homogeneous_model_too_big_is_lowered_to_the_most_lanes_that_fit(tmp_path: Path) -> None:
    path = tmp_path / "many.toml"
    path.write_text(
        'kind = "homogeneous"\nlane_types = ["mlcn1"]\nwidth = [1, 1]\ndepth = [1, 1]\nlanes = [1, 4096]\n'
    )
    ctx = _context("2xK80", "200MB")
    prepared = _prepared(str(path), ctx)
    candidate = prepared.build({"type": "mlcn1", "width": 1, "depth": 1, "lanes": 4096}, ctx)
    assert candidate.feasible
    (repair,) = candidate.repairs
    n = len(candidate.spec.lanes)
    assert repair == f"4096 lanes do not fit; lowered to {n}"
    assert 1 < n < 4096
    # one more copy would not fit: it is the most, not just some
    more = prepared.build({"type": "mlcn1", "width": 1, "depth": 1, "lanes": n + 1}, ctx)
    assert len(more.spec.lanes) == n
    path.write_text('kind = "homogeneous"\nlanes = [1, 100000]\n')
    with pytest.raises(
        SearchError, match=r"lanes must be \[low, high\] with 1 <= low <= high <= 4096"
    ):
        load_space(str(path))
