"""The ``thesis`` space (mlcn-thesis): Algorithms 4-5 of the thesis, checked as
properties over many seeds and device mixes against limits recomputed here."""

from __future__ import annotations

import itertools
import json
import random
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from optuna.distributions import IntDistribution

from nasmlcn.costs import CostContext, get_cost_model
from nasmlcn.errors import SearchError
from nasmlcn.hardware import parse_devices
from nasmlcn.planning import load_limits, parse_flops, plan_model
from nasmlcn.planning._buckets import LOAD_TOLERANCE
from nasmlcn.search._run.repeats import TrialTraining
from nasmlcn.search.spaces import SpaceContext, available_spaces, load_space
from nasmlcn.search.spaces._thesis import ThesisSpace
from nasmlcn.specs import LaneSpec
from tests.conftest import run_cli

MIXES = [
    ("8xK80", "12GB"),
    ("1xK80,1xM40,1xP100,1xV100", None),
    ("4xcpu", "2GiB"),
]
FLOPS = ["0.25x", "1x", "4x"]
SEEDS = 40


def _context(devices: str, mem: str | None, flops: str) -> SpaceContext:
    model = get_cost_model("analytic")
    ctx = CostContext()
    head = model.head_cost(256, ctx).memory_bytes
    return SpaceContext(parse_devices(devices, mem=mem), model, ctx, parse_flops(flops), (head,))


def _grid(space_file: Mapping[str, Any]) -> list[LaneSpec]:
    """Every lane of the file's ranges, from the file itself."""
    (w0, w1), (d0, d1) = space_file["width"], space_file["depth"]
    return [
        LaneSpec(t, w, d)
        for t in space_file["lane_types"]
        for w in range(w0, w1 + 1)
        for d in range(d0, d1 + 1)
    ]


def _seeds(count: int, salt: int) -> list[int]:
    rng = random.Random(salt)
    return [rng.randint(0, 2**31 - 1) for _ in range(count)]


def test_the_thesis_space_ships_with_one_seed_parameter() -> None:
    assert "mlcn-thesis" in available_spaces()
    space = load_space("mlcn-thesis")
    assert space.kind == "thesis"
    assert space.distributions() == {"seed": IntDistribution(0, 2**31 - 1)}
    assert load_space("mlcn-thesis").distributions() == space.distributions()


@pytest.mark.parametrize("flops", FLOPS)
@pytest.mark.parametrize(("devices", "mem"), MIXES)
def test_buckets_are_never_exceeded_and_end_full(devices: str, mem: str | None, flops: str) -> None:
    space = load_space("mlcn-thesis")
    assert isinstance(space, ThesisSpace)
    grid = _grid(space.data)
    ctx = _context(devices, mem, flops)
    model, c = ctx.cost_model, ctx.cost_context
    grid_costs = [model.lane_cost(lane, c) for lane in grid]
    limits = load_limits(ctx.devices, ctx.flops, model, c)
    slowest = min(d.speed for d in ctx.devices)
    for seed in _seeds(SEEDS, 1):
        candidate = space.build({"seed": seed}, ctx)
        assert candidate.feasible
        assert candidate.assignment is not None
        assert len(candidate.assignment) == len(candidate.spec.lanes)
        assert set(candidate.spec.lanes) <= set(grid)
        for j, device in enumerate(ctx.devices):
            mine = [
                model.lane_cost(lane, c)
                for lane, a in zip(candidate.spec.lanes, candidate.assignment, strict=True)
                if a == j
            ]
            load = sum(x.time for x in mine)
            memory_limit = device.memory_bytes - (ctx.reserved_memory[j] if j == 0 else 0)
            memory = sum(x.memory_bytes for x in mine)
            assert load <= limits[j] * (1 + LOAD_TOLERANCE), (seed, device.name, load)
            assert memory <= memory_limit, (seed, device.name, memory)
            cap = max(1, round(space.max_lanes_per_device * device.speed / slowest))
            assert len(mine) <= cap
            if len(mine) < cap:  # full: no lane of the space fits what is left
                fits = [
                    x.lane
                    for x in grid_costs
                    if x.memory_bytes <= memory_limit - memory
                    and x.time <= limits[j] - load + LOAD_TOLERANCE * limits[j]
                ]
                assert not fits, (seed, device.name, fits[:3])
        plan = plan_model(
            candidate.spec, ctx.devices, cost_model=model, assignment=candidate.assignment
        )
        for d in plan.per_device:  # with the model's real head on device 0
            assert d.memory_bytes <= d.device.memory_bytes


def test_the_model_is_a_function_of_the_seed_alone() -> None:
    space = load_space("mlcn-thesis")
    ctx = _context("1xK80,1xM40,1xP100,1xV100", None, "1x")
    for seed in _seeds(10, 2):
        random.seed(seed + 1)  # global random state plays no part
        first = space.build({"seed": seed}, ctx)
        random.seed(seed + 2)
        random.random()
        again = load_space("mlcn-thesis").build({"seed": seed}, ctx)
        assert first == again


@pytest.mark.parametrize(("devices", "mem"), MIXES)
def test_different_seeds_make_different_heterogeneous_models(devices: str, mem: str | None) -> None:
    space = load_space("mlcn-thesis")
    ctx = _context(devices, mem, "1x")
    models = [space.build({"seed": seed}, ctx) for seed in range(100)]
    assert len({(m.spec.lanes, m.assignment) for m in models}) >= 95
    heterogeneous = sum(len(set(m.spec.lanes)) > 1 for m in models)
    assert heterogeneous >= 95


def test_lanes_are_drawn_uniformly_from_the_file_ranges() -> None:
    """(The draw, before its lanes are put in canonical order.) At 8x every lane fits an empty K80 bucket, so the first lane of a model is
    uniform over the grid: each type ~1/2, each width and depth ~1/5."""
    space = load_space("mlcn-thesis")
    ctx = _context("2xK80", "12GB", "8x")
    first = [space.build_candidate({"seed": seed}, ctx).spec.lanes[0] for seed in range(1000)]
    types = Counter(lane.type for lane in first)
    widths = Counter(lane.width for lane in first)
    depths = Counter(lane.depth for lane in first)
    assert all(0.44 <= types[t] / 1000 <= 0.56 for t in ("mlcn1", "mlcn2")), types
    assert all(0.15 <= widths[w] / 1000 <= 0.25 for w in range(1, 6)), widths
    assert all(0.15 <= depths[d] / 1000 <= 0.25 for d in range(1, 6)), depths


def test_a_small_bucket_draws_only_among_the_lanes_that_fit_it() -> None:
    """At 0.25x some lanes never fit an empty K80 bucket; every one that does shows
    up as a first lane, and no other."""
    space = load_space("mlcn-thesis")
    ctx = _context("1xK80", "12GB", "0.25x")
    (limit,) = load_limits(ctx.devices, ctx.flops, ctx.cost_model, ctx.cost_context)
    fitting = {
        lane
        for lane in _grid(space.data)
        if ctx.cost_model.lane_cost(lane, ctx.cost_context).time <= limit * (1 + LOAD_TOLERANCE)
    }
    assert 5 < len(fitting) < len(_grid(space.data))
    first = {space.build_candidate({"seed": seed}, ctx).spec.lanes[0] for seed in range(1000)}
    assert first == fitting


def test_devices_are_picked_at_random_not_in_order() -> None:
    space = load_space("mlcn-thesis")
    ctx = _context("8xK80", "12GB", "1x")
    orders = [space.build_candidate({"seed": seed}, ctx).assignment for seed in range(20)]
    assert all(order is not None and list(order) != sorted(order) for order in orders)
    assert {order[0] for order in orders if order} != {0}


def _write_space(tmp_path: Path, **settings: object) -> Path:
    data: dict[str, Any] = {
        "kind": "thesis",
        "lane_types": ["mlcn1", "mlcn2"],
        "width": [1, 5],
        "depth": [1, 5],
    }
    data.update(settings)
    lines = [f"{k} = {json.dumps(v)}" for k, v in data.items()]
    path = tmp_path / "my-thesis.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_the_lane_cap_scales_with_device_speed(tmp_path: Path) -> None:
    space = load_space(str(_write_space(tmp_path, max_lanes_per_device=2)))
    ctx = _context("1xK80,1xM40,1xP100,1xV100", None, "4x")
    counts = Counter(
        itertools.chain.from_iterable(
            space.build({"seed": seed}, ctx).assignment or () for seed in range(20)
        )
    )
    # Speeds 1, 3.1, 4.2, 6: caps 2, 6, 8, 12 lanes, each reached in every trial at 4x.
    assert [counts[j] for j in range(4)] == [40, 120, 160, 240]


def test_a_space_that_fits_no_device_is_one_line_error(tmp_path: Path) -> None:
    space = load_space("mlcn-thesis")
    with pytest.raises(SearchError, match="raise mem or flops") as err:
        space.build({"seed": 0}, _context("2xK80", "12GB", "0.001x"))
    assert "\n" not in str(err.value)
    # the library names the configuration fields, the CLI the options that set them
    assert "raise --mem or --flops" in err.value.for_cli()
    with pytest.raises(SearchError, match="fits any device"):  # refused before any trial
        space.prepare(_context("2xK80", "12GB", "0.001x"))
    with pytest.raises(SearchError, match="max_lanes_per_device"):
        load_space(str(_write_space(tmp_path, max_lanes_per_device=0)))


def test_training_dimensions_work_as_in_every_space(tmp_path: Path) -> None:
    path = _write_space(tmp_path)
    path.write_text(path.read_text() + "[training]\nlr = [1e-4, 3e-3]\nbatch_size = [50, 100]\n")
    space = load_space(str(path))
    assert list(space.distributions()) == ["seed", "lr", "batch_size"]
    params = {"seed": 7, "lr": 1e-3, "batch_size": 50}
    space.build(params, _context("2xK80", "12GB", "1x"))
    training = TrialTraining.of(params, batch_size=100)
    assert (training.lr, training.batch_size, training.batch_policy) == (1e-3, 50, "fixed")


def test_random_search_on_the_thesis_space_end_to_end(tmp_path: Path) -> None:
    result = run_cli(
        "search",
        "--space",
        "mlcn-thesis",
        "--sampler",
        "random",
        "--evaluator",
        "proxy",
        "--trials",
        "5",
        "--devices",
        "2xK80",
        "--storage",
        f"sqlite:///{tmp_path / 's.db'}",
        "--json",
    )
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["n_trials"] == 5
    assert data["best"]
